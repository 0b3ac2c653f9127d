package proxy

import (
	"errors"
	"strconv"
	"testing"

	"github.com/tairkv/tair/resp"
)

// testPipeline is a pipeline whose done records the requests in the
// order they completed.
func testPipeline() (*pipeline, *[]*request) {
	var got []*request
	p := &pipeline{}
	p.done = func(r *request) { got = append(got, r) }
	return p, &got
}

// queue adds a request for GET key to p, encoded into out as a
// transport does.
func queue(p *pipeline, key string) *request {
	r := &request{args: [][]byte{[]byte("GET"), []byte(key)}}
	p.out = resp.AppendCommand(p.out, r.args...)
	p.add(r)
	return r
}

func TestPipelineRepliesInOrder(t *testing.T) {
	p, got := testPipeline()
	var rs []*request
	var replies []byte
	for i := 0; i < 5; i++ {
		rs = append(rs, queue(p, "k"+strconv.Itoa(i)))
		replies = resp.AppendBulkString(replies, "value-"+strconv.Itoa(i))
	}
	if p.queued() != 5 || p.inFlight() != 0 {
		t.Fatalf("queued %d in flight %d, want 5 0", p.queued(), p.inFlight())
	}
	b := p.take()
	p.handed()
	if len(b) == 0 || len(p.out) != 0 || p.queued() != 0 || p.inFlight() != 5 {
		t.Fatalf("after take: %d bytes, out %d, queued %d, in flight %d", len(b), len(p.out), p.queued(), p.inFlight())
	}
	// The replies arrive a byte at a time: a partial reply completes
	// nothing and sets need.
	var buf []byte
	for i := 0; i < len(replies); i++ {
		buf = append(buf, replies[i])
		if len(buf) < p.need {
			continue
		}
		n, err := p.scan(buf)
		if err != nil {
			t.Fatal(err)
		}
		buf = buf[n:]
	}
	if len(buf) != 0 || len(*got) != 5 {
		t.Fatalf("%d bytes left, %d completed", len(buf), len(*got))
	}
	for i, r := range *got {
		if r != rs[i] {
			t.Fatalf("completion %d is request %d's", i, indexOf(rs, r))
		}
		if want := "$7\r\nvalue-" + strconv.Itoa(i) + "\r\n"; string(r.reply) != want || r.err != nil {
			t.Fatalf("request %d: reply %q err %v, want %q", i, r.reply, r.err, want)
		}
	}
	if p.inFlight() != 0 || len(p.flight) != 0 || p.head != 0 {
		t.Fatalf("not empty: in flight %d, flight %d, head %d", p.inFlight(), len(p.flight), p.head)
	}
}

func TestPipelineScanNeed(t *testing.T) {
	p, got := testPipeline()
	queue(p, "a")
	queue(p, "b")
	p.take()
	p.handed()
	full := resp.AppendBulkString(resp.AppendStatus(nil, "OK"), "0123456789")
	n, err := p.scan(full[:len(full)-3])
	if err != nil || n != 5 || len(*got) != 1 {
		t.Fatalf("scan: n %d err %v completed %d, want 5 <nil> 1", n, err, len(*got))
	}
	// The second reply's length is known: need is its whole size.
	if want := len(full) - 5; p.need != want {
		t.Fatalf("need %d, want %d", p.need, want)
	}
	n, err = p.scan(full[5:])
	if err != nil || n != len(full)-5 || len(*got) != 2 || p.need != 0 {
		t.Fatalf("scan rest: n %d err %v completed %d need %d", n, err, len(*got), p.need)
	}
}

func TestPipelineFailWritten(t *testing.T) {
	p, got := testPipeline()
	a := queue(p, "a")
	b := queue(p, "b")
	c := queue(p, "c")
	p.recycle(p.take())
	p.handed() // a, b and c handed to the socket
	if n, err := p.scan(resp.AppendStatus(nil, "OK")); err != nil || n != 5 {
		t.Fatalf("scan: %d %v", n, err)
	}
	d := queue(p, "d") // still in out
	e := queue(p, "e")
	b.reply = append(b.reply, "stale"...)
	boom := errors.New("boom")
	p.fail(boom, true)
	if len(*got) != 5 || (*got)[0] != a {
		t.Fatalf("completed %d, want 5 with a first", len(*got))
	}
	for _, x := range []struct {
		name    string
		r       *request
		written bool
	}{{"b", b, true}, {"c", c, true}, {"d", d, false}, {"e", e, false}} {
		if x.r.err != boom || x.r.written != x.written || len(x.r.reply) != 0 {
			t.Fatalf("%s: err %v written %v reply %q, want boom %v empty", x.name, x.r.err, x.r.written, x.r.reply, x.written)
		}
	}
	if (*got)[1] != b || (*got)[4] != e {
		t.Fatal("failed out of order")
	}
	if p.out != nil || p.flight != nil || p.head != 0 || p.sent != 0 || p.need != 0 {
		t.Fatal("pipeline not empty after fail")
	}
}

func TestPipelineFailUnwritten(t *testing.T) {
	// A dial that fails: nothing reached a socket, whatever was taken.
	p, got := testPipeline()
	a := queue(p, "a")
	p.take()
	p.handed()
	b := queue(p, "b")
	p.fail(errors.New("dial"), false)
	if len(*got) != 2 || a.written || b.written {
		t.Fatalf("completed %d, written %v %v; want 2 false false", len(*got), a.written, b.written)
	}
}

func TestPipelineBadReplies(t *testing.T) {
	p, _ := testPipeline()
	if _, err := p.scan(resp.AppendStatus(nil, "OK")); !errors.Is(err, errUnasked) {
		t.Fatalf("reply without a request: %v", err)
	}
	queue(p, "a")
	p.take()
	p.handed()
	n, err := p.scan([]byte("+OK\r\nx\r\n"))
	if err == nil || n != 5 {
		t.Fatalf("bad reply after a good one: n %d err %v", n, err)
	}
}

func TestPipelineRecycle(t *testing.T) {
	p, _ := testPipeline()
	queue(p, "a")
	b := p.take()
	p.recycle(b) // written: kept for the out after the next take
	queue(p, "b")
	p.recycle(p.take())
	queue(p, "c")
	if &p.out[0] != &b[0] {
		t.Fatal("the written buffer was not reused")
	}
	big := make([]byte, maxKeep+1)
	p.take()
	p.recycle(big)
	if p.spare != nil {
		t.Fatal("a large buffer was kept")
	}
}

func indexOf(rs []*request, r *request) int {
	for i, x := range rs {
		if x == r {
			return i
		}
	}
	return -1
}

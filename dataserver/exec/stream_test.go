package exec

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/tairkv/tair/engines"
	"github.com/tairkv/tair/engines/ds"
	"github.com/tairkv/tair/engines/ldb"
	"github.com/tairkv/tair/engines/rdb"
)

// streamEncoding is the stored stream at key as MarshalBinary writes it
// (nil when the key holds none).
func streamEncoding(t *testing.T, eng engines.Engine, x *Executor, key string) []byte {
	t.Helper()
	var out []byte
	c := &Ctx{X: x, Eng: eng, Args: [][]byte{[]byte(key)}}
	_, err := eng.Update(c.Key(0), func(cur engines.Entry, exists bool) (engines.Entry, engines.Action, error) {
		if exists && cur.Object != nil {
			b, err := cur.Object.MarshalBinary()
			out = b
			return cur, engines.Keep, err
		}
		return cur, engines.Keep, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// recordVersion is the record's Tair version (0 when missing): a slave
// replaying the master's propagation must end at the master's.
func recordVersion(t *testing.T, eng engines.Engine, x *Executor, key string) int64 {
	t.Helper()
	var v int64
	c := &Ctx{X: x, Eng: eng, Args: [][]byte{[]byte(key)}}
	if _, err := eng.Update(c.Key(0), func(cur engines.Entry, exists bool) (engines.Entry, engines.Action, error) {
		if exists {
			v = cur.Version
		}
		return cur, engines.Keep, nil
	}); err != nil {
		t.Fatal(err)
	}
	return v
}

// streamSansSeen is a stream's encoding with its consumers' seen times
// zeroed: a read that delivers nothing (a consumer's empty history) marks
// its consumer seen on the master alone, as in Redis (nothing is
// propagated for it), and a slave marks the consumers it applies claims
// for seen at its own clock.
func streamSansSeen(t *testing.T, b []byte) []byte {
	t.Helper()
	if b == nil {
		return nil
	}
	st, err := ds.DecodeStream(b)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range st.Groups() {
		for _, c := range g.Consumers() {
			c.SeenTime = 0
		}
	}
	out, _ := st.MarshalBinary()
	return out
}

// TestStreamSlaveGetsTheSameStream runs stream writes on a master (ids
// from *, trims with ~ and LIMIT, group reads, claims, NOACK, history
// reads, deletions under pending entries) and replays what it propagates
// on a slave (replica=true): every stream must end encoded the same, and
// no propagated command may fail or be nondeterministic (* or ~).
func TestStreamSlaveGetsTheSameStream(t *testing.T) {
	for _, name := range []string{rdb.Name, ldb.Name} {
		t.Run(name, func(t *testing.T) {
			clk := newTestClock()
			meng, seng := openEngine(t, name, clk), openEngine(t, name, clk)
			m, s := New(meng, Options{Now: clk.Now, Buckets: 1}), New(seng, Options{Now: clk.Now, Buckets: 1})
			r := rand.New(rand.NewPCG(7, 7))
			keys := []string{"a", "b"}
			script := []string{"XGROUP CREATE a g $ MKSTREAM", "XGROUP CREATE a h 0", "XGROUP CREATECONSUMER a g idle"}
			for range 600 {
				k := keys[r.IntN(2)]
				c := []string{"c1", "c2", "c3"}[r.IntN(3)]
				switch r.IntN(14) {
				case 0, 1, 2:
					script = append(script, fmt.Sprintf("XADD %s * f %d", k, r.IntN(100)))
				case 3:
					script = append(script, fmt.Sprintf("XADD %s MAXLEN ~ %d * f %d", k, r.IntN(150), r.IntN(100)))
				case 4:
					script = append(script, fmt.Sprintf("XADD %s MINID ~ %d-0 LIMIT %d * %s x", k, testEpoch.UnixMilli()+int64(r.IntN(3000)), r.IntN(150), strings.Repeat("v", r.IntN(900))))
				case 5:
					script = append(script, fmt.Sprintf("XTRIM %s MAXLEN ~ %d", k, r.IntN(200)))
				case 6:
					script = append(script, fmt.Sprintf("XREADGROUP GROUP g %s COUNT %d STREAMS a >", c, r.IntN(5)))
				case 7:
					script = append(script, fmt.Sprintf("XREADGROUP GROUP h %s NOACK COUNT %d STREAMS a >", c, 1+r.IntN(3)))
				case 8:
					script = append(script, fmt.Sprintf("XREADGROUP GROUP g %s COUNT 3 STREAMS a 0", c))
				case 9:
					script = append(script, fmt.Sprintf("XAUTOCLAIM a g %s %d 0 COUNT %d", c, r.IntN(20), 1+r.IntN(4)))
				case 10:
					script = append(script, fmt.Sprintf("XCLAIM a g %s %d %d-%d %d-0 FORCE", c, r.IntN(10), testEpoch.UnixMilli()+int64(r.IntN(2000)), r.IntN(2), testEpoch.UnixMilli()+int64(r.IntN(2000))))
				case 11:
					script = append(script, fmt.Sprintf("XDEL %s %d-0 %d-1", k, testEpoch.UnixMilli()+int64(r.IntN(2000)), testEpoch.UnixMilli()+int64(r.IntN(2000))))
				case 12:
					script = append(script, fmt.Sprintf("XACK a g %d-0", testEpoch.UnixMilli()+int64(r.IntN(2000))))
				default:
					script = append(script, "XGROUP SETID a h 0", fmt.Sprintf("XGROUP DELCONSUMER a g %s", c))
				}
			}
			for _, l := range script {
				clk.Advance(time.Duration(r.IntN(4)) * time.Millisecond)
				out, prop := m.Exec(0, 2, false, toArgs(splitLine(l)), nil)
				if len(out) > 0 && out[0] == '-' {
					t.Fatalf("%s: %s", l, out)
				}
				for _, p := range prop {
					for _, a := range p {
						if string(a) == "*" || string(a) == "~" {
							t.Fatalf("%s propagated a nondeterministic %q", l, bytes.Join(p, []byte(" ")))
						}
					}
				}
				if pc, got := replay(s, 0, prop); pc != nil {
					t.Fatalf("%s: the slave refused %q: %s", l, pc, got)
				}
				for _, k := range keys {
					if mv, sv := recordVersion(t, meng, m, k), recordVersion(t, seng, s, k); mv != sv {
						t.Fatalf("after %s: %s is at version %d on the master, %d on the slave", l, k, mv, sv)
					}
					if me, se := streamSansSeen(t, streamEncoding(t, meng, m, k)), streamSansSeen(t, streamEncoding(t, seng, s, k)); !bytes.Equal(me, se) {
						mi, _ := m.Exec(0, 2, false, toArgs([]string{"XINFO", "STREAM", k, "FULL"}), nil)
						si, _ := s.Exec(0, 2, false, toArgs([]string{"XINFO", "STREAM", k, "FULL"}), nil)
						t.Fatalf("after %s (propagated %q): %s differs on the slave:\n%q\n%q", l, prop, k, mi, si)
					}
				}
			}
			// the master's stream holds what the script did
			if n, _ := m.Exec(0, 2, false, toArgs(splitLine("XINFO GROUPS a")), nil); !bytes.Contains(n, []byte("pending")) {
				t.Fatalf("XINFO GROUPS a: %q", n)
			}
		})
	}
}

// TestStreamPropagation pins what writes propagate.
func TestStreamPropagation(t *testing.T) {
	h := newHarness(t)
	ms := testEpoch.UnixMilli()
	for _, c := range []struct{ line, reply, prop string }{
		{"XADD s * f v", fmt.Sprintf("$15\r\n%d-0\r\n", ms), fmt.Sprintf("XADD s %d-0 f v", ms)},
		{"XADD s * f v", fmt.Sprintf("$15\r\n%d-1\r\n", ms), fmt.Sprintf("XADD s %d-1 f v", ms)},
		{"XADD s 5-* f v", "-ERR The ID specified in XADD is equal or smaller than the target stream top item\r\n", ""},
		{fmt.Sprintf("XADD s %d-* f v", ms+5), fmt.Sprintf("$15\r\n%d-0\r\n", ms+5), fmt.Sprintf("XADD s %d-0 f v", ms+5)},
		{fmt.Sprintf("XADD s MAXLEN ~ 1 LIMIT 5 %d-1 f v", ms+5), fmt.Sprintf("$15\r\n%d-1\r\n", ms+5), fmt.Sprintf("XADD s MAXLEN = 4 LIMIT 5 %d-1 f v", ms+5)},
		{"XTRIM s MAXLEN ~ 1", ":0\r\n", ""},
		{"XTRIM s MAXLEN 2", ":2\r\n", "XTRIM s MAXLEN 2"},
		{"XADD n NOMKSTREAM * f v", "$-1\r\n", ""},
		{"XGROUP CREATE s g 0", "+OK\r\n", "XGROUP CREATE s g 0"},
		{"XREADGROUP GROUP g c COUNT 1 STREAMS s >", "", fmt.Sprintf("XCLAIM s g c 0 %d-0 TIME %d RETRYCOUNT 1 FORCE JUSTID LASTID %d-0 ENTRIESREAD 3", ms+5, ms, ms+5)},
		{"XREADGROUP GROUP g c STREAMS s >", "", fmt.Sprintf("XCLAIM s g c 0 %d-1 TIME %d RETRYCOUNT 1 FORCE JUSTID LASTID %d-1 ENTRIESREAD 4", ms+5, ms, ms+5)},
		{"XREADGROUP GROUP g c STREAMS s 0", "", fmt.Sprintf("XCLAIM s g c 0 %d-0 %d-1 TIME %d LASTID %d-1", ms+5, ms+5, ms, ms+5)},
		{"XREADGROUP GROUP g d STREAMS s 0", "", "XGROUP CREATECONSUMER s g d"},
		{"XREADGROUP GROUP g d STREAMS s 0", "", "XGROUP CREATECONSUMER s g d"},
		{"XREADGROUP GROUP g e NOACK STREAMS s 0-0", "", "XGROUP CREATECONSUMER s g e"},
		{fmt.Sprintf("XADD s %d-0 f v", ms+6), "", fmt.Sprintf("XADD s %d-0 f v", ms+6)},
		{"XREADGROUP GROUP g f NOACK STREAMS s >", "", fmt.Sprintf("XGROUP CREATECONSUMER s g f|XGROUP SETID s g %d-0 ENTRIESREAD 5", ms+6)},
		{"XREADGROUP GROUP g f NOACK STREAMS s >", "*-1\r\n", ""},
		{fmt.Sprintf("XCLAIM s g d 0 %d-0 1-1 %d-0 JUSTID RETRYCOUNT 7", ms+5, ms+5), "", fmt.Sprintf("XCLAIM s g d 0 %d-0 %d-0 TIME %d RETRYCOUNT 7 JUSTID LASTID %d-0", ms+5, ms+5, ms, ms+6)},
		{"XCLAIM s g d 0 1-1 LASTID 99999999999999-0", "", "XGROUP SETID s g 99999999999999-0 ENTRIESREAD 5"},
		{"XAUTOCLAIM s g e 0 0 COUNT 1", "", fmt.Sprintf("XCLAIM s g e 0 %d-0 TIME %d LASTID 99999999999999-0", ms+5, ms)},
		{"XCLAIM s g d 0 1-1 ENTRIESREAD 5", "-ERR Unrecognized XCLAIM option 'ENTRIESREAD'\r\n", ""},
		{"XREADGROUP GROUP g c STREAMS s >", "*-1\r\n", ""},
		{"XREADGROUP GROUP g c BLOCK 100 STREAMS s >", "*-1\r\n", ""},
		{"XREAD BLOCK 100 STREAMS s $", "*-1\r\n", ""},
		{"XACK s g 1-1", ":0\r\n", ""},
		{fmt.Sprintf("XACK s g %d-0", ms+5), ":1\r\n", fmt.Sprintf("XACK s g %d-0", ms+5)},
		{"XGROUP DESTROY s nog", ":0\r\n", ""},
		{"XDEL s 1-1", ":0\r\n", ""},
	} {
		got := h.line(c.line)
		if c.reply != "" && got != c.reply {
			t.Errorf("%s: %q, want %q", c.line, got, c.reply)
		}
		if p := strings.Join(h.prop(), "|"); p != c.prop {
			t.Errorf("%s propagated %q, want %q", c.line, p, c.prop)
		}
	}
}

// TestStreamKeysAndDump: streams move with RENAME/COPY, expire, DUMP and
// RESTORE.
func TestStreamKeysAndDump(t *testing.T) {
	h := newHarness(t)
	h.x = New(h.eng, Options{Now: h.clock.Now, Buckets: 1}) // one bucket: no CROSSSLOT
	for _, c := range [][2]string{
		{"XADD s 1-1 f v", "$3\r\n1-1\r\n"},
		{"XGROUP CREATE s g 0", "+OK\r\n"},
		{"TYPE s", "+stream\r\n"},
		{"OBJECT ENCODING s", "$6\r\nstream\r\n"},
		{"COPY s s2", ":1\r\n"},
		{"XINFO GROUPS s2", "*1\r\n*12\r\n$4\r\nname\r\n$1\r\ng\r\n$9\r\nconsumers\r\n:0\r\n$7\r\npending\r\n:0\r\n$17\r\nlast-delivered-id\r\n$3\r\n0-0\r\n$12\r\nentries-read\r\n$-1\r\n$3\r\nlag\r\n:1\r\n"},
		{"XADD s2 2-1 f v", "$3\r\n2-1\r\n"},
		{"XLEN s", ":1\r\n"},
		{"RENAME s2 s3", "+OK\r\n"},
		{"XLEN s3", ":2\r\n"},
		{"EXPIRE s3 10", ":1\r\n"},
		{"TTL s3", ":10\r\n"},
		{"XGROUP CREATE e g $ MKSTREAM", "+OK\r\n"},
		{"EXISTS e", ":1\r\n"},
		{"DEL e s s3", ":3\r\n"},
		{"EXISTS e s s3", ":0\r\n"},
	} {
		if got := h.line(c[0]); got != c[1] {
			t.Errorf("%s: %q, want %q", c[0], got, c[1])
		}
	}
	// DUMP and RESTORE (redis-server's payloads: stream_redisdiff_test.go)
	h.line("XADD d 1-1 f v")
	h.line("XGROUP CREATE d g 0")
	h.line("XREADGROUP GROUP g c STREAMS d >")
	dump := h.line("DUMP d")
	if !strings.HasPrefix(dump, "$") {
		t.Fatalf("DUMP of a stream: %q", dump)
	}
	payload := dump[strings.Index(dump, "\r\n")+2 : len(dump)-2]
	if got := h.do("RESTORE", "d2", "0", payload); got != "+OK\r\n" {
		t.Fatalf("RESTORE: %q", got)
	}
	if a, b := h.line("XINFO STREAM d FULL"), h.line("XINFO STREAM d2 FULL"); a != b {
		t.Errorf("restored stream differs:\n%q\n%q", a, b)
	}
}

// TestStreamCodec: the encoding round-trips (entries, node layout,
// groups, consumers, PELs) and a damaged one fails without a panic.
func TestStreamCodec(t *testing.T) {
	h := newHarness(t)
	for i := 1; i <= 250; i++ {
		h.line(fmt.Sprintf("XADD s %d-1 f %d", i, i))
	}
	for _, l := range []string{"XDEL s 3-1 150-1", "XGROUP CREATE s g 0", "XREADGROUP GROUP g c COUNT 5 STREAMS s >",
		"XGROUP CREATECONSUMER s g d", "XCLAIM s g d 0 2-1", "XGROUP CREATE s h 10 ENTRIESREAD 4"} {
		if out := h.line(l); strings.HasPrefix(out, "-") {
			t.Fatalf("%s: %s", l, out)
		}
	}
	b := streamEncoding(t, h.eng, h.x, "s")
	o, err := engines.DecodeObject(engines.TypeStream, b)
	if err != nil {
		t.Fatal(err)
	}
	if b2, _ := o.MarshalBinary(); !bytes.Equal(b, b2) {
		t.Fatal("the stream does not round-trip")
	}
	st := o.(*ds.Stream)
	if st.Len() != 248 || st.Nodes() != 3 || st.Group("g").PEL.Len() != 5 || st.Group("g").Consumer("d").PEL.Len() != 1 {
		t.Fatalf("decoded: len %d nodes %d", st.Len(), st.Nodes())
	}
	for i := 0; i < len(b); i += 1 + len(b)/300 {
		for _, cut := range [][]byte{b[:i], append(append([]byte(nil), b[:i]...), 0xff, 0xff)} {
			if _, err := engines.DecodeObject(engines.TypeStream, cut); err == nil && i < len(b)-1 && len(cut) == i {
				t.Fatalf("a truncated encoding (%d of %d bytes) decoded", i, len(b))
			}
		}
	}
}

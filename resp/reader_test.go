package resp

import (
	"bytes"
	"errors"
	"io"
	"math"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
)

func TestScanReply(t *testing.T) {
	cases := []struct {
		in   string
		n    int
		err  error
		need int
	}{
		{"+OK\r\n", 5, nil, 0},
		{"-ERR x\r\n", 8, nil, 0},
		{":-12\r\n", 6, nil, 0},
		{"$3\r\nfoo\r\n", 9, nil, 0},
		{"$-1\r\n", 5, nil, 0},
		{"*-1\r\n", 5, nil, 0},
		{"*0\r\n", 4, nil, 0},
		{"*2\r\n$1\r\na\r\n*1\r\n:1\r\n", 19, nil, 0},
		{"%1\r\n+k\r\n*2\r\n_\r\n#t\r\n", 19, nil, 0},
		{"|1\r\n+a\r\n+b\r\n:1\r\n", 16, nil, 0},
		{",3.5\r\n", 6, nil, 0},
		{"(123\r\n", 6, nil, 0},
		{"=7\r\ntxt:abc\r\n", 13, nil, 0},
		{"!3\r\nerr\r\n", 9, nil, 0},
		{">2\r\n+a\r\n+b\r\n", 12, nil, 0},
		{"~1\r\n+a\r\n+tail", 8, nil, 0},
		{"$10\r\nab", 0, ErrIncomplete, 10},
		{"*3\r\n:1\r\n", 0, ErrIncomplete, 6},
		{"+OK", 0, ErrIncomplete, 1},
		{"", 0, ErrIncomplete, 3},
		{"$3\r\nfooXY", 0, ErrProtocol, 0},
		{"?3\r\n", 0, ErrProtocol, 0},
		{":abc\r\n", 0, ErrProtocol, 0},
		{"$-2\r\n", 0, ErrProtocol, 0},
		{"#x\r\n", 0, ErrProtocol, 0},
		{"$999999999999\r\n", 0, ErrTooLarge, 0},
		{"*99999999999\r\n", 0, ErrTooLarge, 0},
	}
	for _, c := range cases {
		n, need, err := ScanReply([]byte(c.in), Limits{})
		if n != c.n || !errors.Is(err, c.err) && err != c.err || need != c.need {
			t.Errorf("ScanReply(%q) = %d, %d, %v; want %d, %d, %v", c.in, n, need, err, c.n, c.need, c.err)
		}
	}
}

func TestReplyReaderFragmented(t *testing.T) {
	var all []byte
	var want []string
	big := strings.Repeat("x", 100000)
	for i := 0; i < 200; i++ {
		r := []string{"+OK\r\n", "$5\r\nhello\r\n", "*2\r\n$1\r\na\r\n%1\r\n+k\r\n:7\r\n", "$100000\r\n" + big + "\r\n", "_\r\n"}[i%5]
		all = append(all, r...)
		want = append(want, r)
	}
	for _, mode := range []string{"whole", "onebyte", "half"} {
		var src io.Reader = bytes.NewReader(all)
		switch mode {
		case "onebyte":
			src = iotest.OneByteReader(bytes.NewReader(all[:len(all)/10]))
		case "half":
			src = iotest.HalfReader(bytes.NewReader(all))
		}
		rd := NewReplyReader(src, 64, Limits{})
		for i, w := range want {
			if mode == "onebyte" && i >= 20 {
				break
			}
			got, err := rd.ReadReply()
			if err != nil {
				t.Fatalf("%s: reply %d: %v", mode, i, err)
			}
			if string(got) != w {
				t.Fatalf("%s: reply %d = %q, want %q", mode, i, trunc(got), trunc([]byte(w)))
			}
		}
	}
}

func trunc(b []byte) string {
	if len(b) > 40 {
		return string(b[:40]) + "..."
	}
	return string(b)
}

func TestRequestReader(t *testing.T) {
	in := "*2\r\n$3\r\nGET\r\n$1\r\nk\r\nPING\r\n\r\nSET a \"b c\\n\" 'd\\'e'\r\n*0\r\n*1\r\n$4\r\nPING\r\n"
	for _, mode := range []string{"whole", "onebyte"} {
		var src io.Reader = strings.NewReader(in)
		if mode == "onebyte" {
			src = iotest.OneByteReader(src)
		}
		rd := NewRequestReader(src, RequestLimits{})
		var got []string
		for {
			cmds, err := rd.ReadBatch(100)
			for _, c := range cmds {
				parts := make([]string, len(c.Args))
				for i, a := range c.Args {
					parts[i] = string(a)
				}
				got = append(got, strings.Join(parts, "|"))
			}
			if err != nil {
				if err != io.EOF {
					t.Fatal(err)
				}
				break
			}
		}
		want := "GET|k;PING;SET|a|b c\n|d'e;PING"
		if strings.Join(got, ";") != want {
			t.Fatalf("%s: got %q, want %q", mode, strings.Join(got, ";"), want)
		}
	}
}

// Feed and Parse (the event loop's way in) give the same commands as
// ReadBatch, whatever the chunks the bytes arrive in, and one command
// at a time.
func TestRequestReaderFeed(t *testing.T) {
	in := "*2\r\n$3\r\nGET\r\n$1\r\nk\r\nPING\r\n\r\nSET a \"b c\\n\" 'd\\'e'\r\n*0\r\n*3\r\n$3\r\nSET\r\n$1\r\nv\r\n$40000\r\n" +
		strings.Repeat("x", 40000) + "\r\n*1\r\n$4\r\nPING\r\n"
	want := "GET|k;PING;SET|a|b c\n|d'e;SET|v|40000;PING"
	for _, chunk := range []int{1, 7, 4096, len(in)} {
		rd := NewRequestReader(nil, RequestLimits{})
		var got []string
		for off := 0; off < len(in); off += chunk {
			rd.Feed([]byte(in[off:min(off+chunk, len(in))]))
			for {
				cmds, err := rd.Parse(1)
				if err != nil {
					t.Fatal(err)
				}
				if len(cmds) == 0 {
					break
				}
				a := cmds[0].Args
				parts := make([]string, len(a))
				for i := range a {
					parts[i] = string(a[i])
					if len(a[i]) > 100 {
						parts[i] = strconv.Itoa(len(a[i]))
					}
				}
				got = append(got, strings.Join(parts, "|"))
			}
		}
		if strings.Join(got, ";") != want {
			t.Fatalf("chunk %d: got %q, want %q", chunk, strings.Join(got, ";"), want)
		}
		if rd.BytesRead() != int64(len(in)) || rd.Buffered() != 0 {
			t.Fatalf("chunk %d: read %d, buffered %d", chunk, rd.BytesRead(), rd.Buffered())
		}
	}
	rd := NewRequestReader(nil, RequestLimits{MaxBulkLen: 10})
	rd.Feed([]byte("*1\r\n$4\r\nPING\r\n*2\r\n$3\r\nGET\r\n$11\r\n"))
	cmds, err := rd.Parse(10)
	var pe *ProtocolError
	if len(cmds) != 1 || !errors.As(err, &pe) || pe.Msg != "invalid bulk length" {
		t.Fatalf("over-limit bulk: %d commands, err %v", len(cmds), err)
	}
}

func TestRequestLimits(t *testing.T) {
	cases := []struct {
		in, want string
		unauth   bool
	}{
		{"*1\r\n$1073741824\r\n", "Protocol error: invalid bulk length", false},
		{"*10000000\r\n", "Protocol error: invalid multibulk length", false},
		{"*11\r\n", "Protocol error: invalid multibulk length", true},
		{"*1\r\n$16385\r\n", "Protocol error: invalid bulk length", true},
		{"*1\r\n:1\r\n", "Protocol error: expected ':', got ':'", false},
		{"*x\r\n", "Protocol error: invalid multibulk length", false},
		{"*1\r\n$3\r\nabcde", "Protocol error: invalid bulk length", false},
		{strings.Repeat("a", 70000), "Protocol error: too big inline request", false},
	}
	for _, c := range cases {
		rd := NewRequestReader(strings.NewReader(c.in), RequestLimits{})
		rd.Unauth = c.unauth
		_, err := rd.ReadBatch(10)
		var pe *ProtocolError
		if !errors.As(err, &pe) {
			t.Fatalf("%q: err %v, want a protocol error", trunc([]byte(c.in)), err)
		}
		if c.want != "Protocol error: expected ':', got ':'" && pe.Error() != c.want {
			t.Fatalf("%q: %q, want %q", trunc([]byte(c.in)), pe.Error(), c.want)
		}
	}
	// A big command arriving slowly is parsed, with memory about its size.
	val := strings.Repeat("v", 3<<20)
	in := "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$" + itoa(len(val)) + "\r\n" + val + "\r\n"
	rd := NewRequestReader(iotest.HalfReader(strings.NewReader(in)), RequestLimits{})
	cmds, err := rd.ReadBatch(10)
	if err != nil || len(cmds) != 1 || len(cmds[0].Args[2]) != len(val) {
		t.Fatalf("big SET: %v %d", err, len(cmds))
	}
	if rd.BufferSize() > 8<<20 {
		t.Fatalf("buffer grew to %d for a 3 MiB command", rd.BufferSize())
	}
}

func itoa(n int) string {
	return strings.TrimSpace(strings.Repeat(" ", 0) + func() string {
		b := []byte{}
		for n > 0 {
			b = append([]byte{byte('0' + n%10)}, b...)
			n /= 10
		}
		return string(b)
	}())
}

func FuzzRESPReader(f *testing.F) {
	for _, s := range []string{
		"+OK\r\n", "$3\r\nfoo\r\n", "*2\r\n$1\r\na\r\n:1\r\n", "%1\r\n+k\r\n_\r\n", "|1\r\n+a\r\n+b\r\n:1\r\n",
		"*1\r\n$3\r\nGET\r\n", "PING\r\n", "SET a \"b\\x41\"\r\n", "*-1\r\n", "=5\r\ntxt:a\r\n", ">1\r\n#f\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		lim := Limits{MaxBulkLen: 1 << 20, MaxElements: 1 << 16, MaxReplyLen: 1 << 22}
		n, _, err := ScanReply(data, lim)
		if err == nil {
			if n <= 0 || n > len(data) {
				t.Fatalf("ScanReply n=%d of %d", n, len(data))
			}
			// The reader agrees, whatever the fragmentation.
			rd := NewReplyReader(iotest.HalfReader(bytes.NewReader(data)), 16, lim)
			raw, err := rd.ReadReply()
			if err != nil || !bytes.Equal(raw, data[:n]) {
				t.Fatalf("ReplyReader = %q, %v; ScanReply %q", raw, err, data[:n])
			}
		}
		// Requests: never panic, never return args outside the input.
		rd := NewRequestReader(bytes.NewReader(data), RequestLimits{MaxBulkLen: 1 << 20, MaxMultiBulkLen: 1 << 10, MaxInlineLen: 1 << 12})
		for i := 0; i < 100; i++ {
			cmds, err := rd.ReadBatch(16)
			for _, c := range cmds {
				if len(c.Args) == 0 {
					t.Fatal("empty command returned")
				}
			}
			if err != nil {
				break
			}
		}
	})
}

// CopyArgs copies into one block, reusing a large enough buffer; the
// copies do not alias the source or each other.
func TestCopyArgs(t *testing.T) {
	src := [][]byte{[]byte("SET"), []byte("k"), []byte("value")}
	buf := make([]byte, 0, 64)
	got, heads := CopyArgs(buf, nil, src)
	if &got[:1][0] != &buf[:1][0] || len(got) != 9 || len(heads) != 3 {
		t.Fatalf("buffer not reused or wrong size: len %d, %d heads", len(got), len(heads))
	}
	src[1][0] = 'x'
	heads[0] = append(heads[0], '!') // capped: must not overwrite heads[1]
	if string(heads[1]) != "k" || string(heads[2]) != "value" {
		t.Fatalf("copies alias: %q %q", heads[1], heads[2])
	}
	if c := CloneArgs(src); string(c[1]) != "x" || len(c) != 3 {
		t.Fatalf("CloneArgs = %q", c)
	}
}

// Integer replies take every int64, the two bounds included, and nothing
// beyond.
func TestScanReplyIntegerBounds(t *testing.T) {
	for _, c := range []struct {
		in string
		ok bool
	}{
		{":9223372036854775807\r\n", true},
		{":-9223372036854775808\r\n", true},
		{":9223372036854775808\r\n", false},
		{":-9223372036854775809\r\n", false},
		{":-\r\n", false},
		{"*-1\r\n", true},
		{"$-9223372036854775808\r\n", false},
	} {
		n, _, err := ScanReply([]byte(c.in), Limits{})
		if ok := err == nil && n == len(c.in); ok != c.ok {
			t.Errorf("ScanReply(%q) = %d, %v; want ok %v", c.in, n, err, c.ok)
		}
	}
	if v, ok := parseInt64([]byte("-9223372036854775808")); !ok || v != math.MinInt64 {
		t.Errorf("parseInt64(MinInt64) = %d, %v", v, ok)
	}
}

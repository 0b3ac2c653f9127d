package proxy

import "testing"

// TestClientNoTouch: CLIENT NO-TOUCH ON flags the envelope of every
// command the session sends (fast path, split multi-key commands, the
// goroutine path) until OFF or RESET; NO-EVICT is accepted; both refuse
// anything but ON|OFF as Redis does.
func TestClientNoTouch(t *testing.T) {
	e := newEnv(t, 2, false)
	rc := e.raw()
	flagged := func() int64 {
		var n int64
		for _, f := range e.fakes {
			n += f.noTouch.Load()
		}
		return n
	}
	rc.do("SET", "a", "1")
	rc.do("GET", "a")
	if n := flagged(); n != 0 {
		t.Fatalf("%d envelopes flagged before CLIENT NO-TOUCH", n)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"CLIENT", "NO-TOUCH", "maybe"}, "-ERR syntax error\r\n"},
		{[]string{"CLIENT", "NO-EVICT", "maybe"}, "-ERR syntax error\r\n"},
		{[]string{"CLIENT", "NO-TOUCH"}, "-ERR wrong number of arguments for 'client|no-touch' command\r\n"},
		{[]string{"CLIENT", "NO-EVICT", "on"}, "+OK\r\n"},
		{[]string{"CLIENT", "NO-EVICT", "OFF"}, "+OK\r\n"},
	} {
		if got := rc.do(c.args...); got != c.want {
			t.Fatalf("%q = %q, want %q", c.args, got, c.want)
		}
	}
	if n := flagged(); n != 0 {
		t.Fatalf("%d envelopes flagged without NO-TOUCH ON", n)
	}
	if got := rc.do("CLIENT", "NO-TOUCH", "On"); got != "+OK\r\n" {
		t.Fatalf("CLIENT NO-TOUCH On = %q", got)
	}
	rc.do("GET", "a")            // the loop's fast path
	rc.do("MGET", "a", "b", "c") // split per master
	rc.do("SET", "a", "2")       // a write
	if n := flagged(); n < 3 {
		t.Fatalf("%d envelopes flagged after GET, MGET and SET, want at least 3", n)
	}
	if got := rc.do("CLIENT", "NO-TOUCH", "OFF"); got != "+OK\r\n" {
		t.Fatalf("CLIENT NO-TOUCH OFF = %q", got)
	}
	before := flagged()
	rc.do("GET", "a")
	rc.do("MGET", "a", "b", "c")
	rc.do("CLIENT", "NO-TOUCH", "ON")
	rc.do("RESET")
	rc.do("GET", "a")
	if n := flagged(); n != before {
		t.Fatalf("%d envelopes flagged after OFF and RESET", n-before)
	}
}

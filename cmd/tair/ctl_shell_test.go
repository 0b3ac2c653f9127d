package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sys/unix"

	"github.com/tairkv/tair/internal/testutil"
)

// testCtlShell runs `tair ctl shell` against the proxy: -l, -q, lines on
// standard input, --json, -a.
func testCtlShell(t *testing.T, cs, proxy string) {
	sh := func(args ...string) string {
		t.Helper()
		return ctl(t, cs, append([]string{"--proxy", proxy, "shell"}, args...)...)
	}
	// A quoted value keeps its space.
	if got := sh("-l", `put k "hello world"`); got != "OK\n" {
		t.Fatalf("shell -l put: %q", got)
	}
	if got := sh("-l", "get k"); got != "1) \"hello world\"\n2) (integer) 1\n" {
		t.Fatalf("shell -l get: %q", got)
	}

	// -q runs each line of a file; a failed line is printed and the rest
	// run; the exit status says how many failed.
	script := `put a 1
get a
incr n 5
decr n 2
incr n
remove a
get a
# a comment

area 5
put x "y z"
get x
put t 'tab\there'
put e "tab\there"
get e
get t
stat
mget a b
hgetall nokey
put v 1 7
put v 2 7
bogus "unbalanced
delall
get x
`
	file := filepath.Join(t.TempDir(), "script")
	if err := os.WriteFile(file, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := ctlErr(cs, "--proxy", proxy, "shell", "-q", file)
	re := regexp.MustCompile("^" + strings.Replace(regexp.QuoteMeta(`OK
1) "1"
2) (integer) 1
(integer) 5
(integer) 3
(integer) 4
(integer) 1
(nil)
OK
OK
1) "y z"
2) (integer) 1
OK
OK
1) "tab\there"
2) (integer) 1
1) "tab\\there"
2) (integer) 1
area       5
keys       3
bytes      BYTES
gets       3
puts       3
hits       3
misses     0
evictions  0
1) (nil)
2) (nil)
(empty array)
OK
(error) VERERROR version mismatch (tair -3997)
(error) unbalanced quotes
OK
(nil)
`), "BYTES", `\d+`, 1) + "$")
	if !re.MatchString(out) || err == nil || err.Error() != "2 of 22 shell commands failed" {
		t.Fatalf("shell -q: %v\n%s", err, out)
	}

	// Lines on standard input (no terminal: no prompt, no history): an
	// error does not end the shell; quit does.
	in := "help\nput p \"q r\"\nbogus \"x\nget p\nquit\nput after 1\n"
	out, err = ctlRun(context.Background(), strings.NewReader(in), cs, "--proxy", proxy, "shell")
	if want := shellHelp + "\nOK\n(error) unbalanced quotes\n1) \"q r\"\n2) (integer) 1\n"; err != nil || out != want {
		t.Fatalf("shell on stdin: %v\n%q, want %q", err, out, want)
	}
	if got := sh("-l", "get after"); got != "(nil)\n" {
		t.Fatalf("a line after quit ran: get after = %q", got)
	}

	// -a starts in an area; -l fails with the command's error.
	if got := sh("-a", "7", "-l", "put q 1"); got != "OK\n" {
		t.Fatalf("shell -a 7 put: %q", got)
	}
	if got := sh("-a", "7", "-l", "get q"); got != "1) \"1\"\n2) (integer) 1\n" {
		t.Fatalf("shell -a 7 get: %q", got)
	}
	if got := sh("-l", "get q"); got != "(nil)\n" {
		t.Fatalf("area 0 sees area 7's key: %q", got)
	}
	out, err = ctlErr(cs, "--proxy", proxy, "shell", "-a", "7", "-l", "put q 2 9")
	if out != "(error) VERERROR version mismatch (tair -3997)\n" || err == nil || err.Error() != "1 of 1 shell commands failed" {
		t.Fatalf("shell -l of a failing command: %v %q", err, out)
	}
	if _, err := ctlErr(cs, "--proxy", proxy, "shell", "-a", "1024"); err == nil || err.Error() != "area must be 0..1023" {
		t.Fatalf("shell -a 1024: %v", err)
	}

	// --json: each reply as JSON, errors as {"error": ...}.
	if got := sh("--json", "-l", "get k"); got != `["hello world",1]`+"\n" {
		t.Fatalf("shell --json get: %q", got)
	}
	// (TAIR.INCR of a missing key counts a get that missed, and a put.)
	jsonScript := "area 6\nput j 'x y'\nget j\nget nokey\nincr c 2\nbad 'q\nstat\n"
	if err := os.WriteFile(file, []byte(jsonScript), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err = ctlErr(cs, "--proxy", proxy, "shell", "--json", "-q", file)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if err == nil || len(lines) != 7 || strings.Join(lines[:6], "\n") != `"OK"
"OK"
["x y",1]
null
2
{"error":"unbalanced quotes"}` {
		t.Fatalf("shell --json -q: %v\n%s", err, out)
	}
	var st ctlStat
	decodeJSON(t, lines[6], &st)
	if st.Area != 6 || st.Keys != 2 || st.Gets != 3 || st.Hits != 1 || st.Misses != 2 || st.Puts != 2 || st.Bytes == 0 {
		t.Fatalf("shell --json stat: %s", lines[6])
	}
}

func TestSplitArgs(t *testing.T) {
	for _, c := range []struct {
		line string
		want []string
	}{
		{`put k "hello world"`, []string{"put", "k", "hello world"}},
		{`  get   k  `, []string{"get", "k"}},
		{`a 'b c' "d\"e" 'f\'g'`, []string{"a", "b c", `d"e`, "f'g"}},
		{`"\x41\x42" "\n\t\\\r\a\b" "\q"`, []string{"AB", "\n\t\\\r\a\b", "q"}},
		{`'\n' 'a\b'`, []string{`\n`, `a\b`}},
		{`ab"cd" x`, []string{"abcd", "x"}},
		{`"" ''`, []string{"", ""}},
		{"tab\tsep", []string{"tab", "sep"}},
		{"", nil},
		{"   ", nil},
	} {
		got, err := splitArgs(c.line)
		if err != nil || fmt.Sprintf("%q", got) != fmt.Sprintf("%q", c.want) {
			t.Errorf("splitArgs(%q) = %q, %v; want %q", c.line, got, err, c.want)
		}
	}
	for _, line := range []string{`"abc`, `'abc`, `"a"b`, `'a'b`, `"trailing\`, `'\\'`} {
		if got, err := splitArgs(line); err == nil || err.Error() != "unbalanced quotes" {
			t.Errorf("splitArgs(%q) = %q, %v; want unbalanced quotes", line, got, err)
		}
	}
}

// replyErr is an error reply inside an array (as in EXEC's).
type replyErr string

func (e replyErr) Error() string { return string(e) }
func (replyErr) RedisError()     {}

var _ redis.Error = replyErr("")

func TestFormatReply(t *testing.T) {
	for _, c := range []struct {
		v    any
		want string
	}{
		{"OK", "OK\n"},
		{"v", "\"v\"\n"},
		{"a\nb\x00", "\"a\\nb\\x00\"\n"},
		{int64(-3), "(integer) -3\n"},
		{nil, "(nil)\n"},
		{[]any{}, "(empty array)\n"},
		{[]any{[]any{int64(1), "a"}, nil}, "1) 1) (integer) 1\n   2) \"a\"\n2) (nil)\n"},
		{[]any{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"}, " 1) \"a\"\n 2) \"b\"\n 3) \"c\"\n 4) \"d\"\n 5) \"e\"\n 6) \"f\"\n 7) \"g\"\n 8) \"h\"\n 9) \"i\"\n10) \"j\"\n"},
		{map[any]any{"b": int64(2), "a": "x"}, "1) \"a\"\n2) \"x\"\n3) \"b\"\n4) (integer) 2\n"},
		{[]any{replyErr("ERR x")}, "1) (error) ERR x\n"},
	} {
		if got := formatReply(c.v, ""); got != c.want {
			t.Errorf("formatReply(%#v) = %q, want %q", c.v, got, c.want)
		}
	}
}

// openPTY opens a pseudo-terminal pair (skipping the test where none
// can be had).
func openPTY(t *testing.T) (master, tty *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	fd := int(m.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		m.Close()
		t.Skipf("unlockpt: %v", err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		m.Close()
		t.Skipf("ptsname: %v", err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		m.Close()
		t.Skipf("open the pty: %v", err)
	}
	return m, s
}

// screen collects what a program writes to its terminal (a goroutine
// copies it there while the test reads it).
type screen struct{ testutil.LogBuffer }

// waitFor waits until the screen shows frag n times.
func (s *screen) waitFor(t *testing.T, frag string, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for strings.Count(s.String(), frag) < n {
		if time.Now().After(deadline) {
			t.Fatalf("the terminal never showed %q %d times:\n%q", frag, n, s.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// runOnPTY runs `tair ctl shell` on a new terminal and returns its
// screen, a function that types, and one that waits for the shell's end
// and returns what it printed to its (non-terminal) standard output.
func runOnPTY(t *testing.T) (*screen, func(string), func() (string, error)) {
	m, tty := openPTY(t)
	scr := &screen{}
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		buf := make([]byte, 4096)
		for {
			n, err := m.Read(buf)
			scr.Write(buf[:n])
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		tty.Close()
		m.Close()
		<-copied
	})
	type result struct {
		out string
		err error
	}
	done := make(chan result, 1)
	go func() {
		// No cluster: the lines typed are the shell's own (area, quit).
		out, err := ctlRun(context.Background(), tty, "127.0.0.1:1", "--proxy", "127.0.0.1:1", "shell")
		done <- result{out, err}
	}()
	typ := func(s string) {
		if _, err := m.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	wait := func() (string, error) {
		select {
		case r := <-done:
			return r.out, r.err
		case <-time.After(10 * time.Second):
			t.Fatalf("the shell did not end; its terminal:\n%q", scr.String())
		}
		return "", nil
	}
	return scr, typ, wait
}

// On a terminal the shell edits lines: the up arrow recalls earlier
// lines, of this session and (from the history file) of the last.
func TestCtlShellHistory(t *testing.T) {
	hist := filepath.Join(t.TempDir(), "history")
	t.Setenv("TAIR_HISTORY", hist)

	scr, typ, wait := runOnPTY(t)
	scr.waitFor(t, "tair[0]> ", 1)
	typ("area 7\r")
	scr.waitFor(t, "tair[7]> ", 1)
	typ("area 0\r")
	scr.waitFor(t, "tair[0]> ", 2)
	typ("\x1b[A\x1b[A\r") // up, up: "area 7" again
	scr.waitFor(t, "tair[7]> ", 2)
	typ("quit\r")
	if out, err := wait(); err != nil || out != "OK\nOK\nOK\n" {
		t.Fatalf("shell on a terminal: %v %q; terminal:\n%q", err, out, scr.String())
	}
	data, err := os.ReadFile(hist)
	if err != nil || string(data) != "area 7\narea 0\narea 7\nquit\n" {
		t.Fatalf("history file: %v %q", err, data)
	}

	// The next session recalls the last one's lines.
	scr, typ, wait = runOnPTY(t)
	scr.waitFor(t, "tair[0]> ", 1)
	typ("\x1b[A\x1b[A") // up, up: "quit", then "area 7"
	scr.waitFor(t, "area 7", 1)
	typ("\r")
	scr.waitFor(t, "tair[7]> ", 1)
	typ("\x04") // Ctrl-D on an empty line ends the shell
	if out, err := wait(); err != nil || out != "OK\n" {
		t.Fatalf("second shell: %v %q; terminal:\n%q", err, out, scr.String())
	}
	if data, _ := os.ReadFile(hist); string(data) != "area 7\narea 0\narea 7\nquit\narea 7\n" {
		t.Fatalf("history file after the second session: %q", data)
	}
}

// Package testutil holds small helpers shared by tests: free ports,
// polling until a condition holds.
package testutil

import (
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Eventually polls cond every 20 ms until it returns true or timeout
// passes, then fails the test with msg. It is EventuallyErr for a
// condition that has nothing to say about why it does not hold yet.
func Eventually(t testing.TB, timeout time.Duration, cond func() bool, msg string, args ...any) {
	t.Helper()
	if !poll(timeout, func() error {
		if cond() {
			return nil
		}
		return errNotYet
	}, nil) {
		t.Fatalf("after %v: "+msg, append([]any{timeout}, args...)...)
	}
}

// EventuallyErr polls cond every 20 ms until it returns nil, and fails
// the test with the last error cond returned when timeout passes first:
// a wait for a condition, instead of a sleep followed by an assertion,
// that says what was still wrong at the end. The last call of a failing
// cond begins at the deadline or after it, so nothing is failed on a
// check made before its time. The bound is the timeout: a test that
// asserted something after 2 s waits up to 2 s for it.
func EventuallyErr(t testing.TB, timeout time.Duration, cond func() error) {
	t.Helper()
	var last error
	tries := 0
	if !poll(timeout, cond, func(err error) { last, tries = err, tries+1 }) {
		t.Fatalf("after %v (%d tries): %v", timeout, tries, last)
	}
}

var errNotYet = errors.New("condition not met")

// poll calls cond every 20 ms until it returns nil (true) or timeout
// passes (false); failed, when set, sees every error.
func poll(timeout time.Duration, cond func() error, failed func(error)) bool {
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return true
		}
		if failed != nil {
			failed(err)
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(min(20*time.Millisecond, max(time.Until(deadline), time.Millisecond)))
	}
}

// LogBuffer is a goroutine-safe sink for a test's logs.
type LogBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *LogBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String returns everything written so far.
func (l *LogBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Lines returns the written lines that contain every one of subs.
func (l *LogBuffer) Lines(subs ...string) []string {
	var out []string
	for _, ln := range strings.Split(l.String(), "\n") {
		ok := ln != ""
		for _, s := range subs {
			ok = ok && strings.Contains(ln, s)
		}
		if ok {
			out = append(out, ln)
		}
	}
	return out
}

// HTTPGet GETs url and returns the status and the whole body; a request
// that fails, or a body that cannot be read, fails the test.
func HTTPGet(t testing.TB, url string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return resp.StatusCode, body
}

// HTTPGetOK is HTTPGet of a page that must answer 200: its body.
func HTTPGetOK(t testing.TB, url string) string {
	t.Helper()
	code, body := HTTPGet(t, url)
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, code, body)
	}
	return string(body)
}

// Package testutil holds small helpers shared by tests: free ports,
// polling until a condition holds.
package testutil

import (
	"bytes"
	"net"
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
// passes, then fails the test with msg.
func Eventually(t testing.TB, timeout time.Duration, cond func() bool, msg string, args ...any) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %v: "+msg, append([]any{timeout}, args...)...)
		}
		time.Sleep(20 * time.Millisecond)
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

package main

import (
	"bufio"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// tairBinary builds cmd/tair with the test hooks (tair_testhooks) once.
var tairBinary = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "tair-sig-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "tair")
	out, err := exec.Command("go", "build", "-tags", "tair_testhooks", "-o", bin, ".").CombinedOutput()
	if err != nil {
		return "", errors.New(string(out))
	}
	return bin, nil
})

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// proc is a child tair process and what it wrote to stderr.
type proc struct {
	cmd  *exec.Cmd
	done chan error
	mu   sync.Mutex
	log  strings.Builder
}

func startTair(t *testing.T, env []string, args ...string) *proc {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin, err := tairBinary()
	if err != nil {
		t.Fatalf("go build: %v", err)
	}
	p := &proc{cmd: exec.Command(bin, args...), done: make(chan error, 1)}
	p.cmd.Env = append(os.Environ(), env...)
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			p.mu.Lock()
			p.log.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
		}
		p.done <- p.cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		select {
		case <-p.done:
		case <-time.After(5 * time.Second):
		}
	})
	return p
}

func (p *proc) logged() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.String()
}

// waitLog waits until the process logged s.
func (p *proc) waitLog(t *testing.T, s string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !strings.Contains(p.logged(), s) {
		if time.Now().After(deadline) {
			t.Fatalf("the process did not log %q within %v; it logged:\n%s", s, timeout, p.logged())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// wait returns the process's exit status and how long it took, or fails
// after timeout.
func (p *proc) wait(t *testing.T, timeout time.Duration) (int, time.Duration) {
	t.Helper()
	start := time.Now()
	select {
	case err := <-p.done:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode(), time.Since(start)
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0, time.Since(start)
	case <-time.After(timeout):
		t.Fatalf("the process did not exit within %v; it logged:\n%s", timeout, p.logged())
	}
	return 0, 0
}

// startWedgedDataserver runs a dataserver whose event loop wedges for
// ever in the PING a client sends it.
func startWedgedDataserver(t *testing.T) *proc {
	t.Helper()
	addr := freeAddr(t)
	p := startTair(t, []string{"TAIR_TEST_WEDGE=ping"}, "dataserver", "--listen", addr, "--http", freeAddr(t),
		"--configserver", freeAddr(t), "--engine", "mdb", "--event-loops", "1")
	p.waitLog(t, "dataserver serving", 30*time.Second)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		t.Fatal(err)
	}
	// The PING never answers: the loop is wedged.
	_ = c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if n, err := c.Read(make([]byte, 16)); err == nil {
		t.Fatalf("the wedged PING answered (%d bytes)", n)
	}
	return p
}

// SIGTERM stops a dataserver within 5 s even while an event loop is
// wedged in a command (its Close would wait for the loop for ever).
func TestSIGTERMStopsWedgedDataserver(t *testing.T) {
	p := startWedgedDataserver(t)
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	code, took := p.wait(t, 5*time.Second)
	if code != 1 {
		t.Fatalf("exit status %d after the grace period, want 1; it logged:\n%s", code, p.logged())
	}
	if !strings.Contains(p.logged(), "the stop did not finish within its grace period; exiting") {
		t.Fatalf("no grace-period line; it logged:\n%s", p.logged())
	}
	t.Logf("exited %v after SIGTERM", took)
}

// A second signal exits at once.
func TestSecondSignalExitsAtOnce(t *testing.T) {
	p := startWedgedDataserver(t)
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	p.waitLog(t, "msg=stopping", 2*time.Second)
	if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	code, took := p.wait(t, time.Second)
	if code != 128+int(syscall.SIGINT) {
		t.Fatalf("exit status %d after a second signal, want %d; it logged:\n%s", code, 128+int(syscall.SIGINT), p.logged())
	}
	if took > time.Second {
		t.Fatalf("exited %v after the second signal", took)
	}
}

// SIGTERM stops `tair up` (etcd, a configserver, a dataserver and a
// proxy in one process) within 5 s, cleanly.
func TestSIGTERMStopsUp(t *testing.T) {
	p := startTair(t, nil, "up", "--dataservers", "1", "--copies", "1", "--buckets", "16", "--engine", "mdb",
		"--port", strings.TrimPrefix(freeAddr(t), "127.0.0.1:"))
	p.waitLog(t, "proxy started", 60*time.Second)
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	code, took := p.wait(t, 5*time.Second)
	if code != 0 {
		t.Fatalf("exit status %d, want 0; it logged:\n%s", code, p.logged())
	}
	t.Logf("exited %v after SIGTERM", took)
}

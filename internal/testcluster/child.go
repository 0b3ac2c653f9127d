package testcluster

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/tairkv/tair/internal/testutil"
)

// child is a child process and what it printed: what a Proc and an
// EtcdMember have in common (start, signal, kill, reap, read the output).
type child struct {
	mu  sync.Mutex
	cmd *exec.Cmd
	// out is written by exec's copying goroutine while Output reads it.
	out *testutil.LogBuffer
}

// start starts bin with args (and attr), its output collected afresh.
func (c *child) start(attr *syscall.SysProcAttr, bin string, args ...string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.out = &testutil.LogBuffer{}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = c.out, c.out
	cmd.SysProcAttr = attr
	if err := cmd.Start(); err != nil {
		return err
	}
	c.cmd = cmd
	return nil
}

// Output returns what the process printed so far.
func (c *child) Output() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.out == nil {
		return ""
	}
	return c.out.String()
}

func (c *child) signal(s syscall.Signal) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cmd != nil && c.cmd.Process != nil {
		_ = c.cmd.Process.Signal(s)
	}
}

// Kill sends SIGKILL (kill -9) and reaps the process.
func (c *child) Kill() {
	c.signal(syscall.SIGKILL)
	c.wait()
}

// Running reports whether the process was started and not killed or
// stopped since (a paused process is running).
func (c *child) Running() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cmd != nil
}

// wait reaps the process (continuing it first, should it be paused).
func (c *child) wait() {
	c.mu.Lock()
	cmd := c.cmd
	c.cmd = nil
	c.mu.Unlock()
	if cmd != nil {
		_ = cmd.Process.Signal(syscall.SIGCONT)
		_ = cmd.Wait()
	}
}

// killAtCleanup kills the process when t ends and, if t failed or
// TAIR_TEST_LOGS is set, logs the last n bytes of its output under its
// name (asked then: a Proc's address may change before its first start).
func (c *child) killAtCleanup(t testing.TB, name func() string, n int) {
	t.Cleanup(func() {
		c.Kill()
		if t.Failed() || os.Getenv("TAIR_TEST_LOGS") != "" {
			out := c.Output()
			t.Logf("output of %s (last %d KiB):\n%s", name(), n>>10, tail(out, n))
			if t.Failed() && len(out) > n {
				// The whole of it, for the failures the tail cannot
				// explain (a chaos seed's history spans its run).
				if path, err := saveOutput(t.Name(), name(), out); err == nil {
					t.Logf("whole output of %s (%d KiB): %s", name(), len(out)>>10, path)
				}
			}
		}
	})
}

// saveOutput writes a failed test's process output whole under the
// temporary directory (tair-test-logs/<test>/<process>.log).
func saveOutput(test, proc, out string) (string, error) {
	clean := func(s string) string {
		return strings.Map(func(r rune) rune {
			if r == '/' || r == ' ' || r == ':' {
				return '_'
			}
			return r
		}, s)
	}
	dir := filepath.Join(os.TempDir(), "tair-test-logs", clean(test))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(dir, clean(proc)+".log")
	return path, os.WriteFile(path, []byte(out), 0o644)
}

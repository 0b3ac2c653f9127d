package testcluster

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tairkv/tair/internal/testutil"
	"github.com/tairkv/tair/internal/wire"
)

var build struct {
	once sync.Once
	path string
	err  error
}

// Binary builds the tair binary once per test process and returns its path.
func Binary(t testing.TB) string {
	t.Helper()
	build.once.Do(func() {
		root, err := moduleRoot()
		if err != nil {
			build.err = err
			return
		}
		dir, err := os.MkdirTemp("", "tair-bin-")
		if err != nil {
			build.err = err
			return
		}
		build.path = filepath.Join(dir, "tair")
		cmd := exec.Command("go", "build", "-o", build.path, "./cmd/tair")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			build.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if build.err != nil {
		t.Fatalf("testcluster: %v", build.err)
	}
	return build.path
}

func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", err
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", fmt.Errorf("not inside the module")
	}
	return filepath.Dir(mod), nil
}

// Proc is one role running as a child process of the tair binary.
type Proc struct {
	t    testing.TB
	Kind string   // "configserver", "dataserver", "proxy"
	Addr string   // --listen
	HTTP string   // --http
	Args []string // full argument list (role first)

	mu  sync.Mutex
	cmd *exec.Cmd
	out *bytes.Buffer
}

// StartProc starts `tair <kind> --listen ADDR --http ADDR extra...` on free
// ports, waits until its /healthz answers, and kills it at cleanup.
func StartProc(t testing.TB, kind string, extra ...string) *Proc {
	t.Helper()
	p := &Proc{
		t:    t,
		Kind: kind,
		Addr: "127.0.0.1:" + strconv.Itoa(testutil.FreePort(t)),
		HTTP: "127.0.0.1:" + strconv.Itoa(testutil.FreePort(t)),
	}
	p.Args = append([]string{kind, "--listen", p.Addr, "--http", p.HTTP}, extra...)
	p.Start()
	t.Cleanup(func() { p.Kill() })
	return p
}

// Start (re)starts the process with the same arguments and waits for
// /healthz.
func (p *Proc) Start() {
	p.t.Helper()
	p.mu.Lock()
	p.out = &bytes.Buffer{}
	cmd := exec.Command(Binary(p.t), p.Args...)
	cmd.Stdout = p.out
	cmd.Stderr = p.out
	if err := cmd.Start(); err != nil {
		p.mu.Unlock()
		p.t.Fatalf("start %s: %v", p.Kind, err)
	}
	p.cmd = cmd
	p.mu.Unlock()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get("http://" + p.HTTP + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("%s %s did not become healthy; output:\n%s", p.Kind, p.Addr, p.Output())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Output returns what the process printed so far.
func (p *Proc) Output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.out == nil {
		return ""
	}
	return p.out.String()
}

func (p *Proc) signal(s syscall.Signal) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil && p.cmd.Process != nil {
		_ = p.cmd.Process.Signal(s)
	}
}

// Kill sends SIGKILL (kill -9) and reaps the process.
func (p *Proc) Kill() {
	p.signal(syscall.SIGKILL)
	p.wait()
}

// Stop sends SIGTERM and waits for a clean exit.
func (p *Proc) Stop() {
	p.signal(syscall.SIGTERM)
	p.wait()
}

// Pause sends SIGSTOP; Resume sends SIGCONT.
func (p *Proc) Pause()  { p.signal(syscall.SIGSTOP) }
func (p *Proc) Resume() { p.signal(syscall.SIGCONT) }

func (p *Proc) wait() {
	p.mu.Lock()
	cmd := p.cmd
	p.cmd = nil
	p.mu.Unlock()
	if cmd != nil {
		_ = cmd.Process.Signal(syscall.SIGCONT)
		_ = cmd.Wait()
	}
}

// Status reads the process's GET /status.
func (p *Proc) Status() (wire.Status, error) {
	var st wire.Status
	resp, err := http.Get("http://" + p.HTTP + "/status")
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return st, err
	}
	err = json.Unmarshal(data, &st)
	return st, err
}

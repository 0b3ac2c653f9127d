package testcluster

import (
	"context"
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

	"github.com/tairkv/tair/cluster"
	"github.com/tairkv/tair/internal/testutil"
	"github.com/tairkv/tair/internal/wire"
)

// httpClient is how the harness asks processes for /healthz, /status and
// /metrics: with a timeout, since a process may be paused (SIGSTOP) or cut
// off by NetFaults.
var httpClient = &http.Client{Timeout: 5 * time.Second}

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
	// Cgroup, when set, is a cgroup v2 directory the process is started
	// in (at creation, CLONE_INTO_CGROUP), on every start: NetFaults
	// match its sockets by it.
	Cgroup string

	child
	started bool // it was healthy once: its addresses are known to others
}

// StartProc starts `tair <kind> --listen ADDR --http ADDR extra...` on free
// ports, waits until its /healthz answers, and kills it at cleanup.
func StartProc(t testing.TB, kind string, extra ...string) *Proc {
	t.Helper()
	p := NewProc(t, kind, extra...)
	p.Start()
	return p
}

// NewProc is StartProc without the start: the caller may set fields
// (Cgroup) first, then calls Start.
func NewProc(t testing.TB, kind string, extra ...string) *Proc {
	t.Helper()
	p := &Proc{
		t:    t,
		Kind: kind,
		Addr: "127.0.0.1:" + strconv.Itoa(testutil.FreePort(t)),
		HTTP: "127.0.0.1:" + strconv.Itoa(testutil.FreePort(t)),
	}
	p.Args = append([]string{kind, "--listen", p.Addr, "--http", p.HTTP}, extra...)
	p.killAtCleanup(t, func() string { return p.Kind + " " + p.Addr }, 64<<10)
	return p
}

// Start (re)starts the process with the same arguments and waits for
// /healthz. A first start that finds one of its ports taken meanwhile
// (FreePort's port was free when picked; another process, or a
// connection's ephemeral source port, may take it before the child
// binds it) starts again on new ports: nothing names this process's
// addresses before its first start.
func (p *Proc) Start() {
	p.t.Helper()
	for attempt := 1; ; attempt++ {
		err := p.startOnce()
		if err == nil {
			p.started = true
			return
		}
		if p.started || attempt >= 3 || !strings.Contains(p.Output(), "address already in use") {
			p.t.Fatal(err)
		}
		p.wait()
		p.repick()
		p.t.Logf("%s: a port was taken before it bound it; starting again on %s (http %s)", p.Kind, p.Addr, p.HTTP)
	}
}

// startOnce starts the process and waits for /healthz (30 s), or until
// it has exited saying that an address is in use.
func (p *Proc) startOnce() error {
	var attr *syscall.SysProcAttr
	if p.Cgroup != "" {
		dir, err := os.Open(p.Cgroup)
		if err != nil {
			return fmt.Errorf("start %s: cgroup: %v", p.Kind, err)
		}
		defer dir.Close()
		attr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: int(dir.Fd())}
	}
	if err := p.start(attr, Binary(p.t), p.Args...); err != nil {
		return fmt.Errorf("start %s: %v", p.Kind, err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := httpClient.Get("http://" + p.HTTP + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("/healthz: %s", resp.Status)
		}
		out := p.Output()
		if strings.Contains(out, "address already in use") || time.Now().After(deadline) {
			return fmt.Errorf("%s %s did not become healthy (%v); output:\n%s", p.Kind, p.Addr, err, out)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// repick gives the process new free ports for --listen and --http.
func (p *Proc) repick() {
	addr := "127.0.0.1:" + strconv.Itoa(testutil.FreePort(p.t))
	httpAddr := "127.0.0.1:" + strconv.Itoa(testutil.FreePort(p.t))
	for i := 0; i+1 < len(p.Args); i++ {
		switch {
		case p.Args[i] == "--listen" && p.Args[i+1] == p.Addr:
			p.Args[i+1] = addr
		case p.Args[i] == "--http" && p.Args[i+1] == p.HTTP:
			p.Args[i+1] = httpAddr
		}
	}
	p.Addr, p.HTTP = addr, httpAddr
}

// Stop sends SIGTERM and waits for a clean exit.
func (p *Proc) Stop() {
	p.signal(syscall.SIGTERM)
	p.wait()
}

// KillTogether sends SIGKILL to every process first, then reaps them: they
// die at the same instant, as far as the cluster can tell.
func KillTogether(ps ...*Proc) {
	for _, p := range ps {
		p.signal(syscall.SIGKILL)
	}
	for _, p := range ps {
		p.wait()
	}
}

// Pid returns the process id, 0 when it is not running.
func (p *Proc) Pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || p.cmd.Process == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// Pause sends SIGSTOP; Resume sends SIGCONT.
func (p *Proc) Pause()  { p.signal(syscall.SIGSTOP) }
func (p *Proc) Resume() { p.signal(syscall.SIGCONT) }

// get reads GET path of the process's http listener: the response (its
// body read and closed) and the body.
func (p *Proc) get(path string) (*http.Response, []byte, error) {
	resp, err := httpClient.Get("http://" + p.HTTP + path)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp, data, err
}

// Status reads the process's GET /status.
func (p *Proc) Status() (wire.Status, error) {
	var st wire.Status
	_, data, err := p.get("/status")
	if err != nil {
		return st, err
	}
	err = json.Unmarshal(data, &st)
	return st, err
}

// ProcCluster is a cluster of child processes: configservers, dataservers
// and proxies of the tair binary.
type ProcCluster struct {
	ConfigServers []*Proc
	DataServers   []*Proc
	Proxies       []*Proc
	Dir           string

	t      testing.TB // set by StartProcs; its Faults need it
	bridge *Bridge    // nil without ProcOptions.Links
}

// ProcOptions describe a ProcCluster.
type ProcOptions struct {
	ConfigServers int    // default 1; the others share the first's embedded etcd
	DataServers   int    // default 3
	Proxies       int    // default 1
	Copies        int    // default 2
	Buckets       int    // default 1023
	Engine        string // default "rdb"
	// ConfigServerArgs are extra flags for every configserver.
	ConfigServerArgs []string
	// DataServerArgs are extra flags for every dataserver.
	DataServerArgs []string
	ProxyArgs      []string
	// Etcd, when set, are the endpoints of an etcd all configservers use
	// (StartEtcd); else the first configserver embeds one.
	Etcd []string
	// Prepare, when set, is called with every process before its first
	// start (e.g. NetFaults.Attach, to start it in a cgroup of its own).
	Prepare func(p *Proc)
	// Links routes every dataserver's and proxy's connections to the
	// configservers, and the configservers' to an etcd given by address
	// (--etcd), through a Bridge in the test process, which Cut, Delay
	// and Heal act on (as Options.Links does in process).
	Links bool
}

// StartProcs starts a ProcCluster and waits until its table covers every
// dataserver.
func StartProcs(t testing.TB, o ProcOptions) *ProcCluster {
	t.Helper()
	// The defaults are the in-process cluster's.
	d := cluster.Options{ConfigServers: o.ConfigServers, DataServers: o.DataServers, Proxies: o.Proxies,
		Copies: o.Copies, Buckets: uint32(o.Buckets), Engine: o.Engine}.WithDefaults()
	o.ConfigServers, o.DataServers, o.Proxies = d.ConfigServers, d.DataServers, d.Proxies
	o.Copies, o.Buckets, o.Engine = d.Copies, int(d.Buckets), d.Engine
	start := func(kind string, args ...string) *Proc {
		t.Helper()
		p := NewProc(t, kind, args...)
		if o.Prepare != nil {
			o.Prepare(p)
		}
		p.Start()
		return p
	}
	pc := &ProcCluster{Dir: t.TempDir(), t: t}
	if o.Links {
		pc.bridge = NewBridge(t)
	}
	// via gives node the addresses it is to dial: with Links, the
	// bridge's links to to+"0", to+"1"... (a lone etcd is "etcd"), else
	// addrs themselves.
	via := func(node, to string, addrs []string) string {
		if pc.bridge == nil {
			return strings.Join(addrs, ",")
		}
		out := make([]string, len(addrs))
		for k, a := range addrs {
			peer := to + strconv.Itoa(k)
			if to == "etcd" && len(addrs) == 1 {
				peer = to
			}
			out[k] = pc.bridge.Link(node, peer, a).Addr()
		}
		return strings.Join(out, ",")
	}
	common := append([]string{"--copies", strconv.Itoa(o.Copies), "--buckets", strconv.Itoa(o.Buckets)}, o.ConfigServerArgs...)
	if len(o.Etcd) > 0 {
		for i := 0; i < o.ConfigServers; i++ {
			pc.ConfigServers = append(pc.ConfigServers,
				start("configserver", append([]string{"--etcd", via(CS(i), "etcd", o.Etcd)}, common...)...))
		}
	}
	for i := len(pc.ConfigServers); i < o.ConfigServers; i++ {
		if i == 0 {
			pc.ConfigServers = append(pc.ConfigServers,
				start("configserver", append([]string{"--etcd-dir", filepath.Join(pc.Dir, "etcd")}, common...)...))
			continue
		}
		first := pc.ConfigServers[0]
		var st struct {
			Etcd []string `json:"etcd_endpoints"`
		}
		resp, err := http.Get("http://" + first.HTTP + "/status")
		if err == nil {
			_ = json.NewDecoder(resp.Body).Decode(&st)
			resp.Body.Close()
		}
		if len(st.Etcd) == 0 {
			t.Fatalf("configserver /status names no etcd_endpoints")
		}
		pc.ConfigServers = append(pc.ConfigServers,
			start("configserver", append([]string{"--etcd", via(CS(i), "etcd", st.Etcd)}, common...)...))
	}
	for i := 0; i < o.DataServers; i++ {
		cs := via(DS(i), "cs", pc.ConfigServerAddrs())
		args := append([]string{"--configserver", cs, "--engine", o.Engine,
			"--dir", filepath.Join(pc.Dir, fmt.Sprintf("ds%d", i))}, o.DataServerArgs...)
		pc.DataServers = append(pc.DataServers, start("dataserver", args...))
	}
	pc.WaitNodes(t, o.DataServers, 30*time.Second)
	for i := 0; i < o.Proxies; i++ {
		cs := via(Proxy(i), "cs", pc.ConfigServerAddrs())
		pc.Proxies = append(pc.Proxies, start("proxy", append([]string{"--configserver", cs}, o.ProxyArgs...)...))
	}
	return pc
}

// ConfigServerAddrs lists the configservers' API addresses.
func (pc *ProcCluster) ConfigServerAddrs() []string {
	var out []string
	for _, p := range pc.ConfigServers {
		out = append(out, p.Addr)
	}
	return out
}

// Leader returns the configserver whose /status says it leads, or nil.
func (pc *ProcCluster) Leader() *Proc {
	for _, p := range pc.ConfigServers {
		if !p.Running() {
			continue
		}
		if st, err := p.Status(); err == nil && st.Role == "leader" {
			return p
		}
	}
	return nil
}

// Client returns a wire client of the configservers.
func (pc *ProcCluster) Client() *wire.Client { return wire.NewClient(pc.ConfigServerAddrs()...) }

// WaitNodes waits until the table names n dataservers with no move running.
func (pc *ProcCluster) WaitNodes(t testing.TB, n int, timeout time.Duration) {
	t.Helper()
	cl := pc.Client()
	testutil.Eventually(t, timeout, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		tb, err := cl.Table(ctx, 0, 0)
		return err == nil && len(tb.Nodes()) >= n && len(tb.Migrating) == 0
	}, "table never named %d dataservers", n)
}

// tail returns the last n bytes of s, cut at a line start.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[len(s)-n:]
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return s
}

// DebugDump sends SIGQUIT: a Go process prints every goroutine's stack
// and exits (for diagnosing a hang in a test).
func (p *Proc) DebugDump() { p.signal(syscall.SIGQUIT) }

// Metrics reads the process's GET /metrics (Prometheus text format) as a
// map from series, as printed (`name` or `name{label="v",...}`), to value.
func (p *Proc) Metrics() (map[string]float64, error) {
	resp, data, err := p.get("/metrics")
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	out := map[string]float64{}
	for _, line := range strings.Split(string(data), "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		out[line[:i]] = v
	}
	return out, nil
}

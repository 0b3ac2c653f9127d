package testcluster

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
)

// Direction says which packets of a process a network fault drops.
type Direction int

const (
	// In drops the packets delivered to the process's sockets (new
	// connections to it, and its peers' side of every connection).
	In Direction = 1 << iota
	// Out drops the packets its sockets send.
	Out
	// Both cuts it off entirely.
	Both = In | Out
)

func (d Direction) String() string {
	switch d {
	case In:
		return "in"
	case Out:
		return "out"
	case Both:
		return "both"
	}
	return fmt.Sprintf("Direction(%d)", int(d))
}

// netPrefix names the nftables tables and cgroups NetFaults create:
// netPrefix_<test process pid>_<n>, so that leftovers of a killed test
// process can be recognized and removed.
const netPrefix = "tairnet"

var netSeq atomic.Int64

// NetFaults partitions child processes from the network on this host
// with nftables: each process it attaches is started in a cgroup v2 of
// its own (Proc.Cgroup), and a partition is a rule in the input and/or
// output hook that drops the packets whose local socket belongs to that
// cgroup (`socket cgroupv2`), on the loopback interface only (where
// these tests' traffic goes): the rules touch nothing but the victims'
// loopback traffic. One nftables table per NetFaults (a unique name),
// deleted with its cgroups at cleanup.
type NetFaults struct {
	t     testing.TB
	mount string // the cgroup2 mount point
	rel   string // the mount point relative to /sys/fs/cgroup, as nft wants it
	name  string // table name, and prefix of the cgroups' names

	mu     sync.Mutex
	groups map[*Proc]string // absolute cgroup directory
	// rules are the "chain handle"s of the rules cutting a *Proc or a
	// TCP port (int).
	rules map[any][]string
	n     int
}

// NewNetFaults checks that nftables and cgroup v2 socket matching work
// here (root, nft, a cgroup2 mount under /sys/fs/cgroup, a probe rule),
// creates the test's table and registers its removal. Processes must be
// attached (Attach) before they start.
func NewNetFaults(t testing.TB) (*NetFaults, error) {
	t.Helper()
	return newNetFaults(t, true)
}

// NewPortFaults is NewNetFaults for nodes that share the test's process
// (an in-process cluster), which cgroups cannot tell apart: it cuts TCP
// ports (CutPort), and needs no cgroup v2.
func NewPortFaults(t testing.TB) (*NetFaults, error) {
	t.Helper()
	return newNetFaults(t, false)
}

func newNetFaults(t testing.TB, cgroups bool) (*NetFaults, error) {
	t.Helper()
	if os.Geteuid() != 0 {
		return nil, errors.New("network faults need root (nftables, cgroups)")
	}
	if _, err := exec.LookPath("nft"); err != nil {
		return nil, errors.New("nft not installed (make tools installs nftables)")
	}
	mount, err := cgroup2Mount()
	if err != nil && cgroups {
		return nil, err
	}
	rel, ok := strings.CutPrefix(mount, "/sys/fs/cgroup")
	if !ok && cgroups {
		return nil, fmt.Errorf("cgroup2 is mounted at %s, not under /sys/fs/cgroup where nft looks for cgroups", mount)
	}
	rel = strings.TrimPrefix(rel, "/")
	sweepNetFaults(mount)
	n := &NetFaults{
		t:      t,
		mount:  mount,
		rel:    rel,
		name:   fmt.Sprintf("%s_%d_%d", netPrefix, os.Getpid(), netSeq.Add(1)),
		groups: map[*Proc]string{},
		rules:  map[any][]string{},
	}
	if _, err := nft("add", "table", "inet", n.name); err != nil {
		return nil, err
	}
	t.Cleanup(n.cleanup)
	for _, c := range []struct{ chain, hook string }{{"in", "input"}, {"out", "output"}} {
		if _, err := nft("add", "chain", "inet", n.name, c.chain,
			"{ type filter hook "+c.hook+" priority 0; policy accept; }"); err != nil {
			return nil, err
		}
	}
	if !cgroups {
		return n, nil
	}
	// A probe rule on a cgroup of our own: the kernel and nft must both
	// know `socket cgroupv2`.
	probe, err := n.newGroup("probe")
	if err != nil {
		return nil, err
	}
	h, err := n.addRule("in", probe)
	if err != nil {
		return nil, fmt.Errorf("nftables cannot match sockets by cgroup v2: %w", err)
	}
	if _, err := nft("delete", "rule", "inet", n.name, "in", "handle", h); err != nil {
		return nil, err
	}
	return n, nil
}

// RequireNetFaults returns NewNetFaults, or skips the test with the reason
// when network faults cannot be made here; under CI (CI set) it fails.
func RequireNetFaults(t testing.TB) *NetFaults {
	t.Helper()
	n, err := NewNetFaults(t)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("network faults unavailable under CI: %v", err)
		}
		t.Skipf("network faults unavailable: %v", err)
	}
	return n
}

// Attach gives p a cgroup of its own, which every later start of p
// enters (Proc.Cgroup): call it before p's first start
// (ProcOptions.Prepare). A socket belongs to the cgroup its process was
// in when it was created, so a process moved later would keep its old
// sockets out of reach.
func (n *NetFaults) Attach(p *Proc) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, ok := n.groups[p]; ok {
		return nil
	}
	if p.Running() {
		return fmt.Errorf("netfaults: %s %s already runs; attach before it starts", p.Kind, p.Addr)
	}
	n.n++
	dir, err := n.newGroup(strconv.Itoa(n.n))
	if err != nil {
		return err
	}
	n.groups[p] = dir
	p.Cgroup = dir
	return nil
}

// Cut partitions p: the packets of direction d of its sockets are
// dropped until Heal. Cutting an already cut process adds to its cut.
func (n *NetFaults) Cut(p *Proc, d Direction) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	dir, ok := n.groups[p]
	if !ok {
		return fmt.Errorf("netfaults: %s %s is not attached", p.Kind, p.Addr)
	}
	for _, c := range []struct {
		d     Direction
		chain string
	}{{In, "in"}, {Out, "out"}} {
		if d&c.d == 0 {
			continue
		}
		h, err := n.addRule(c.chain, dir)
		if err != nil {
			return err
		}
		n.rules[p] = append(n.rules[p], c.chain+" "+h)
	}
	return nil
}

// Heal removes every rule cutting p.
func (n *NetFaults) Heal(p *Proc) error { return n.heal(p) }

// CutPort cuts a listener off: the loopback packets of direction d of
// TCP port port are dropped (In: to it, new connections and its peers'
// side of every connection made to it; Out: what its end of those
// connections sends) until HealPort. The connections its process makes
// to others (from other ports) pass.
func (n *NetFaults) CutPort(port int, d Direction) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, c := range []struct {
		d           Direction
		chain, what string
	}{{In, "in", "dport"}, {Out, "out", "sport"}} {
		if d&c.d == 0 {
			continue
		}
		iface := "iifname"
		if c.chain == "out" {
			iface = "oifname"
		}
		out, err := nft("--echo", "--handle", "add", "rule", "inet", n.name, c.chain, iface, `"lo"`,
			"tcp", c.what, strconv.Itoa(port), "drop")
		if err != nil {
			return err
		}
		m := handleRE.FindStringSubmatch(out)
		if m == nil {
			return fmt.Errorf("netfaults: no rule handle in nft's answer %q", out)
		}
		n.rules[port] = append(n.rules[port], c.chain+" "+m[1])
	}
	return nil
}

// HealPort removes every rule cutting port.
func (n *NetFaults) HealPort(port int) error { return n.heal(port) }

func (n *NetFaults) heal(key any) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	var errs []error
	for _, r := range n.rules[key] {
		chain, h, _ := strings.Cut(r, " ")
		if _, err := nft("delete", "rule", "inet", n.name, chain, "handle", h); err != nil {
			errs = append(errs, err)
		}
	}
	delete(n.rules, key)
	return errors.Join(errs...)
}

// Table is the name of the nftables table (family inet).
func (n *NetFaults) Table() string { return n.name }

func (n *NetFaults) newGroup(suffix string) (string, error) {
	dir := filepath.Join(n.mount, n.name+"_"+suffix)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return "", fmt.Errorf("netfaults: cgroup: %w", err)
	}
	return dir, nil
}

var handleRE = regexp.MustCompile(`# handle (\d+)`)

// addRule adds a drop rule for the sockets of cgroup dir to chain and
// returns its handle.
func (n *NetFaults) addRule(chain, dir string) (string, error) {
	path := strings.TrimPrefix(filepath.Join(n.rel, filepath.Base(dir)), "/")
	level := strconv.Itoa(strings.Count(strings.TrimPrefix(dir, n.mount), "/"))
	// Loopback only: the tests' traffic, and nothing else of the host.
	iface := "iifname"
	if chain == "out" {
		iface = "oifname"
	}
	out, err := nft("--echo", "--handle", "add", "rule", "inet", n.name, chain, iface, `"lo"`,
		"socket", "cgroupv2", "level", level, strconv.Quote(path), "drop")
	if err != nil {
		return "", err
	}
	m := handleRE.FindStringSubmatch(out)
	if m == nil {
		return "", fmt.Errorf("netfaults: no rule handle in nft's answer %q", out)
	}
	return m[1], nil
}

func (n *NetFaults) cleanup() {
	if _, err := nft("delete", "table", "inet", n.name); err != nil {
		n.t.Errorf("netfaults: %v", err)
	}
	if n.mount == "" {
		return
	}
	matches, _ := filepath.Glob(filepath.Join(n.mount, n.name+"_*"))
	for _, dir := range matches {
		if err := removeCgroup(n.mount, dir); err != nil {
			n.t.Errorf("netfaults: %v", err)
		}
	}
}

// removeCgroup moves what still runs in dir to the root cgroup and
// removes dir.
func removeCgroup(mount, dir string) error {
	if data, err := os.ReadFile(filepath.Join(dir, "cgroup.procs")); err == nil {
		for _, pid := range strings.Fields(string(data)) {
			_ = os.WriteFile(filepath.Join(mount, "cgroup.procs"), []byte(pid), 0)
		}
	}
	if err := syscall.Rmdir(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove cgroup %s: %w", dir, err)
	}
	return nil
}

// sweepNetFaults removes the tables and cgroups left by test processes
// that died before their cleanup.
func sweepNetFaults(mount string) {
	// mount is "" without cgroup v2: only tables to sweep.
	dead := func(name string) bool {
		parts := strings.Split(name, "_")
		if len(parts) < 3 || parts[0] != netPrefix {
			return false
		}
		pid, err := strconv.Atoi(parts[1])
		if err != nil || pid == os.Getpid() {
			return false
		}
		return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
	}
	if out, err := nft("list", "tables", "inet"); err == nil {
		for _, line := range strings.Split(out, "\n") {
			if f := strings.Fields(line); len(f) == 3 && f[0] == "table" && dead(f[2]) {
				_, _ = nft("delete", "table", "inet", f[2])
			}
		}
	}
	if mount == "" {
		return
	}
	matches, _ := filepath.Glob(filepath.Join(mount, netPrefix+"_*"))
	for _, dir := range matches {
		if dead(filepath.Base(dir)) {
			_ = removeCgroup(mount, dir)
		}
	}
}

// cgroup2Mount finds where the cgroup v2 hierarchy is mounted.
func cgroup2Mount() (string, error) {
	f, err := os.Open("/proc/self/mounts")
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 3 && fields[2] == "cgroup2" {
			return fields[1], nil
		}
	}
	return "", errors.New("no cgroup2 hierarchy mounted")
}

func nft(args ...string) (string, error) {
	out, err := exec.Command("nft", args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("nft %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

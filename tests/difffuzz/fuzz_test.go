package difffuzz

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tairkv/tair/internal/command"
	"github.com/tairkv/tair/internal/testutil"
)

func itoa(i int) string { return strconv.Itoa(i) }

// --- the cluster -----------------------------------------------------------

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// tairBin is TAIR_DIFFFUZZ_BIN, or the tair binary built once into a
// temporary directory.
func tairBin(t testing.TB) string {
	if p := os.Getenv("TAIR_DIFFFUZZ_BIN"); p != "" {
		_, _ = os.Stat(p) // go test's cache then keys on the binary
		return p
	}
	trackSources()
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "difffuzz-bin")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "tair")
		cmd := exec.Command("go", "build", "-o", binPath, "github.com/tairkv/tair/cmd/tair")
		out, err := cmd.CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// trackSources stats every Go source of the module: go test caches a
// result by the files the test opened or statted, and the binary this
// test builds and runs is not among its imports, so that a change to
// dataserver/exec would else leave a cached PASS.
func trackSources() {
	_ = filepath.WalkDir("../..", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if !d.IsDir() && (strings.HasSuffix(path, ".go") || d.Name() == "go.mod" || d.Name() == "go.sum") {
			_, _ = os.Stat(path)
		}
		return nil
	})
}

// tairUp is a `tair up` child process.
type tairUp struct {
	engine string
	addr   string
	cmd    *exec.Cmd
	log    *testutil.LogBuffer
	done   chan struct{}
}

func startTair(t testing.TB, engine string) *tairUp {
	t.Helper()
	// tair up picks its free ports as this test does, by binding and
	// closing, so another process on the machine can take one in between;
	// such a start is tried again on new ports rather than failing the test.
	for attempt := 1; ; attempt++ {
		u, err := tryStartTair(t, engine)
		if err == nil {
			t.Cleanup(u.stop)
			return u
		}
		u.stop()
		if attempt >= 3 || !strings.Contains(u.log.String(), "address already in use") {
			t.Fatal(err)
		}
		t.Logf("tair up (%s) lost a port to another process; starting again on new ports", engine)
	}
}

func tryStartTair(t testing.TB, engine string) (*tairUp, error) {
	t.Helper()
	port := testutil.FreePort(t)
	u := &tairUp{engine: engine, addr: "127.0.0.1:" + itoa(port), log: &testutil.LogBuffer{}, done: make(chan struct{})}
	// No --dir: with one, tair up takes the stable ports from 5100 (to
	// restart on it), which another cluster on this machine may hold;
	// without, any free ports and a temporary directory it removes.
	u.cmd = exec.Command(tairBin(t), "up", "--engine", engine, "--port", itoa(port), "--dataservers", "2",
		"--copies", "1", "--buckets", "64", "--log-level", "warn")
	u.cmd.Stdout = u.log
	u.cmd.Stderr = u.log
	if err := u.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = u.cmd.Wait(); close(u.done) }()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if u.exited() {
			return u, fmt.Errorf("tair up (%s) exited:\n%s", engine, u.log.String())
		}
		if u.ready() {
			return u, nil
		}
		if time.Now().After(deadline) {
			return u, fmt.Errorf("tair up (%s) did not become ready:\n%s", engine, u.log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (u *tairUp) ready() bool {
	c, err := dial("tair", u.addr)
	if err != nil {
		return false
	}
	defer c.close()
	r, err := c.do([]string{"SET", "{t}probe", "1"})
	return err == nil && r == "+OK\r\n"
}

func (u *tairUp) exited() bool {
	select {
	case <-u.done:
		return true
	default:
		return false
	}
}

func (u *tairUp) stop() {
	if u.exited() {
		return
	}
	_ = u.cmd.Process.Signal(os.Interrupt)
	select {
	case <-u.done:
	case <-time.After(15 * time.Second):
		_ = u.cmd.Process.Kill()
		<-u.done
	}
}

// --- running a sequence ----------------------------------------------------

// diff is the first difference of a sequence.
type diff struct {
	step         int // index into the sequence
	cmd          []string
	redis, tair  string // the compared views
	broken       bool   // tair's connection failed (crash or hang): fatal
	detail       string
	accepted     []string // normalisation reasons used
	normalisedAt []int
}

func (d *diff) String() string {
	if d.broken {
		return fmt.Sprintf("step %d %s: tair broke: %s", d.step, formatCmd(d.cmd), d.detail)
	}
	return fmt.Sprintf("step %d %s:\n  redis: %s\n  tair:  %s", d.step, formatCmd(d.cmd), d.redis, d.tair)
}

// pair is one redis-server connection and one tair proxy connection.
type pair struct {
	engine string
	redis  *conn
	tair   *conn
	up     *tairUp
	// normalised counts the differences each rule accepted (nil: not
	// counted, as while shrinking)
	normalised map[string]int
}

// reset empties both sides.
func (p *pair) reset() error {
	for _, c := range []*conn{p.redis, p.tair} {
		// a sequence may have ended inside MULTI (the shrinker drops EXEC)
		if _, err := c.do([]string{"DISCARD"}); err != nil {
			return err
		}
		if _, err := c.do([]string{"HELLO", "2"}); err != nil { // back to RESP2
			return err
		}
		// scripts and function libraries outlive FLUSHALL
		for _, cmd := range [][]string{{"FLUSHALL"}, {"SCRIPT", "FLUSH"}, {"FUNCTION", "FLUSH"}} {
			r, err := c.do(cmd)
			// tair keeps scripts with its configserver, whose leader
			// may be a moment away on a loaded machine: try again
			for try := 0; err == nil && r != "+OK\r\n" && cmd[0] != "FLUSHALL" && try < 20; try++ {
				time.Sleep(250 * time.Millisecond)
				r, err = c.do(cmd)
			}
			if err != nil {
				return err
			}
			if r != "+OK\r\n" {
				return fmt.Errorf("%s: %s: %q", c.name, strings.Join(cmd, " "), r)
			}
		}
	}
	return nil
}

// doMode runs one command on c, following every SCAN page for the scan
// modes.
func doMode(c *conn, cmd []string, m mode) (node, error) {
	raw, err := c.do(cmd)
	if err != nil {
		return node{}, err
	}
	n, _ := parse(raw)
	if (m != scanAll && m != scanPairs) || n.isErr() || len(n.kids) != 2 || cmd[cursorAt(cmd)] != "0" {
		return n, nil
	}
	all := node{kind: '*', kids: []node{}}
	for i := 0; ; i++ {
		all.kids = append(all.kids, n.kids[1].kids...)
		cur := n.kids[0].s
		if cur == "0" {
			return all, nil
		}
		if i > 10000 {
			return node{kind: '-', s: "difffuzz: scan did not end"}, nil
		}
		next := append([]string(nil), cmd...)
		next[cursorAt(cmd)] = cur
		raw, err := c.do(next)
		if err != nil {
			return node{}, err
		}
		n, _ = parse(raw)
		if n.isErr() || len(n.kids) != 2 {
			return n, nil
		}
	}
}

func cursorAt(cmd []string) int {
	if strings.EqualFold(cmd[0], "scan") {
		return 1
	}
	if len(cmd) < 3 {
		return 0
	}
	return 2
}

// run runs seq on both sides from empty and returns the first difference
// not accepted by the normalisation table (nil: none).
func (p *pair) run(seq [][]string) (*diff, error) {
	if err := p.reset(); err != nil {
		return nil, err
	}
	var acc []string
	var at []int
	inMulti := false // redis-server's connection is in MULTI: no probes
	var queued [][]string
	for i, cmd := range seq {
		m := modeOf(cmd)
		if len(cmd) > 0 && m != exact && (m == scanAll || m == scanPairs) && cursorAt(cmd) == 0 {
			m = exact
		}
		var pre node
		lc := append([]string{strings.ToLower(cmd[0])}, cmd[1:]...)
		if lx := lexOf(lc); lx != nil && !inMulti {
			raw, err := p.redis.do([]string{"ZRANGE", lexKey(lx), "0", "-1", "WITHSCORES"})
			if err != nil {
				return nil, fmt.Errorf("redis-server: %v", err)
			}
			pre, _ = parse(raw)
		}
		rn, err := doMode(p.redis, cmd, m)
		if err != nil {
			return nil, fmt.Errorf("redis-server: %v", err)
		}
		tn, err := doMode(p.tair, cmd, m)
		if err != nil {
			detail := err.Error()
			if p.up != nil && p.up.exited() {
				detail += "\n tair up exited:\n" + p.up.log.String()
			}
			return &diff{step: i, cmd: cmd, broken: true, detail: detail}, nil
		}
		var txn [][]string // the commands an EXEC ran
		switch lc[0] {
		case "multi":
			if !inMulti && rn.kind == '+' {
				inMulti, queued = true, nil
			}
		case "exec", "discard":
			inMulti, txn, queued = false, queued, nil
		default:
			if inMulti {
				queued = append(queued, cmd)
			}
		}
		rv, tv := view(m, rn), view(m, tn)
		if rv == tv {
			continue
		}
		ask := func(args ...string) node {
			if inMulti {
				return node{kind: '-', s: "difffuzz: no probe inside MULTI"}
			}
			raw, err := p.redis.do(args)
			if err != nil {
				return node{kind: '-', s: err.Error()}
			}
			n, _ := parse(raw)
			return n
		}
		ok, why, resync := normalise(seen{cmd: cmd, engine: p.engine, redis: rn, tair: tn, ask: ask, pre: pre})
		if !ok && lc[0] == "exec" {
			ok, why, resync = normaliseExec(txn, p.engine, rn, tn)
		}
		if !ok {
			return &diff{step: i, cmd: cmd, redis: rv, tair: tv, accepted: acc, normalisedAt: at}, nil
		}
		acc = append(acc, why)
		at = append(at, i)
		if p.normalised != nil {
			p.normalised[why]++
		}
		if resync {
			if err := p.reset(); err != nil {
				return &diff{step: i, cmd: []string{"FLUSHALL"}, broken: true, detail: err.Error()}, nil
			}
			inMulti = false
		}
	}
	return nil, nil
}

// normaliseExec accepts an EXEC whose replies differ only as the rules
// accept for the commands it ran.
func normaliseExec(txn [][]string, engine string, rn, tn node) (bool, string, bool) {
	if rn.kind != '*' || tn.kind != '*' || len(rn.kids) != len(txn) || len(tn.kids) != len(txn) {
		return false, "", false
	}
	var whys []string
	resync := false
	for k, cmd := range txn {
		if rn.kids[k].String() == tn.kids[k].String() {
			continue
		}
		ok, why, rs := normalise(seen{cmd: cmd, engine: engine, redis: rn.kids[k], tair: tn.kids[k],
			ask: func(...string) node { return node{kind: '-', s: "difffuzz: no probe inside EXEC"} }})
		if !ok {
			return false, "", false
		}
		whys = append(whys, why)
		if rs {
			// the data are apart from here on: the transaction's
			// later replies are not comparable
			return true, strings.Join(whys, "; "), true
		}
	}
	return true, strings.Join(whys, "; "), resync
}

// --- shrinking ---------------------------------------------------------------

// shrink reduces a failing sequence (delta debugging: drop chunks of
// commands, then single commands, then simplify arguments) while it still
// fails at a command of the same name.
func (p *pair) shrink(seq [][]string, d *diff, budget time.Duration) ([][]string, *diff) {
	deadline := time.Now().Add(budget)
	counts := p.normalised
	p.normalised = nil
	defer func() { p.normalised = counts }()
	sig := d.signature()
	fails := func(s [][]string) *diff {
		if time.Now().After(deadline) {
			return nil
		}
		nd, err := p.run(s)
		if err != nil || nd == nil || nd.broken || nd.signature() != sig {
			return nil
		}
		return nd
	}
	seq = seq[:d.step+1]
	// ddmin over commands
	for n := 2; len(seq) >= 2; {
		chunk := (len(seq) + n - 1) / n
		reduced := false
		for start := 0; start < len(seq); start += chunk {
			end := min(start+chunk, len(seq))
			cand := append(append([][]string(nil), seq[:start]...), seq[end:]...)
			if len(cand) == 0 {
				continue
			}
			if nd := fails(cand); nd != nil {
				seq, d = cand[:nd.step+1], nd
				n = max(n-1, 2)
				reduced = true
				break
			}
		}
		if !reduced {
			if chunk == 1 {
				break
			}
			n = min(n*2, len(seq))
		}
	}
	// simplify arguments: drop each (past the name), then replace by short values
	for i := 0; i < len(seq); i++ {
		for j := len(seq[i]) - 1; j >= 1; j-- {
			cand := cloneSeq(seq)
			cand[i] = append(append([]string(nil), cand[i][:j]...), cand[i][j+1:]...)
			if nd := fails(cand); nd != nil {
				seq, d = cand[:nd.step+1], nd
			}
		}
		keys := map[int]bool{}
		if spec := command.Lookup([]byte(seq[i][0])); spec != nil {
			for _, k := range spec.KeyIndexes(toBytes(seq[i])) {
				keys[k] = true
			}
		}
		for j := 1; j < len(seq[i]); j++ {
			simples := []string{"0", "1", "a"}
			if keys[j] {
				simples = []string{"{t}a"}
			}
			for _, simple := range simples {
				if seq[i][j] == simple || len(seq[i][j]) <= len(simple) && seq[i][j] < simple {
					continue
				}
				cand := cloneSeq(seq)
				cand[i][j] = simple
				if nd := fails(cand); nd != nil {
					seq, d = cand[:nd.step+1], nd
					break
				}
			}
		}
	}
	return seq, d
}

func toBytes(s []string) [][]byte {
	out := make([][]byte, len(s))
	for i, a := range s {
		out[i] = []byte(a)
	}
	return out
}

// signature is what a shrunk sequence must keep: the command's name and
// the kind of both replies (an error's first word).
func (d *diff) signature() string {
	first := func(v string) string {
		if i := strings.IndexAny(v, " ["); i >= 0 {
			return v[:i]
		}
		return v
	}
	return strings.ToLower(d.cmd[0]) + "|" + first(d.redis) + "|" + first(d.tair)
}

func cloneSeq(s [][]string) [][]string {
	out := make([][]string, len(s))
	for i, c := range s {
		out[i] = append([]string(nil), c...)
	}
	return out
}

// --- the regression format -------------------------------------------------

// formatCmd writes one command: bare words when safe, else Go-quoted.
func formatCmd(cmd []string) string {
	parts := make([]string, len(cmd))
	for i, a := range cmd {
		if a != "" && !strings.ContainsAny(a, " \"\\#") && strconv.CanBackquote(a) && !strings.ContainsAny(a, "`") && isPrint(a) {
			parts[i] = a
		} else {
			parts[i] = strconv.Quote(a)
		}
	}
	return strings.Join(parts, " ")
}

func isPrint(s string) bool {
	for _, c := range []byte(s) {
		if c < 0x21 || c > 0x7e {
			return false
		}
	}
	return true
}

func formatSeq(engine string, seq [][]string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# engine: %s\n", engine)
	for _, c := range seq {
		b.WriteString(formatCmd(c))
		b.WriteByte('\n')
	}
	return b.String()
}

// parseLine splits one line of the regression format.
func parseLine(l string) ([]string, error) {
	var out []string
	for {
		l = strings.TrimLeft(l, " \t")
		if l == "" {
			return out, nil
		}
		if l[0] == '"' {
			end := 1
			for ; end < len(l); end++ {
				if l[end] == '\\' {
					end++
					continue
				}
				if l[end] == '"' {
					break
				}
			}
			if end >= len(l) {
				return nil, fmt.Errorf("unterminated quote")
			}
			s, err := strconv.Unquote(l[:end+1])
			if err != nil {
				return nil, err
			}
			out = append(out, s)
			l = l[end+1:]
			continue
		}
		sp := strings.IndexAny(l, " \t")
		if sp < 0 {
			sp = len(l)
		}
		out = append(out, l[:sp])
		l = l[sp:]
	}
}

// readRegress reads a regression file: its engines (none: all) and its
// commands.
func readRegress(path string) (engines []string, seq [][]string, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(l, "# engine:") {
			for _, e := range strings.Split(strings.TrimPrefix(l, "# engine:"), ",") {
				if e = strings.TrimSpace(e); e != "" {
					engines = append(engines, e)
				}
			}
			continue
		}
		if l == "" || l[0] == '#' {
			continue
		}
		cmd, err := parseLine(l)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %q: %v", path, l, err)
		}
		seq = append(seq, cmd)
	}
	return engines, seq, sc.Err()
}

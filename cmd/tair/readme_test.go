package main

import (
	"context"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tairkv/tair/cluster"
	"github.com/tairkv/tair/configserver"
	"github.com/tairkv/tair/internal/testcluster"
	"github.com/tairkv/tair/internal/testutil"
	"github.com/tairkv/tair/internal/wire"
)

// readmeCmd is one `tair ctl` command the README shows: in a session
// block ("$ tair ctl ..." and the output below it, where "..." stands for
// any lines), or in a code span of the prose (no output shown).
type readmeCmd struct {
	line   int      // 1-based line in README.md
	args   []string // after "tair ctl", comments dropped
	output []string // the lines shown below it (session blocks only)
	shown  bool     // output is shown
}

// readmeCtlCommands finds README's `tair ctl` commands, in order.
func readmeCtlCommands(t *testing.T, readme string) []readmeCmd {
	t.Helper()
	var cmds []readmeCmd
	lines := strings.Split(readme, "\n")
	parse := func(n int, text string) readmeCmd {
		args, err := splitArgs(strings.TrimPrefix(text, "tair ctl"))
		if err != nil {
			t.Fatalf("README.md:%d: %q: %v", n, text, err)
		}
		// A shell comment ends the command.
		for i, a := range args {
			if strings.HasPrefix(a, "#") {
				args = args[:i]
				break
			}
		}
		return readmeCmd{line: n, args: args}
	}
	var prose []string // prose lines, with their line numbers below
	var proseAt []int
	inFence := false
	var cur *readmeCmd
	for i, l := range lines {
		n := i + 1
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			inFence = !inFence
			if cur != nil {
				cmds = append(cmds, *cur)
				cur = nil
			}
			continue
		}
		if !inFence {
			prose = append(prose, l)
			proseAt = append(proseAt, n)
			continue
		}
		switch {
		case strings.HasPrefix(l, "$ "):
			if cur != nil {
				cmds = append(cmds, *cur)
				cur = nil
			}
			if text := strings.TrimPrefix(l, "$ "); strings.HasPrefix(text, "tair ctl ") || text == "tair ctl" {
				c := parse(n, text)
				c.shown = true
				cur = &c
			}
		case strings.HasPrefix(l, "tair ctl "):
			cmds = append(cmds, parse(n, l))
		case cur != nil:
			cur.output = append(cur.output, l)
		}
	}
	// Code spans of the prose (one may run over a line break).
	text := strings.Join(prose, "\n")
	for _, m := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatchIndex(text, -1) {
		span := strings.Join(strings.Fields(text[m[2]:m[3]]), " ")
		if !strings.HasPrefix(span, "tair ctl ") {
			continue
		}
		at := proseAt[strings.Count(text[:m[0]], "\n")]
		c := parse(at, span)
		// In document order among the session's commands.
		k := len(cmds)
		for k > 0 && cmds[k-1].line > at {
			k--
		}
		cmds = slices.Insert(cmds, k, c)
	}
	return cmds
}

// readmeLinePattern makes a regexp of a line of output the README shows:
// the README's dataserver addresses become the test cluster's, other
// numbers (versions, counts, percentages, rates) match any number, and
// runs of blanks any run of blanks.
func readmeLinePattern(line string, addrs map[string]string) *regexp.Regexp {
	token := regexp.MustCompile(`\d+\.\d+\.\d+\.\d+:\d+|\d+(\.\d+)?[kM]?|\s+`)
	var b strings.Builder
	b.WriteString("^")
	last := 0
	for _, m := range token.FindAllStringIndex(line, -1) {
		b.WriteString(regexp.QuoteMeta(line[last:m[0]]))
		tok := line[m[0]:m[1]]
		switch {
		case addrs[tok] != "":
			b.WriteString(regexp.QuoteMeta(addrs[tok]))
		case strings.TrimSpace(tok) == "":
			b.WriteString(`\s+`)
		default:
			b.WriteString(`\d+(\.\d+)?[kM]?`)
		}
		last = m[1]
	}
	b.WriteString(regexp.QuoteMeta(line[last:]))
	b.WriteString(`\s*$`)
	return regexp.MustCompile(b.String())
}

// matchShown reports whether out has the lines shown ("..." = any lines).
func matchShown(shown, out []string, addrs map[string]string) bool {
	pats := make([]*regexp.Regexp, len(shown))
	for i, l := range shown {
		if l != "..." {
			pats[i] = readmeLinePattern(l, addrs)
		}
	}
	memo := map[[2]int]bool{}
	var match func(i, j int) bool
	match = func(i, j int) bool {
		key := [2]int{i, j}
		if v, ok := memo[key]; ok {
			return v
		}
		var ok bool
		switch {
		case i == len(pats):
			ok = j == len(out)
		case pats[i] == nil:
			for k := j; k <= len(out) && !ok; k++ {
				ok = match(i+1, k)
			}
		default:
			ok = j < len(out) && pats[i].MatchString(out[j]) && match(i+1, j+1)
		}
		memo[key] = ok
		return ok
	}
	return match(0, 0)
}

// TestReadmeCtl runs every `tair ctl` command README.md shows, in its
// order, against an in-process cluster, as written (the README's
// dataserver addresses, from its `tair ctl nodes`, mapped onto the
// cluster's): each must succeed and print what the README shows, numbers
// aside. So the README cannot go stale.
func TestReadmeCtl(t *testing.T) {
	data, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	cmds := readmeCtlCommands(t, string(data))
	t.Chdir(t.TempDir()) // where the README's backup goes
	shown := 0
	for _, c := range cmds {
		if c.shown {
			shown++
		}
	}
	if shown < 10 {
		t.Fatalf("README.md shows %d `tair ctl` commands with their output; want its ctl session", shown)
	}

	c := testcluster.New(t, testcluster.Options{Options: cluster.Options{
		DataServers: 3, Copies: 2, Buckets: 64,
		ConfigServer: func(_ int, cfg *configserver.Config) { cfg.MovesPerNode = 8 },
	}})
	cs := strings.Join(c.ConfigServerAddrs(), ",")
	proxy := c.Proxies[0].Addr()
	var ds []string
	for _, d := range c.DataServers {
		ds = append(ds, d.Addr())
	}
	slices.Sort(ds)
	tb := c.Table()
	testutil.Eventually(t, 10*time.Second, func() bool {
		var list []wire.NodeStatus
		decodeJSON(t, ctl(t, cs, "nodes", "--json"), &list)
		for _, n := range list {
			if n.TableVersion != tb.Version || n.HeldMasters != n.Masters || n.HeldSlaves != n.Slaves || n.Health != "ok" {
				return false
			}
		}
		return len(list) == 3
	}, "the nodes never reported table %d", tb.Version)

	// The README's dataservers are those its `tair ctl nodes` lists, in
	// its order: the cluster's, sorted.
	addrs := map[string]string{}
	addrRE := regexp.MustCompile(`^\d+\.\d+\.\d+\.\d+:\d+`)
	for _, c := range cmds {
		if len(c.args) == 1 && c.args[0] == "nodes" && c.shown {
			for _, l := range c.output {
				if a := addrRE.FindString(l); a != "" && addrs[a] == "" {
					if len(addrs) == len(ds) {
						t.Fatalf("README.md:%d lists more dataservers than the test's %d", c.line, len(ds))
					}
					addrs[a] = ds[len(addrs)]
				}
			}
		}
	}

	for _, rc := range cmds {
		args := slices.Clone(rc.args)
		for i, a := range args {
			if addrRE.MatchString(a) {
				if addrs[a] == "" {
					t.Fatalf("README.md:%d: %s is no dataserver its `tair ctl nodes` lists", rc.line, a)
				}
				args[i] = addrs[a]
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		out, err := ctlRun(ctx, nil, cs, append([]string{"--proxy", proxy}, args...)...)
		cancel()
		name := "tair ctl " + strings.Join(rc.args, " ")
		if err != nil {
			t.Fatalf("README.md:%d: %s: %v\n%s", rc.line, name, err, out)
		}
		if rc.shown && !matchShown(rc.output, strings.Split(strings.TrimSuffix(out, "\n"), "\n"), addrs) {
			t.Fatalf("README.md:%d: %s printed\n%s\nwhich is not what the README shows:\n%s", rc.line, name, out, strings.Join(rc.output, "\n"))
		}
		t.Logf("README.md:%d: %s: ok", rc.line, name)
	}
}

// The README's parser and matcher on a README of their own.
func TestReadmeParse(t *testing.T) {
	readme := "Intro `tair ctl status` and `tair ctl\nhooks set a,b` but not `tair ctl` or `hooks on x`.\n" +
		"```\n$ redis-cli -p 6379 get k\n\"v\"\n$ tair ctl shell -l 'put k \"a b\"'   # a comment\nOK\n" +
		"$ tair ctl nodes\nADDR\n10.0.0.1:5191  x\n...\nend 7\n```\n" +
		"```\ntair ctl table\n```\nLast `tair ctl node drain 10.0.0.1:5191 --wait`.\n"
	cmds := readmeCtlCommands(t, readme)
	var got []string
	for _, c := range cmds {
		got = append(got, strings.Join(c.args, "|"))
	}
	want := []string{"status", "hooks|set|a,b", `shell|-l|put k "a b"`, "nodes", "table", "node|drain|10.0.0.1:5191|--wait"}
	if !slices.Equal(got, want) {
		t.Fatalf("commands %q, want %q", got, want)
	}
	if c := cmds[3]; !c.shown || c.line != 8 || !slices.Equal(c.output, []string{"ADDR", "10.0.0.1:5191  x", "...", "end 7"}) {
		t.Fatalf("nodes: %+v", c)
	}
	if cmds[2].output[0] != "OK" || cmds[4].shown || cmds[0].line != 1 || cmds[1].line != 1 || cmds[4].line != 15 || cmds[5].line != 17 {
		t.Fatalf("commands: %+v", cmds)
	}
	addrs := map[string]string{"10.0.0.1:5191": "127.0.0.1:40001"}
	shown := cmds[3].output
	for _, c := range []struct {
		out string
		ok  bool
	}{
		{"ADDR\n127.0.0.1:40001 x\nend 12", true},
		{"ADDR\n127.0.0.1:40001    x\na\nb\nend 1.5k", true},
		{"ADDR\n127.0.0.1:40002 x\nend 12", false}, // another address
		{"ADDR\n127.0.0.1:40001 y\nend 12", false},
		{"ADDR\n127.0.0.1:40001 x\nend 12\nmore", false},
		{"ADDR\nextra\n127.0.0.1:40001 x\nend 12", false},
		{"ADDR\n127.0.0.1:40001 x\nend", false},
	} {
		if got := matchShown(shown, strings.Split(c.out, "\n"), addrs); got != c.ok {
			t.Errorf("matchShown(%q) = %v, want %v", c.out, got, c.ok)
		}
	}
}

package main

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tairkv/tair/cluster"
	"github.com/tairkv/tair/configserver"
	"github.com/tairkv/tair/internal/testcluster"
	"github.com/tairkv/tair/internal/testutil"
)

// ctl runs `tair ctl --configserver cs args...` in-process and returns
// what it printed.
func ctl(t *testing.T, cs string, args ...string) string {
	t.Helper()
	out, err := ctlErr(cs, args...)
	if err != nil {
		t.Fatalf("ctl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func ctlErr(cs string, args ...string) (string, error) {
	cmd := ctlCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(append([]string{"--configserver", cs}, args...))
	err := cmd.Execute()
	return out.String(), err
}

func wantContains(t *testing.T, out string, frags ...string) {
	t.Helper()
	for _, f := range frags {
		if !strings.Contains(out, f) {
			t.Fatalf("output lacks %q:\n%s", f, out)
		}
	}
}

// TestCtl runs the ctl subcommands against an in-process cluster (three
// dataservers, two copies, 64 buckets) and checks what they print.
func TestCtl(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{Options: cluster.Options{
		DataServers: 3, Copies: 2, Buckets: 64,
		ConfigServer: func(_ int, cfg *configserver.Config) { cfg.MovesPerNode = 8 },
	}})
	cs := strings.Join(c.ConfigServerAddrs(), ",")
	tb := c.Table()
	var ds []string
	for _, d := range c.DataServers {
		ds = append(ds, d.Addr())
	}
	slices.Sort(ds)

	// status: the summary, column for column.
	wantContains(t, ctl(t, cs, "status"),
		fmt.Sprintf("table version   %d\nbuckets         64\ncopies          2\n", tb.Version),
		"dataservers     3 alive of 3\nlost copies     0\n",
		"migrations      0 running, 0 pending, 0/0 done, paused=false\n",
		"under-replicated 0 buckets\n")

	// table: cst_monitor's layout, a header then bucket, master, slaves.
	out := ctl(t, cs, "table")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if lines[0] != fmt.Sprintf("table version %d, 64 buckets, 2 copies", tb.Version) {
		t.Fatalf("first line %q", lines[0])
	}
	if lines[1] != "bucket  master                 slaves" {
		t.Fatalf("header %q", lines[1])
	}
	if len(lines) != 2+64 {
		t.Fatalf("%d lines, want 2 + 64 buckets:\n%s", len(lines), out)
	}
	for _, b := range []int{0, 63} {
		m, s := tb.Serving[b][0], tb.Serving[b][1]
		want := strconv.Itoa(b) + strings.Repeat(" ", 8-len(strconv.Itoa(b))) + m + strings.Repeat(" ", 23-len(m)) + s
		if lines[2+b] != want {
			t.Fatalf("bucket %d row %q, want %q", b, lines[2+b], want)
		}
	}

	// nodes: a header and one line per dataserver, in aligned columns
	// (read by the header's offsets: an empty zone leaves a gap).
	nodes := func() map[string]map[string]string {
		t.Helper()
		out := ctl(t, cs, "nodes")
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		head := strings.Fields(lines[0])
		if got := strings.Join(head, " "); !strings.HasPrefix(got, "ADDR ZONE ALIVE DRAINING MASTERS SLAVES TABLE LOAD") {
			t.Fatalf("nodes header %q", lines[0])
		}
		var at []int
		for i, h := range head {
			from := 0
			if i > 0 {
				from = at[i-1] + len(head[i-1])
			}
			at = append(at, from+strings.Index(lines[0][from:], h))
		}
		rows := map[string]map[string]string{}
		for _, l := range lines[1:] {
			row := map[string]string{}
			for i, h := range head {
				end := len(l)
				if i+1 < len(at) {
					end = min(at[i+1], len(l))
				}
				if at[i] < len(l) {
					row[h] = strings.TrimSpace(l[at[i]:end])
				}
			}
			rows[row["ADDR"]] = row
		}
		return rows
	}
	masters, slaves := 0, 0
	listed := nodes()
	if len(listed) != 3 {
		t.Fatalf("nodes lists %d dataservers, want 3: %v", len(listed), listed)
	}
	for addr, f := range listed {
		if !slices.Contains(ds, addr) || f["ZONE"] != "" || f["ALIVE"] != "true" || f["DRAINING"] != "false" {
			t.Fatalf("node %s: %v, want alive, not draining, no zone", addr, f)
		}
		m, _ := strconv.Atoi(f["MASTERS"])
		s, _ := strconv.Atoi(f["SLAVES"])
		masters, slaves = masters+m, slaves+s
	}
	if masters != 64 || slaves != 64 {
		t.Fatalf("nodes hold %d masters and %d slaves, want 64 each", masters, slaves)
	}

	if got := ctl(t, cs, "migrations"); got != "progress 0/0 moves (100.0%), paused=false\n" {
		t.Fatalf("migrations with none: %q", got)
	}

	// Paused, a drain plans moves and starts none.
	if got := ctl(t, cs, "migrate", "pause"); got != "OK \n" {
		t.Fatalf("migrate pause: %q", got)
	}
	victim := ds[2]
	if got := ctl(t, cs, "node", "drain", victim); got != "OK draining; remove the node once it holds no copy\n" {
		t.Fatalf("node drain: %q", got)
	}
	out = ctl(t, cs, "migrations")
	m := regexp.MustCompile(`^progress 0/(\d+) moves \(0\.0%\), paused=true\n`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("migrations while paused:\n%s", out)
	}
	planned, _ := strconv.Atoi(m[1])
	pending := regexp.MustCompile(`(?m)^pending bucket \d+: `+regexp.QuoteMeta(victim)+` -> 127\.0\.0\.1:\d+$`).FindAllString(out, -1)
	if planned == 0 || len(pending) != planned || strings.Contains(out, "running bucket") {
		t.Fatalf("paused drain: %d planned, %d pending lines from %s:\n%s", planned, len(pending), victim, out)
	}
	wantContains(t, ctl(t, cs, "status"), fmt.Sprintf("migrations      0 running, %d pending, 0/%d done, paused=true\n", planned, planned))
	if f := nodes()[victim]; f["DRAINING"] != "true" {
		t.Fatalf("drained node %s: %v, want draining", victim, f)
	}

	// Resumed, the moves run to the end.
	if got := ctl(t, cs, "migrate", "resume"); got != "OK \n" {
		t.Fatalf("migrate resume: %q", got)
	}
	done := fmt.Sprintf("progress %d/%d moves (100.0%%), paused=false\n", planned, planned)
	progress := regexp.MustCompile(`^progress (\d+)/` + m[1] + ` moves \(\d+\.\d%\), paused=false$`)
	running := regexp.MustCompile(`^running bucket \d+ -> 127\.0\.0\.1:\d+: \d+ keys sent, done=(true|false) $`)
	var seen []string
	midway, runs := false, 0
	testutil.Eventually(t, 60*time.Second, func() bool {
		out = ctl(t, cs, "migrations")
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		p := progress.FindStringSubmatch(lines[0])
		if p == nil {
			t.Fatalf("migrations while draining:\n%s", out)
		}
		if k, _ := strconv.Atoi(p[1]); k > 0 && k < planned {
			midway = true
		}
		for _, l := range lines[1:] {
			if strings.HasPrefix(l, "running") {
				if !running.MatchString(l) {
					t.Fatalf("running move line %q", l)
				}
				runs++
			}
		}
		if len(seen) == 0 || seen[len(seen)-1] != lines[0] {
			seen = append(seen, lines[0])
		}
		return out == done
	}, "drain never finished: last %q", out)
	t.Logf("progress lines seen: %q; %d running move lines", seen, runs)
	if !midway {
		t.Fatalf("no progress between 0 and %d seen: %q", planned, seen)
	}
	if f := nodes()[victim]; f["MASTERS"] != "0" || f["SLAVES"] != "0" {
		t.Fatalf("drained node %s still holds copies: %v", victim, f)
	}
	wantContains(t, ctl(t, cs, "status"), fmt.Sprintf("migrations      0 running, 0 pending, %d/%d done, paused=false\n", planned, planned))

	// A balanced cluster: rebalance plans nothing; cancel drops no plan.
	if got := ctl(t, cs, "rebalance"); got != "OK \n" {
		t.Fatalf("rebalance: %q", got)
	}
	if got := ctl(t, cs, "migrations"); got != "progress 0/0 moves (100.0%), paused=false\n" {
		t.Fatalf("migrations after a rebalance of a balanced cluster: %q", got)
	}
	if got := ctl(t, cs, "migrate", "cancel"); got != "OK plan dropped; the next cluster change or rebalance plans again\n" {
		t.Fatalf("migrate cancel: %q", got)
	}

	// remove: out of the list; an unknown node is refused.
	if got := ctl(t, cs, "node", "remove", victim); got != "OK \n" {
		t.Fatalf("node remove: %q", got)
	}
	if _, ok := nodes()[victim]; ok {
		t.Fatalf("removed node %s still listed", victim)
	}
	if _, err := ctlErr(cs, "node", "drain", "127.0.0.1:1"); err == nil || err.Error() != `unknown node "127.0.0.1:1"` {
		t.Fatalf("drain of an unknown node: %v", err)
	}
}

// TestCtlHelp: every node and migrate subcommand says what it does.
func TestCtlHelp(t *testing.T) {
	for _, path := range [][]string{{"node", "add"}, {"node", "remove"}, {"node", "drain"},
		{"migrate", "pause"}, {"migrate", "resume"}, {"migrate", "cancel"}} {
		cmd, _, err := ctlCmd().Find(path)
		if err != nil {
			t.Fatal(err)
		}
		if cmd.Short == "" {
			t.Errorf("ctl %s has no help line", strings.Join(path, " "))
		}
	}
	out, err := ctlErr("127.0.0.1:1", "node", "--help")
	if err != nil {
		t.Fatal(err)
	}
	wantContains(t, out, "drain       move every copy off a dataserver (then remove it)")
}

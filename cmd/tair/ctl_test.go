package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tairkv/tair/cluster"
	"github.com/tairkv/tair/configserver"
	"github.com/tairkv/tair/internal/route"
	"github.com/tairkv/tair/internal/testcluster"
	"github.com/tairkv/tair/internal/testutil"
	"github.com/tairkv/tair/internal/wire"
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
	return ctlRun(context.Background(), nil, cs, args...)
}

// ctlRun runs `tair ctl --configserver cs args...` as the binary does
// (errors returned, not printed), reading in (nil: nothing), until ctx
// ends (as Ctrl-C would), and returns what it printed on stdout.
func ctlRun(ctx context.Context, in io.Reader, cs string, args ...string) (string, error) {
	cmd := ctlCmd()
	var out, errOut bytes.Buffer
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	if in == nil {
		in = strings.NewReader("")
	}
	cmd.SetIn(in)
	cmd.SetArgs(append([]string{"--configserver", cs}, args...))
	err := cmd.ExecuteContext(ctx)
	return out.String(), err
}

// decodeJSON decodes out, one JSON document, into v, strictly.
func decodeJSON(t *testing.T, out string, v any) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("decoding %T: %v\n%s", v, err, out)
	}
	if dec.More() {
		t.Fatalf("more than one JSON document:\n%s", out)
	}
}

// wantKeys checks the field names of the JSON object doc.
func wantKeys(t *testing.T, doc string, keys ...string) {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(doc), &m); err != nil {
		t.Fatalf("not a JSON object: %v\n%s", err, doc)
	}
	var got []string
	for k := range m {
		got = append(got, k)
	}
	slices.Sort(got)
	slices.Sort(keys)
	if !slices.Equal(got, keys) {
		t.Fatalf("JSON fields %v, want %v:\n%s", got, keys, doc)
	}
}

// wantAdminJSON checks an admin command's --json output: an AdminReply
// that says OK with msg.
func wantAdminJSON(t *testing.T, out, msg string) {
	t.Helper()
	var r wire.AdminReply
	decodeJSON(t, out, &r)
	if !r.OK || r.Message != msg {
		t.Fatalf("admin --json: %q, want ok with message %q", out, msg)
	}
}

func wantContains(t *testing.T, out string, frags ...string) {
	t.Helper()
	for _, f := range frags {
		if !strings.Contains(out, f) {
			t.Fatalf("output lacks %q:\n%s", f, out)
		}
	}
}

// TestCtl runs every ctl subcommand against an in-process cluster (three
// dataservers, two copies, 64 buckets, 2000 keys) and checks what each
// prints, as text and with --json.
func TestCtl(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{Options: cluster.Options{
		DataServers: 3, Copies: 2, Buckets: 64,
		ConfigServer: func(_ int, cfg *configserver.Config) { cfg.MovesPerNode = 8 },
	}})
	cs := strings.Join(c.ConfigServerAddrs(), ",")
	proxy := c.Proxies[0].Addr()
	tb := c.Table()
	var ds []string
	for _, d := range c.DataServers {
		ds = append(ds, d.Addr())
	}
	slices.Sort(ds)
	const keys = 2000
	rc := c.Client(0)
	pipe := rc.Pipeline()
	for i := range keys {
		pipe.Set(context.Background(), fmt.Sprintf("key:%d", i), strings.Repeat("v", 100), 0)
	}
	if _, err := pipe.Exec(context.Background()); err != nil {
		t.Fatal(err)
	}

	// Every node serves the table and reports the copies it holds.
	testutil.Eventually(t, 10*time.Second, func() bool {
		var list []wire.NodeStatus
		decodeJSON(t, ctl(t, cs, "nodes", "--json"), &list)
		for _, n := range list {
			// The resources come with a heartbeat sent after the writes
			// (the table may have been reported before them).
			if n.TableVersion != tb.Version || n.HeldMasters != n.Masters || n.HeldSlaves != n.Slaves ||
				n.Resources == nil || n.Resources.EngineBytes < keys*100/3 {
				return false
			}
		}
		return len(list) == 3
	}, "the nodes never reported table %d and the written keys", tb.Version)

	// status: the summary, line for line, then each node's memory (the
	// engine's bytes, the process's RSS; rdb keeps no disk).
	nodeLine := regexp.MustCompile(`^node (\S+)  memory \d+\.\d[KM]iB engine, \d+\.\d[MG]iB rss$`)
	got, want := ctl(t, cs, "status"), fmt.Sprintf("table version   %d\nbuckets         64\ncopies          2\n", tb.Version)+
		"dataservers     3 alive of 3\nlost copies     0\n"+
		"migrations      0 running, 0 pending, 0/0 done, paused=false, rate=each node's own\n"+
		"under-replicated 0 buckets\n"
	if !strings.HasPrefix(got, want) {
		t.Fatalf("status:\n%s\nwant:\n%s", got, want)
	}
	if lines := strings.Split(strings.TrimSuffix(strings.TrimPrefix(got, want), "\n"), "\n"); len(lines) != 3 {
		t.Fatalf("status's node lines:\n%s", got)
	} else {
		for i, l := range lines {
			if m := nodeLine.FindStringSubmatch(l); m == nil || m[1] != ds[i] {
				t.Fatalf("status's line of node %s: %q", ds[i], l)
			}
		}
	}
	var st ctlStatus
	out := ctl(t, cs, "status", "--json")
	wantKeys(t, out, "alive", "buckets", "copies", "dataservers", "lost_copies", "migrations", "nodes", "table_version")
	decodeJSON(t, out, &st)
	if st.TableVersion != tb.Version || st.Buckets != 64 || st.Copies != 2 || st.DataServers != 3 || st.Alive != 3 ||
		st.LostCopies != 0 || st.Migrations.Total != 0 || st.Migrations.Paused || len(st.Nodes) != 3 {
		t.Fatalf("status --json: %+v", st)
	}
	for i, n := range st.Nodes {
		if n.Addr != ds[i] || !n.Alive || n.NodeResources == nil || n.EngineBytes < keys*100/3 || n.RSSBytes < 1<<20 || n.DataDir != "" {
			t.Fatalf("status --json node %d: %+v, want %s alive with its memory", i, n, ds[i])
		}
	}

	// table: cst_monitor's layout, a header then bucket, master, slaves.
	out = ctl(t, cs, "table")
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
	var jt route.Table
	decodeJSON(t, ctl(t, cs, "table", "--json"), &jt)
	if jt.Version != tb.Version || jt.Buckets != 64 || jt.Copies != 2 || !reflect.DeepEqual(jt.Serving, tb.Serving) {
		t.Fatalf("table --json: version %d, %d buckets, serving %v; want %d and %v", jt.Version, jt.Buckets, jt.Serving, tb.Version, tb.Serving)
	}

	// nodes: a header and one line per dataserver, in aligned columns
	// (read by the header's offsets: an empty zone leaves a gap).
	nodes := func() map[string]map[string]string {
		t.Helper()
		out := ctl(t, cs, "nodes")
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		head := strings.Fields(lines[0])
		if got := strings.Join(head, " "); got != "ADDR ZONE ALIVE DRAINING MASTERS SLAVES TABLE LOAD HEALTH HELD ENGINE RSS DISK DISK-FREE" {
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
		if !slices.Contains(ds, addr) || f["ZONE"] != "" || f["ALIVE"] != "true" || f["DRAINING"] != "false" ||
			f["TABLE"] != strconv.FormatUint(uint64(tb.Version), 10) || f["HEALTH"] != "ok" || f["HELD"] != f["MASTERS"]+"/"+f["SLAVES"] ||
			!strings.HasSuffix(f["ENGINE"], "iB") || !strings.HasSuffix(f["RSS"], "iB") || f["DISK"] != "-" || f["DISK-FREE"] != "-" {
			t.Fatalf("node %s: %v, want alive, not draining, no zone, table %d, healthy, holding its copies", addr, f, tb.Version)
		}
		m, _ := strconv.Atoi(f["MASTERS"])
		s, _ := strconv.Atoi(f["SLAVES"])
		masters, slaves = masters+m, slaves+s
	}
	if masters != 64 || slaves != 64 {
		t.Fatalf("nodes hold %d masters and %d slaves, want 64 each", masters, slaves)
	}
	var jn []wire.NodeStatus
	out = ctl(t, cs, "nodes", "--json")
	decodeJSON(t, out, &jn)
	if len(jn) != 3 {
		t.Fatalf("nodes --json: %s", out)
	}
	for i, n := range jn {
		f := listed[n.Addr]
		if n.Addr != ds[i] || !n.Alive || strconv.Itoa(n.Masters) != f["MASTERS"] || strconv.Itoa(n.Slaves) != f["SLAVES"] {
			t.Fatalf("nodes --json node %d: %+v, want %s as listed: %v", i, n, ds[i], f)
		}
	}
	wantKeys(t, strings.TrimPrefix(out[:strings.Index(out, "}}")+2], "["), "addr", "alive", "engine", "health", "held_masters", "held_slaves",
		"http", "last_heartbeat_ms", "load", "masters", "resources", "slaves", "table_version")
	if n := jn[0]; n.Engine != "rdb" || n.HTTP == "" {
		t.Fatalf("nodes --json: engine %q, http %q; want rdb and the node's HTTP address", n.Engine, n.HTTP)
	}

	if got := ctl(t, cs, "migrations"); got != "progress 0/0 moves (100.0%), paused=false\n" {
		t.Fatalf("migrations with none: %q", got)
	}
	var jm wire.MigrationStatus
	out = ctl(t, cs, "migrations", "--json")
	wantKeys(t, out, "completed", "last_restore_seconds", "paused", "pending", "running", "total", "under_replicated",
		"under_replicated_seconds", "unavailable")
	decodeJSON(t, out, &jm)
	if jm.Total != 0 || jm.Pending == nil || jm.Running == nil {
		t.Fatalf("migrations --json with none: %s", out)
	}
	// --watch with nothing to do: one frame and done.
	if got := ctl(t, cs, "migrations", "--watch"); got != "moves 100.0%: 0/0 done, 0 running, 0 pending\ndone: 0/0 moves\n" {
		t.Fatalf("migrations --watch with none: %q", got)
	}

	// Paused, a drain plans moves and starts none.
	if got := ctl(t, cs, "migrate", "pause"); got != "OK\n" {
		t.Fatalf("migrate pause: %q", got)
	}
	wantAdminJSON(t, ctl(t, cs, "migrate", "pause", "--json"), "")
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
	decodeJSON(t, ctl(t, cs, "migrations", "--json"), &jm)
	if !jm.Paused || len(jm.Pending) != planned || len(jm.Running) != 0 || jm.Total != planned || jm.Pending[0].From != victim {
		t.Fatalf("migrations --json while paused: %+v", jm)
	}
	wantContains(t, ctl(t, cs, "status"), fmt.Sprintf("migrations      0 running, %d pending, 0/%d done, paused=true, rate=each node's own\n", planned, planned))
	// The cluster-wide cap of each move's copy rate: set, lifted, reset
	// to each node's own; refused when not a count of bytes.
	for _, c := range []struct{ arg, reply, status string }{
		{"5000", "OK each move's copy rate: at most 5000 bytes/s\n", "rate=5000 B/s\n"},
		{"0", "OK each move's copy rate: no cap\n", "rate=no cap\n"},
		{"default", "OK each move's copy rate: each dataserver's own --migrate-bytes-per-sec\n", "rate=each node's own\n"},
	} {
		if got := ctl(t, cs, "migrate", "rate", c.arg); got != c.reply {
			t.Fatalf("migrate rate %s: %q, want %q", c.arg, got, c.reply)
		}
		wantContains(t, ctl(t, cs, "status"), c.status)
		wantAdminJSON(t, ctl(t, cs, "migrate", "rate", c.arg, "--json"), strings.TrimSuffix(strings.TrimPrefix(c.reply, "OK "), "\n"))
	}
	for _, bad := range []string{"fast", "1e3", "99999999999999999999"} {
		if out, err := ctlErr(cs, "migrate", "rate", bad); err == nil || !strings.Contains(out+err.Error(), "want bytes a second") {
			t.Fatalf("migrate rate %s: %q %v, want refused", bad, out, err)
		}
	}
	if f := nodes()[victim]; f["DRAINING"] != "true" {
		t.Fatalf("drained node %s: %v, want draining", victim, f)
	}
	// --watch while paused: nothing changes, so the plain form prints its
	// one frame once, until Ctrl-C (here, the context's end).
	ctx, cancel := context.WithTimeout(context.Background(), 600*time.Millisecond)
	out, err := ctlRun(ctx, nil, cs, "migrations", "--watch", "--interval", "50ms")
	cancel()
	if want := fmt.Sprintf("moves 0.0%%: 0/%d done, 0 running, %d pending, paused\n", planned, planned); err != nil || out != want {
		t.Fatalf("migrations --watch while paused: %v\n%q, want %q", err, out, want)
	}
	// drain --wait gives up after --timeout while the moves wait.
	out, err = ctlErr(cs, "node", "drain", victim, "--wait", "--timeout", "300ms", "--interval", "50ms")
	if err == nil || !regexp.MustCompile(`^timed out after 300ms: node `+regexp.QuoteMeta(victim)+` still holds \d+ cop(y|ies) \(0 moves running, `+
		strconv.Itoa(planned)+` pending\)$`).MatchString(err.Error()) {
		t.Fatalf("drain --wait --timeout while paused: %v", err)
	}
	held := listed[victim]
	copies := held["MASTERS"] + " masters, " + held["SLAVES"] + " slaves"
	n1, _ := strconv.Atoi(held["MASTERS"])
	n2, _ := strconv.Atoi(held["SLAVES"])
	if want := fmt.Sprintf("OK draining; remove the node once it holds no copy\nnode %s: %d of %d copies left (%s)\nmoves 0.0%%: 0/%d done, 0 running, %d pending, paused\n",
		victim, n1+n2, n1+n2, copies, planned, planned); out != want {
		t.Fatalf("drain --wait while paused printed:\n%s\nwant:\n%s", out, want)
	}

	// Resumed, the moves run to the end: --watch follows them (plain
	// frames, as the output is no terminal) while `migrations` is polled.
	if got := ctl(t, cs, "migrate", "resume"); got != "OK\n" {
		t.Fatalf("migrate resume: %q", got)
	}
	polled := make(chan []string, 1)
	stop := make(chan struct{})
	go func() {
		var seen []string
		defer func() { polled <- seen }()
		for {
			select {
			case <-stop:
				return
			default:
			}
			out, err := ctlErr(cs, "migrations")
			if err != nil {
				seen = append(seen, "error: "+err.Error())
				return
			}
			seen = append(seen, out)
			time.Sleep(20 * time.Millisecond)
		}
	}()
	out = ctl(t, cs, "migrations", "--watch", "--interval", "50ms")
	close(stop)
	checkWatch(t, out, victim, planned)
	// `migrations` meanwhile: the progress line, then running and pending moves.
	progressRe := regexp.MustCompile(`^progress (\d+)/` + m[1] + ` moves \(\d+\.\d%\), paused=false$`)
	running := regexp.MustCompile(`^running bucket \d+: (` + regexp.QuoteMeta(victim) + `|\?) -> 127\.0\.0\.1:\d+, \d+ keys sent(, done)?$`)
	pendingLine := regexp.MustCompile(`^pending bucket \d+: ` + regexp.QuoteMeta(victim) + ` -> 127\.0\.0\.1:\d+$`)
	runs, midway := 0, false
	for _, out := range <-polled {
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		p := progressRe.FindStringSubmatch(lines[0])
		if p == nil {
			t.Fatalf("migrations while draining:\n%s", out)
		}
		if k, _ := strconv.Atoi(p[1]); k > 0 && k < planned {
			midway = true
		}
		for _, l := range lines[1:] {
			switch {
			case running.MatchString(l):
				runs++
			case !pendingLine.MatchString(l):
				t.Fatalf("migrations line %q", l)
			}
		}
	}
	if !midway || runs == 0 {
		t.Fatalf("`migrations` polled during the drain saw no progress between 0 and %d (%v) or no running move (%d)", planned, midway, runs)
	}
	if got, want := ctl(t, cs, "migrations"), fmt.Sprintf("progress %d/%d moves (100.0%%), paused=false\n", planned, planned); got != want {
		t.Fatalf("migrations after the drain: %q, want %q", got, want)
	}
	if f := nodes()[victim]; f["MASTERS"] != "0" || f["SLAVES"] != "0" {
		t.Fatalf("drained node %s still holds copies: %v", victim, f)
	}
	wantContains(t, ctl(t, cs, "status"), fmt.Sprintf("migrations      0 running, 0 pending, %d/%d done, paused=false, rate=each node's own\n", planned, planned))

	// add takes the node back; a rebalance moves copies onto it, followed
	// by --watch --json (a MigrationStatus and the moves per poll).
	if got := ctl(t, cs, "node", "add", victim); got != "OK\n" {
		t.Fatalf("node add: %q", got)
	}
	if got := ctl(t, cs, "rebalance"); got != "OK\n" {
		t.Fatalf("rebalance: %q", got)
	}
	out = ctl(t, cs, "migrations", "--watch", "--json", "--interval", "50ms")
	docs := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	moved := 0
	for i, d := range docs {
		wantKeys(t, d, "copies", "finished", "keys_per_sec", "migrations", "moves")
		var pr progress
		decodeJSON(t, d, &pr)
		if pr.Finished != (i == len(docs)-1) || pr.Node != nil {
			t.Fatalf("--watch --json document %d of %d: %s", i+1, len(docs), d)
		}
		for _, mv := range pr.Moves {
			// (From is "" for a move begun and ended between two reads
			// of the table: the API's progress does not name sources.)
			if mv.To != victim || !(mv.From == "" || slices.Contains(ds, mv.From)) || mv.From == victim || mv.Percent < -1 || mv.Percent > 100 {
				t.Fatalf("--watch --json move onto the added node: %+v", mv)
			}
			moved++
		}
	}
	var last progress
	decodeJSON(t, docs[len(docs)-1], &last)
	if last.Migrations.Completed == 0 || last.Migrations.Completed != last.Migrations.Total || len(last.Moves) != 0 {
		t.Fatalf("--watch --json's last document: %s", docs[len(docs)-1])
	}
	f := nodes()[victim]
	if f["MASTERS"] == "0" || f["DRAINING"] != "false" {
		t.Fatalf("the added node after a rebalance: %v", f)
	}
	t.Logf("rebalance onto %s: %d polls, %d running-move entries", victim, len(docs), moved)

	// drain --wait follows the node's copies to zero.
	n1, _ = strconv.Atoi(f["MASTERS"])
	n2, _ = strconv.Atoi(f["SLAVES"])
	out = ctl(t, cs, "node", "drain", victim, "--wait", "--interval", "50ms")
	checkDrainWait(t, out, victim, n1+n2)
	if f := nodes()[victim]; f["MASTERS"] != "0" || f["SLAVES"] != "0" || f["HELD"] != "0/0" || f["DRAINING"] != "true" {
		t.Fatalf("node %s after drain --wait: %v", victim, f)
	}

	// And with --json: the admin reply, then one document per poll.
	ctl(t, cs, "node", "add", victim)
	ctl(t, cs, "rebalance")
	ctl(t, cs, "migrations", "--watch", "--interval", "50ms")
	out = ctl(t, cs, "node", "drain", victim, "--wait", "--json", "--interval", "50ms")
	docs = strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	wantAdminJSON(t, docs[0], "draining; remove the node once it holds no copy")
	if len(docs) < 2 {
		t.Fatalf("drain --wait --json printed no progress: %s", out)
	}
	start := -1
	for i, d := range docs[1:] {
		var pr progress
		decodeJSON(t, d, &pr)
		if pr.Node == nil || pr.Node.Addr != victim || !pr.Node.Draining || pr.Finished != (i == len(docs)-2) {
			t.Fatalf("drain --wait --json document %d: %s", i+1, d)
		}
		if start < 0 {
			start = pr.Copies
		}
		if pr.Copies > start || (pr.Finished && pr.Copies != 0) {
			t.Fatalf("drain --wait --json: copies %d after %d at the start: %s", pr.Copies, start, d)
		}
	}
	if start == 0 {
		t.Fatalf("drain --wait --json: the node held nothing when the drain began: %s", out)
	}

	// A balanced cluster: rebalance plans nothing; cancel drops no plan.
	if got := ctl(t, cs, "rebalance"); got != "OK\n" {
		t.Fatalf("rebalance: %q", got)
	}
	wantAdminJSON(t, ctl(t, cs, "rebalance", "--json"), "")
	if got := ctl(t, cs, "migrations"); got != "progress 0/0 moves (100.0%), paused=false\n" {
		t.Fatalf("migrations after a rebalance of a balanced cluster: %q", got)
	}
	if got := ctl(t, cs, "migrate", "cancel"); got != "OK plan dropped; the next cluster change or rebalance plans again\n" {
		t.Fatalf("migrate cancel: %q", got)
	}
	wantAdminJSON(t, ctl(t, cs, "migrate", "cancel", "--json"), "plan dropped; the next cluster change or rebalance plans again")
	wantAdminJSON(t, ctl(t, cs, "migrate", "resume", "--json"), "")

	// remove: out of the list; an unknown node is refused (with --json,
	// the refusal is printed too, and the exit status is still 1).
	if got := ctl(t, cs, "node", "remove", victim); got != "OK\n" {
		t.Fatalf("node remove: %q", got)
	}
	if _, ok := nodes()[victim]; ok {
		t.Fatalf("removed node %s still listed", victim)
	}
	if out, err := ctlErr(cs, "node", "drain", "127.0.0.1:1"); err == nil || err.Error() != `unknown node "127.0.0.1:1"` || out != "" {
		t.Fatalf("drain of an unknown node: %v %q", err, out)
	}
	out, err = ctlErr(cs, "node", "remove", "127.0.0.1:1", "--json")
	if err == nil || out != `{"ok":false,"message":"unknown node \"127.0.0.1:1\""}`+"\n" {
		t.Fatalf("remove --json of an unknown node: %v %q", err, out)
	}
	wantAdminJSON(t, ctl(t, cs, "node", "add", "127.0.0.1:2", "--json"), "the node joins when it sends its first heartbeat")
	if got := ctl(t, cs, "node", "add", "127.0.0.1:2"); got != "OK the node joins when it sends its first heartbeat\n" {
		t.Fatalf("add of an unknown node: %q", got)
	}

	t.Run("stat", func(t *testing.T) { testCtlStat(t, cs, proxy, keys) })
	t.Run("area", func(t *testing.T) { testCtlArea(t, cs) })
	t.Run("hooks", func(t *testing.T) { testCtlHooks(t, cs) })
	t.Run("shell", func(t *testing.T) { testCtlShell(t, cs, proxy) })
}

// checkWatch checks `migrations --watch`'s plain output for a drain of
// victim: frames of the totals and the running moves, then "done".
func checkWatch(t *testing.T, out, victim string, planned int) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if want := fmt.Sprintf("done: %d/%d moves", planned, planned); lines[len(lines)-1] != want {
		t.Fatalf("--watch ends with %q, want %q:\n%s", lines[len(lines)-1], want, out)
	}
	if want := fmt.Sprintf("moves 100.0%%: %d/%d done, 0 running, 0 pending", planned, planned); lines[len(lines)-2] != want {
		t.Fatalf("--watch's last frame %q, want %q:\n%s", lines[len(lines)-2], want, out)
	}
	totals := regexp.MustCompile(`^moves (\d+\.\d)%: (\d+)/` + strconv.Itoa(planned) + ` done, (\d+) running, (\d+) pending(, [\d.]+k? keys/s)?$`)
	move := regexp.MustCompile(`^  bucket \d+ (` + regexp.QuoteMeta(victim) + `|\?) -> 127\.0\.0\.1:\d+: (\?|~\d+%|100%), \d+ keys sent(, [\d.]+k? keys/s)?(, done)?$`)
	frames, moves, estimated := 0, 0, 0
	for _, l := range lines[:len(lines)-1] {
		switch {
		case totals.MatchString(l):
			p := totals.FindStringSubmatch(l)
			done, _ := strconv.Atoi(p[2])
			if want := fmt.Sprintf("%.1f", 100*float64(done)/float64(planned)); p[1] != want {
				t.Fatalf("--watch frame %q: percent %s, want %s", l, p[1], want)
			}
			frames++
		case move.MatchString(l):
			moves++
			if strings.Contains(l, "~") {
				estimated++
			}
		default:
			t.Fatalf("--watch line %q:\n%s", l, out)
		}
	}
	if frames < 2 || moves == 0 {
		t.Fatalf("--watch showed %d frames and %d running-move lines:\n%s", frames, moves, out)
	}
	t.Logf("--watch: %d frames, %d running-move lines (%d with an estimated share)", frames, moves, estimated)
}

// checkDrainWait checks `node drain --wait`'s plain output: the admin
// reply, frames of the node's copies and the moves, then the last line.
func checkDrainWait(t *testing.T, out, node string, start int) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if lines[0] != "OK draining; remove the node once it holds no copy" {
		t.Fatalf("drain --wait begins with %q:\n%s", lines[0], out)
	}
	if want := fmt.Sprintf("node %s holds no copy: `tair ctl node remove %s` takes it out", node, node); lines[len(lines)-1] != want {
		t.Fatalf("drain --wait ends with %q, want %q:\n%s", lines[len(lines)-1], want, out)
	}
	if want := fmt.Sprintf("node %s: 0 of %d copies left (0 masters, 0 slaves)", node, start); lines[len(lines)-3] != want {
		t.Fatalf("drain --wait's last frame begins %q, want %q:\n%s", lines[len(lines)-3], want, out)
	}
	nodeLine := regexp.MustCompile(`^node ` + regexp.QuoteMeta(node) + `: (\d+) of ` + strconv.Itoa(start) + ` copies left \((\d+) masters, (\d+) slaves\)$`)
	totals := regexp.MustCompile(`^moves \d+\.\d%: \d+/\d+ done, \d+ running, \d+ pending(, [\d.]+k? keys/s)?$`)
	move := regexp.MustCompile(`^  bucket \d+ (127\.0\.0\.1:\d+|\?) -> 127\.0\.0\.1:\d+: (\?|~\d+%|100%), \d+ keys sent(, [\d.]+k? keys/s)?(, done)?$`)
	prev, frames := start, 0
	for _, l := range lines[1 : len(lines)-1] {
		switch {
		case nodeLine.MatchString(l):
			p := nodeLine.FindStringSubmatch(l)
			left, _ := strconv.Atoi(p[1])
			if left > prev {
				t.Fatalf("drain --wait: copies left went up to %d from %d:\n%s", left, prev, out)
			}
			prev = left
			frames++
		case totals.MatchString(l), move.MatchString(l):
		default:
			t.Fatalf("drain --wait line %q:\n%s", l, out)
		}
	}
	if frames < 2 {
		t.Fatalf("drain --wait showed %d frames:\n%s", frames, out)
	}
}

func testCtlStat(t *testing.T, cs, proxy string, keys int) {
	out := ctl(t, cs, "--proxy", proxy, "stat")
	re := regexp.MustCompile(fmt.Sprintf(`^area       0\nkeys       %d\nbytes      (\d+)\ngets       (\d+)\nputs       (\d+)\nhits       (\d+)\nmisses     (\d+)\nevictions  0\n$`, keys))
	m := re.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("stat:\n%s", out)
	}
	if b, _ := strconv.Atoi(m[1]); b < keys*100 {
		t.Fatalf("stat: %d bytes for %d keys of 100 bytes", b, keys)
	}
	// (Counters are kept by each dataserver: the removed node took its
	// share of the puts with it.)
	if p, _ := strconv.Atoi(m[3]); p == 0 || p > keys {
		t.Fatalf("stat: %s puts of %d keys", m[3], keys)
	}
	var st ctlStat
	out = ctl(t, cs, "--proxy", proxy, "stat", "--json")
	wantKeys(t, out, "area", "bytes", "evictions", "gets", "hits", "keys", "misses", "puts")
	decodeJSON(t, out, &st)
	if st.Area != 0 || st.Keys != int64(keys) || strconv.FormatInt(st.Puts, 10) != m[3] || strconv.FormatInt(st.Bytes, 10) != m[1] {
		t.Fatalf("stat --json: %+v", st)
	}
	if got := ctl(t, cs, "--proxy", proxy, "stat", "9"); got != "area       9\nkeys       0\nbytes      0\ngets       0\nputs       0\nhits       0\nmisses     0\nevictions  0\n" {
		t.Fatalf("stat of an empty area:\n%s", got)
	}
	if _, err := ctlErr(cs, "--proxy", proxy, "stat", "1024"); err == nil || err.Error() != "area must be 0..1023" {
		t.Fatalf("stat 1024: %v", err)
	}
}

func testCtlArea(t *testing.T, cs string) {
	if got := ctl(t, cs, "area", "list"); got != "AREA  QUOTA  OPS/S  BYTES/S  READ-ONLY\n" {
		t.Fatalf("area list with none set: %q", got)
	}
	if got := ctl(t, cs, "area", "list", "--json"); got != "{}\n" {
		t.Fatalf("area list --json with none set: %q", got)
	}
	if got := ctl(t, cs, "area", "set", "3", "--quota", "1048576"); got != "OK area 3: quota 1048576, ops/s none, bytes/s none, read-only false\n" {
		t.Fatalf("area set --quota: %q", got)
	}
	// Only the flags given change: the quota stays.
	if got := ctl(t, cs, "area", "set", "3", "--ops", "1000"); got != "OK area 3: quota 1048576, ops/s 1000, bytes/s none, read-only false\n" {
		t.Fatalf("area set --ops: %q", got)
	}
	var set ctlAreaSet
	out := ctl(t, cs, "area", "set", "3", "--read-only", "--json")
	wantKeys(t, out, "area", "config", "ok")
	decodeJSON(t, out, &set)
	if want := (ctlAreaSet{AdminReply: wire.AdminReply{OK: true}, Area: 3, Config: wire.AreaConfig{QuotaBytes: 1 << 20, OpsLimit: 1000, ReadOnly: true}}); set != want {
		t.Fatalf("area set --read-only --json: %+v, want %+v", set, want)
	}
	if got := ctl(t, cs, "area", "set", "3", "--read-only=false", "--bytes", "4096"); got != "OK area 3: quota 1048576, ops/s 1000, bytes/s 4096, read-only false\n" {
		t.Fatalf("area set --read-only=false --bytes: %q", got)
	}
	if got := ctl(t, cs, "area", "set", "12", "--quota", "0", "--read-only"); got != "OK area 12: quota none, ops/s none, bytes/s none, read-only true\n" {
		t.Fatalf("area set 12: %q", got)
	}
	if got := ctl(t, cs, "area", "list"); got != "AREA  QUOTA    OPS/S  BYTES/S  READ-ONLY\n3     1048576  1000   4096     false\n12    none     none   none     true\n" {
		t.Fatalf("area list:\n%s", got)
	}
	var areas map[uint16]wire.AreaConfig
	decodeJSON(t, ctl(t, cs, "area", "list", "--json"), &areas)
	if want := map[uint16]wire.AreaConfig{3: {QuotaBytes: 1 << 20, OpsLimit: 1000, BytesLimit: 4096}, 12: {ReadOnly: true}}; !reflect.DeepEqual(areas, want) {
		t.Fatalf("area list --json: %v, want %v", areas, want)
	}
	for _, c := range []struct {
		args []string
		err  string
	}{
		{[]string{"area", "set", "3"}, "nothing to set: give --quota, --ops, --bytes or --read-only"},
		{[]string{"area", "set", "1024", "--ops", "1"}, "area must be 0..1023"},
		{[]string{"area", "set", "x", "--ops", "1"}, "area must be 0..1023"},
	} {
		if out, err := ctlErr(cs, c.args...); err == nil || err.Error() != c.err || out != "" {
			t.Fatalf("ctl %s: %v %q, want the error %q", strings.Join(c.args, " "), err, out, c.err)
		}
	}
}

func testCtlHooks(t *testing.T, cs string) {
	if got := ctl(t, cs, "hooks"); got != "enabled  stats,quota (default)\nknown    stats,quota,audit\n" {
		t.Fatalf("hooks: %q", got)
	}
	var hs wire.HooksStatus
	out := ctl(t, cs, "hooks", "--json")
	wantKeys(t, out, "enabled", "known", "set")
	decodeJSON(t, out, &hs)
	if !reflect.DeepEqual(hs, wire.HooksStatus{Enabled: []string{"stats", "quota"}, Known: []string{"stats", "quota", "audit"}}) {
		t.Fatalf("hooks --json: %+v", hs)
	}
	for _, c := range []struct{ args, want string }{
		{"hooks set stats,audit", "OK hooks: stats,audit\n"},
		{"hooks off audit", "OK hooks: stats\n"},
		{"hooks on quota,audit", "OK hooks: stats,quota,audit\n"},
		{"hooks set ", "OK hooks: none\n"},
	} {
		args := strings.Split(c.args, " ")
		if got := ctl(t, cs, args...); got != c.want {
			t.Fatalf("ctl %s: %q, want %q", c.args, got, c.want)
		}
	}
	if got := ctl(t, cs, "hooks"); got != "enabled  none\nknown    stats,quota,audit\n" {
		t.Fatalf("hooks after set \"\": %q", got)
	}
	wantAdminJSON(t, ctl(t, cs, "hooks", "set", "stats,quota", "--json"), "hooks: stats,quota")
	decodeJSON(t, ctl(t, cs, "hooks", "--json"), &hs)
	if !hs.Set || !reflect.DeepEqual(hs.Enabled, []string{"stats", "quota"}) {
		t.Fatalf("hooks --json after a set: %+v", hs)
	}
	if _, err := ctlErr(cs, "hooks", "on", "nosuch"); err == nil || err.Error() != `unknown hook "nosuch" (known: stats, quota, audit)` {
		t.Fatalf("hooks on nosuch: %v", err)
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

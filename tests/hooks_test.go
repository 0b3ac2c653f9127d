package tests

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tairkv/tair/cluster"
	"github.com/tairkv/tair/internal/testcluster"
	"github.com/tairkv/tair/internal/testutil"
)

// TestHooksSwitchedByCtl: `tair ctl hooks` switches the dataservers'
// hooks through the real configserver; the dataservers follow without a
// restart (their /metrics and their audit log show it).
func TestHooksSwitchedByCtl(t *testing.T) {
	logs := &testutil.LogBuffer{}
	c := testcluster.New(t, testcluster.Options{Options: cluster.Options{DataServers: 2, Copies: 1, Buckets: 64,
		Log: slog.New(slog.NewTextHandler(logs, nil))}})
	bin := testcluster.Binary(t)
	cs := c.ConfigServers[0].Addr()
	ctl := func(args ...string) (string, error) {
		cmd := exec.Command(bin, append([]string{"ctl", "--configserver", cs, "hooks"}, args...)...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	mustCtl := func(args ...string) string {
		t.Helper()
		out, err := ctl(args...)
		if err != nil {
			t.Fatalf("tair ctl hooks %q: %v\n%s", args, err, out)
		}
		return out
	}
	// written counts the stats hook's successful writes in area 0 on
	// every dataserver.
	written := func() float64 {
		t.Helper()
		var sum float64
		for _, ds := range c.DataServers {
			r, err := http.Get("http://" + ds.HTTPAddr() + "/metrics")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(r.Body)
			r.Body.Close()
			for _, ln := range strings.Split(string(body), "\n") {
				if v, ok := strings.CutPrefix(ln, `tair_dataserver_area_commands_total{area="0",kind="write",result="ok"} `); ok {
					f, _ := strconv.ParseFloat(v, 64)
					sum += f
				}
			}
		}
		return sum
	}
	p := c.Client(0)
	n := 0
	set := func() string {
		t.Helper()
		n++
		k := fmt.Sprintf("hookkey%d", n)
		if err := p.Set(ctx(t), k, "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
		return k
	}
	audited := func(k string) bool {
		return strings.Contains(logs.String(), "component=audit") && strings.Contains(logs.String(), "cmd=set key="+k+" ")
	}
	// settle waits until every dataserver has heard the configserver's
	// latest reply (a few heartbeat intervals).
	settle := func() { time.Sleep(1500 * time.Millisecond) }

	if out := mustCtl(); !strings.Contains(out, "enabled  stats,quota (default)") || !strings.Contains(out, "known    stats,quota,audit") {
		t.Fatalf("tair ctl hooks:\n%s", out)
	}
	before := written()
	for i := 0; i < 10; i++ {
		if k := set(); audited(k) {
			t.Fatalf("audit line for %s with the default hooks", k)
		}
	}
	if got := written(); got != before+10 {
		t.Fatalf("stats counted %v writes, want 10", got-before)
	}

	// Audit only: writes are audited, and no longer counted.
	mustCtl("set", "audit")
	testutil.Eventually(t, 10*time.Second, func() bool { return audited(set()) }, "no audit line after `hooks set audit`")
	settle()
	before = written()
	for i := 0; i < 10; i++ {
		if k := set(); !audited(k) {
			t.Fatalf("write of %s not audited", k)
		}
	}
	if got := written(); got != before {
		t.Fatalf("stats counted %v writes while off", got-before)
	}

	// None.
	if out := mustCtl("set", ""); !strings.Contains(out, "OK") {
		t.Fatalf("hooks set \"\": %s", out)
	}
	if out := mustCtl(); !strings.Contains(out, "enabled  none\n") {
		t.Fatalf("tair ctl hooks after set \"\":\n%s", out)
	}
	settle()
	before = written()
	for i := 0; i < 10; i++ {
		if k := set(); audited(k) {
			t.Fatalf("write of %s audited with every hook off", k)
		}
	}
	if got := written(); got != before {
		t.Fatalf("stats counted %v writes with every hook off", got-before)
	}

	// Stats back on.
	mustCtl("on", "stats")
	settle()
	before = written()
	for i := 0; i < 10; i++ {
		set()
	}
	if got := written(); got != before+10 {
		t.Fatalf("stats counted %v writes after `hooks on stats`, want 10", got-before)
	}
	if out, err := ctl("on", "bogus"); err == nil || !strings.Contains(out, `unknown hook "bogus"`) {
		t.Fatalf("unknown hook: %v\n%s", err, out)
	}
}

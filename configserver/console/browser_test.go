package console_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/redis/go-redis/v9"

	"github.com/tairkv/tair/cluster"
	"github.com/tairkv/tair/configserver"
	"github.com/tairkv/tair/dataserver"
	"github.com/tairkv/tair/internal/testcluster"
	"github.com/tairkv/tair/internal/wire"
)

// chromium finds Debian's chromium (make tools installs it) or another
// Chrome on PATH.
func chromium() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

const testBuckets = 256

// adminToken is the configservers' admin credential in the browser test.
const adminToken = "console-test-credential"

// TestConsoleInBrowser drives the console in headless Chromium against a
// real in-process cluster (two configservers, three dataservers, a
// proxy), loading the page from the standby configserver, whose API calls
// the leader answers: the dataservers and every bucket are shown, and
// draining a node from the page (click, confirm) moves its buckets away.
// The configservers want an admin credential: the page asks for it at the
// first operation refused with 401 (a wrong one is refused and asked for
// again) and sends it with the later ones without asking.
// It saves a screenshot, to $TAIR_CONSOLE_SCREENSHOT when set (the
// README's docs/console.png: TAIR_CONSOLE_SCREENSHOT=$PWD/docs/console.png),
// else in the test's temporary directory.
func TestConsoleInBrowser(t *testing.T) {
	chrome := chromium()
	if chrome == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("chromium is not installed and CI is set: the browser test must run (make tools installs Debian's chromium)")
		}
		t.Skip("chromium is not installed (make tools installs Debian's chromium): skipping the browser test")
	}
	began := time.Now()
	c := testcluster.New(t, testcluster.Options{Options: cluster.Options{
		ConfigServers: 2, DataServers: 3, Buckets: testBuckets, Zones: []string{"zone-a", "zone-b", "zone-c"},
		ConfigServer: func(_ int, cfg *configserver.Config) { cfg.MovesPerNode, cfg.AdminToken = 8, adminToken },
		// One persistent node, whose disk the page shows.
		DataServer: func(i int, cfg *dataserver.Config) {
			if i == 0 {
				cfg.Engine = "ldb"
			}
		},
	}})
	diskNode := c.DataServers[0].Addr()
	var dsAddrs []string
	for _, ds := range c.DataServers {
		dsAddrs = append(dsAddrs, ds.Addr())
	}
	slices.Sort(dsAddrs)
	leader, standby := c.ConfigServers[0], c.ConfigServers[1]
	if !leader.IsLeader() {
		leader, standby = standby, leader
	}

	// Some data in two areas, and a quota on one, for the areas panel.
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	for area := range 2 {
		cl := redis.NewClient(&redis.Options{Addr: c.Proxies[0].Addr(), DB: area, MaxRetries: -1})
		pipe := cl.Pipeline()
		for i := range 600 * (area + 1) {
			pipe.Set(ctx, fmt.Sprintf("user:%d:%d", area, i), strings.Repeat("v", 100+i%300), 0)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatalf("load area %d: %v", area, err)
		}
		cl.Close()
	}
	wc := wire.NewClient(leader.Addr())
	wc.SetAdminToken(adminToken)
	if r, err := wc.Admin(ctx, &wire.AdminRequest{Op: "area-set", Area: 1,
		Config: wire.AreaConfig{QuotaBytes: 1 << 20, OpsLimit: 20000}}); err != nil || !r.OK {
		t.Fatalf("area-set: %v %+v", err, r)
	}

	actx, acancel := chromedp.NewExecAllocator(ctx, append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chrome), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.WindowSize(1440, 1000))...)
	defer acancel()
	bctx, bcancel := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	defer bcancel()
	run := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(bctx, steps...); err != nil {
			t.Fatalf("%s: %v (after %v)", what, err, time.Since(began).Round(time.Millisecond))
		}
	}
	wait := func(what, js string, timeout time.Duration) {
		t.Helper()
		if _, err := chromedp.Run(bctx, chromedp.Poll[chromedp.Void](js,
			chromedp.WithPollingInterval(100*time.Millisecond), chromedp.WithPollingTimeout(timeout))); err != nil {
			t.Fatalf("waiting for %s: %v (after %v)", what, err, time.Since(began).Round(time.Millisecond))
		}
	}
	eval := func(js string, out any) {
		t.Helper()
		var err error
		switch o := out.(type) {
		case *[]string:
			*o, err = chromedp.Run(bctx, chromedp.Evaluate[[]string](js))
		case *map[string]int:
			*o, err = chromedp.Run(bctx, chromedp.Evaluate[map[string]int](js))
		case *string:
			*o, err = chromedp.Run(bctx, chromedp.Evaluate[string](js))
		}
		if err != nil {
			t.Fatalf("evaluate %s: %v", js, err)
		}
	}

	url := "http://" + standby.HTTPAddr() + "/"
	run("load "+url, chromedp.Navigate(url))
	wait("the nodes and buckets", fmt.Sprintf(`document.querySelectorAll('#nodes tbody tr').length === 3 &&
		document.querySelectorAll('#buckets .bucket[data-master]:not([data-master=""])').length === %d`, testBuckets), 30*time.Second)

	// The page names every dataserver, shows every bucket, and says it is
	// a standby's view.
	var shown []string
	eval(`[...document.querySelectorAll('#nodes .addr')].map(e => e.dataset.addr).sort()`, &shown)
	if !slices.Equal(shown, dsAddrs) {
		t.Fatalf("nodes on the page %v, want %v", shown, dsAddrs)
	}
	var role string
	eval(`document.getElementById('role').textContent`, &role)
	if want := "standby, leader " + leader.Addr(); role != want {
		t.Errorf("role %q, want %q", role, want)
	}
	// Each node's master buckets on the page are the table's. The table
	// may still change (the first balancing moves), so the page and the
	// table are compared at one version: read the page's version and
	// masters in one evaluation, then the table, until they name the same
	// version.
	var masters, want map[string]int
	var pageVersion string
	deadline := time.Now().Add(15 * time.Second)
	type pageTable struct {
		Version string         `json:"version"`
		Masters map[string]int `json:"masters"`
	}
	for {
		page, err := chromedp.Run(bctx, chromedp.Evaluate[pageTable](`({version: document.getElementById('version').textContent,
			masters: [...document.querySelectorAll('#buckets .bucket')].reduce((m, b) => (m[b.dataset.master] = (m[b.dataset.master] || 0) + 1, m), {})})`))
		if err != nil {
			t.Fatalf("evaluate the page's table: %v", err)
		}
		tb := c.Table()
		want = map[string]int{}
		for _, row := range tb.Serving {
			want[row[0]]++
		}
		masters, pageVersion = page.Masters, page.Version
		if pageVersion == fmt.Sprintf("table v%d", tb.Version) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the page shows %q, the table is at v%d (after %v)", pageVersion, tb.Version, time.Since(began).Round(time.Millisecond))
		}
		time.Sleep(100 * time.Millisecond)
	}
	if fmt.Sprint(masters) != fmt.Sprint(want) {
		t.Fatalf("masters on the page at %s %v, want the table's %v", pageVersion, masters, want)
	}
	// Each node's memory (the engine's bytes and the RSS), and the
	// persistent node's disk (the others have none).
	wait("the nodes' memory and disk", fmt.Sprintf(`[...document.querySelectorAll('#nodes tbody tr')].every(tr => {
		const mem = tr.querySelector('td.mem').textContent, disk = tr.querySelector('td.disk').textContent;
		return /^[0-9.]+ (KiB|MiB|GiB)rss [0-9.]+ (MiB|GiB)$/.test(mem) &&
			(tr.dataset.key === %q ? /^[0-9.]+ (KiB|MiB|GiB)[0-9.]+ (MiB|GiB|TiB) free$/.test(disk) : disk === '–');
	})`, diskNode), 10*time.Second)
	// A key hammered through the proxy shows among the hot keys, with
	// the proxy that reported it.
	hammer, stopHammer := context.WithCancel(ctx)
	hammered := make(chan struct{})
	go func() {
		defer close(hammered)
		cl := redis.NewClient(&redis.Options{Addr: c.Proxies[0].Addr(), MaxRetries: -1})
		defer cl.Close()
		for hammer.Err() == nil {
			pipe := cl.Pipeline()
			for range 200 {
				pipe.Get(hammer, "user:0:7")
			}
			_, _ = pipe.Exec(hammer)
		}
	}()
	wait("the hot key", fmt.Sprintf(`(() => {
		const tr = document.querySelector('#hotkeys tr[data-key="0|user:0:7"]');
		return tr && !document.getElementById('hotkeys').hidden && parseInt(tr.cells[2].textContent.replace(/,/g, '')) >= 1000 &&
			tr.cells[3].textContent === %q;
	})()`, c.Proxies[0].Addr()), 20*time.Second)
	stopHammer()
	<-hammered
	wait("the areas", `document.querySelectorAll('#areas tbody tr').length >= 2 && document.querySelector('#areas .quota')`, 5*time.Second)

	// Drain one node from the page: its button, then the confirmation.
	victim := dsAddrs[2]
	run("drain "+victim,
		chromedp.Click(chromedp.CSS(fmt.Sprintf(`#nodes button[data-op="node-drain"][data-node="%s"]`, victim))),
		chromedp.WaitVisible(chromedp.CSS(`#confirm[open] #confirm-ok`)),
	)
	var question string
	eval(`document.getElementById('confirm-text').textContent`, &question)
	if !strings.Contains(question, "Drain "+victim) {
		t.Fatalf("confirmation %q", question)
	}
	run("confirm", chromedp.Click(chromedp.CSS(`#confirm-ok`)))
	// Refused with 401: the page asks for the credential. A wrong one is
	// refused; the drain again, the right one, and it is done.
	credential := func(cred string) {
		t.Helper()
		wait("the credential prompt", `document.getElementById('confirm').open && !document.getElementById('cred-label').hidden`, 10*time.Second)
		eval(`document.getElementById('confirm-text').textContent`, &question)
		if !strings.Contains(question, "admin credential") || !strings.Contains(question, "Drain "+victim) {
			t.Fatalf("credential prompt %q", question)
		}
		run("the credential", chromedp.SetValue(chromedp.CSS(`#cred`), cred), chromedp.Click(chromedp.CSS(`#confirm-ok`)))
	}
	credential("not-the-credential")
	wait("the refusal", fmt.Sprintf(`document.getElementById('flash').textContent === 'node-drain %s: refused — wrong admin credential'`, victim), 10*time.Second)
	var nodes []wire.NodeStatus
	if err := wc.Get(ctx, "/v1/nodes", &nodes); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		if n.Addr == victim && n.Draining {
			t.Fatalf("%s draining after a wrong credential", victim)
		}
	}
	run("drain "+victim+" again",
		chromedp.Click(chromedp.CSS(fmt.Sprintf(`#nodes button[data-op="node-drain"][data-node="%s"]`, victim))),
		chromedp.WaitVisible(chromedp.CSS(`#confirm[open] #confirm-ok`)), chromedp.Click(chromedp.CSS(`#confirm-ok`)))
	credential(adminToken)
	wait("the drain's reply", fmt.Sprintf(`document.getElementById('flash').textContent.startsWith('node-drain %s: done')`, victim), 10*time.Second)

	// The screenshot while buckets move (moving ones marked, a quarter of
	// the plan done), else after 8 s.
	shot := os.Getenv("TAIR_CONSOLE_SCREENSHOT")
	if shot == "" {
		shot = filepath.Join(t.TempDir(), "console.png")
	}
	moving, _ := chromedp.Run(bctx, chromedp.Poll[bool](`document.querySelectorAll('#buckets .bucket.moving').length > 3 &&
		parseFloat(document.getElementById('progress-bar').style.width) >= 25`,
		chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(8*time.Second)))
	png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if err := os.WriteFile(shot, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot (moves under way: %v) in %s", moving, shot)

	// The drain happens: no bucket keeps a copy on the victim, in the
	// table and on the page, and the page shows it draining and empty.
	wait("the victim's buckets gone from the page", fmt.Sprintf(`(() => {
		const bs = [...document.querySelectorAll('#buckets .bucket')];
		const row = document.querySelector('#nodes tr[data-key="%[1]s"]');
		return bs.length === %[2]d && !bs.some(b => b.title.includes('%[1]s')) &&
			row && row.textContent.includes('draining') && row.cells[3].textContent === '0' && row.cells[4].textContent === '0';
	})()`, victim, testBuckets), 40*time.Second)
	for b, row := range c.Table().Serving {
		if slices.Contains(row, victim) {
			t.Fatalf("bucket %d still on %s: %v", b, victim, row)
		}
	}
	var events []string
	eval(`[...document.querySelectorAll('#events li')].map(li => li.dataset.kind)`, &events)
	for _, k := range []string{configserver.EventAdmin, configserver.EventPlan, configserver.EventTable} {
		if !slices.Contains(events, k) {
			t.Errorf("no %s event on the page: %v", k, events)
		}
	}

	// Pause and resume migrations, and set an area's limits through the
	// form: each confirmed, each seen by the leader, the credential sent
	// without asking again.
	admin := func(what, click, reply string) {
		t.Helper()
		run(what, chromedp.Click(chromedp.CSS(click)), chromedp.WaitVisible(chromedp.CSS(`#confirm[open] #confirm-ok`)))
		var credAsked string
		eval(`String(!document.getElementById('cred-label').hidden)`, &credAsked)
		if credAsked != "false" {
			t.Fatalf("%s: the credential asked for again", what)
		}
		run(what+" confirmed", chromedp.Click(chromedp.CSS(`#confirm-ok`)))
		wait(what+"'s reply", fmt.Sprintf(`document.getElementById('flash').textContent.startsWith(%q)`, reply), 10*time.Second)
	}
	admin("pause", `button[data-op="migrations-pause"]`, "migrations-pause: done")
	wait("the paused badge", `!document.getElementById('paused').hidden`, 5*time.Second)
	admin("resume", `button[data-op="migrations-resume"]`, "migrations-resume: done")
	wait("no paused badge", `document.getElementById('paused').hidden`, 5*time.Second)
	run("fill the area form", chromedp.SetValue(chromedp.CSS(`#area-n`), "7"), chromedp.SetValue(chromedp.CSS(`#area-quota`), "64MiB"),
		chromedp.SetValue(chromedp.CSS(`#area-ops`), "1000"), chromedp.SetValue(chromedp.CSS(`#area-bytes`), "2k"))
	admin("area-set", `#area-form button[type=submit]`, "area-set 7: done")
	var areas map[uint16]wire.AreaConfig
	if err := wc.Get(ctx, "/v1/areas", &areas); err != nil {
		t.Fatal(err)
	}
	if got, want := areas[7], (wire.AreaConfig{QuotaBytes: 64 << 20, OpsLimit: 1000, BytesLimit: 2048}); got != want {
		t.Errorf("area 7 after the form: %+v, want %+v", got, want)
	}
	wait("area 7 on the page", `document.querySelector('#areas tr[data-key="7"]') !== null`, 5*time.Second)
	t.Logf("done in %v", time.Since(began).Round(time.Millisecond))
}

package configserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tairkv/tair/internal/route"
	"github.com/tairkv/tair/internal/testutil"
	"github.com/tairkv/tair/internal/wire"
)

// httpGet fetches url and decodes its JSON body into v (when not nil),
// returning the status.
func httpGet(t *testing.T, url string, v any) int {
	t.Helper()
	code, body := fetch(t, url)
	if v != nil && code == http.StatusOK {
		if err := json.Unmarshal(body, v); err != nil {
			t.Fatalf("GET %s: %v in %q", url, err, body)
		}
	}
	return code
}

func httpPostAdmin(t *testing.T, url, contentType string, req wire.AdminRequest) (int, wire.AdminReply) {
	t.Helper()
	data, _ := json.Marshal(req)
	resp, err := http.Post(url+"/v1/admin", contentType, bytes.NewReader(data))
	if err != nil {
		t.Fatalf("POST admin: %v", err)
	}
	defer resp.Body.Close()
	var reply wire.AdminReply
	if resp.StatusCode == http.StatusOK {
		if err := json.NewDecoder(resp.Body).Decode(&reply); err != nil {
			t.Fatal(err)
		}
	}
	return resp.StatusCode, reply
}

// TestConsoleOnHTTP: the --http address serves the console page and the
// API it reads; a standby answers the API as the leader sees it
// (forwarded); admin operations there must be declared JSON; the leader
// records events (joins, table versions with their reason, admin
// requests, plan done).
func TestConsoleOnHTTP(t *testing.T) {
	cfg := sharedEtcdConfig(t)
	cfg.MovesPerNode = 4
	a := startLeader(t, cfg)
	b := startServer(t, cfg)
	for _, addr := range dsAddrs[:3] {
		d := newFakeDS(t, addr, a.Addr(), b.Addr())
		d.migrate.Store(true)
	}
	first := waitTable(t, a, 5*time.Second, func(*route.Table) bool { return true }, "any")
	leaderURL, standbyURL := "http://"+a.HTTPAddr(), "http://"+b.HTTPAddr()

	// The page itself, on both.
	for _, u := range []string{leaderURL, standbyURL} {
		resp, err := http.Get(u + "/")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") ||
			!strings.Contains(string(body), "Tair console") {
			t.Fatalf("GET %s/: %d %s", u, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
	}
	// /metrics and /status keep working beside it.
	var st wire.Status
	if code := httpGet(t, standbyURL+"/status", &st); code != 200 || st.Role != "standby" || st.Leader != a.Addr() {
		t.Fatalf("standby /status: %d %+v", code, st)
	}
	if code := httpGet(t, leaderURL+"/metrics", nil); code != 200 {
		t.Fatalf("/metrics: %d", code)
	}

	// The same nodes from the leader's and the standby's --http (which
	// forwards: a standby has no heartbeats of its own).
	for _, u := range []string{leaderURL, standbyURL} {
		testutil.Eventually(t, 3*time.Second, func() bool {
			var nodes []wire.NodeStatus
			if httpGet(t, u+"/v1/nodes", &nodes) != 200 || len(nodes) != 3 {
				return false
			}
			for _, n := range nodes {
				if !n.Alive || !slices.Contains(dsAddrs[:3], n.Addr) {
					return false
				}
			}
			return true
		}, "3 live nodes from %s/v1/nodes", u)
		var tb route.Table
		if code := httpGet(t, u+"/v1/table", &tb); code != 200 || tb.Buckets != cfg.Buckets || tb.Version < first.Version {
			t.Fatalf("%s/v1/table: %d, %d buckets v%d", u, code, tb.Buckets, tb.Version)
		}
		var mig wire.MigrationStatus
		if code := httpGet(t, u+"/v1/migrations", &mig); code != 200 {
			t.Fatalf("%s/v1/migrations: %d", u, code)
		}
		var stats map[string]map[uint16]wire.AreaStats
		if code := httpGet(t, u+"/v1/stats", &stats); code != 200 {
			t.Fatalf("%s/v1/stats: %d", u, code)
		}
		var proxies wire.ProxyList
		if code := httpGet(t, u+"/v1/proxies", &proxies); code != 200 {
			t.Fatalf("%s/v1/proxies: %d", u, code)
		}
	}
	// A proxy heard from is listed.
	if _, err := wire.NewClient(a.Addr()).ProxyBeat(t.Context(), &wire.ProxyBeat{Addr: "127.0.0.1:6379"}); err != nil {
		t.Fatal(err)
	}
	var proxies wire.ProxyList
	if httpGet(t, standbyURL+"/v1/proxies", &proxies); !slices.Equal(proxies.Proxies, []string{"127.0.0.1:6379"}) {
		t.Fatalf("proxies via the standby: %v", proxies.Proxies)
	}

	// Admin on --http: refused unless declared JSON (no cross-site form
	// posts), applied through the standby too.
	if code, _ := httpPostAdmin(t, standbyURL, "text/plain", wire.AdminRequest{Op: "area-set", Area: 3}); code != http.StatusUnsupportedMediaType {
		t.Fatalf("text/plain admin: %d, want 415", code)
	}
	req := wire.AdminRequest{Op: "area-set", Area: 3, Config: wire.AreaConfig{QuotaBytes: 1 << 20, OpsLimit: 500}}
	if code, reply := httpPostAdmin(t, standbyURL, "application/json", req); code != 200 || !reply.OK {
		t.Fatalf("area-set via the standby: %d %+v", code, reply)
	}
	var areas map[uint16]wire.AreaConfig
	if httpGet(t, leaderURL+"/v1/areas", &areas); areas[3] != req.Config {
		t.Fatalf("areas after area-set: %+v", areas)
	}
	victim := dsAddrs[2]
	if code, reply := httpPostAdmin(t, leaderURL, "application/json", wire.AdminRequest{Op: "node-drain", Node: victim}); code != 200 || !reply.OK {
		t.Fatalf("drain: %d %+v", code, reply)
	}
	waitTable(t, a, 20*time.Second, func(tb *route.Table) bool { return !holds(tb, victim) && !planLeft(tb) }, "victim drained")

	// The events of it all, through the standby.
	var events []Event
	testutil.Eventually(t, 3*time.Second, func() bool {
		events = nil
		if httpGet(t, standbyURL+"/v1/events", &events) != 200 {
			return false
		}
		return slices.ContainsFunc(events, func(e Event) bool { return e.Kind == EventPlanDone })
	}, "a migrations-done event")
	has := func(kind, node, text string) bool {
		return slices.ContainsFunc(events, func(e Event) bool {
			return e.Kind == kind && e.Node == node && strings.Contains(e.Message, text) && e.AtMS > 0
		})
	}
	for _, want := range []struct{ kind, node, text string }{
		{EventNodeJoined, dsAddrs[0], "joined"},
		{EventTable, "", "first table"},
		{EventAdmin, "", "area-set 3 quota=1048576 ops=500"},
		{EventAdmin, victim, "node-drain"},
		{EventPlan, "", "migrations planned"},
		{EventTable, "", "moves done"},
	} {
		if !has(want.kind, want.node, want.text) {
			t.Errorf("no %s event for %q with %q in %+v", want.kind, want.node, want.text, events)
		}
	}
	for i := 1; i < len(events); i++ {
		if events[i].AtMS < events[i-1].AtMS {
			t.Fatalf("events out of order at %d: %+v", i, events)
		}
	}
	last := events[len(events)-1].AtMS
	var newer []Event
	if httpGet(t, fmt.Sprintf("%s/v1/events?since=%d", leaderURL, last), &newer); len(newer) == 0 ||
		slices.ContainsFunc(newer, func(e Event) bool { return e.AtMS < last }) {
		t.Fatalf("events since %d: %+v", last, newer)
	}

	// A node that stops heartbeating is a node-down event.
	d := newFakeDS(t, dsAddrs[3], a.Addr())
	testutil.Eventually(t, 3*time.Second, func() bool { return holdsAlive(a, dsAddrs[3]) }, "4th node alive")
	d.stop()
	testutil.Eventually(t, 5*time.Second, func() bool {
		events = nil
		httpGet(t, leaderURL+"/v1/events", &events)
		return has(EventNodeDown, dsAddrs[3], "heartbeats missed")
	}, "node-down event for %s", dsAddrs[3])
}

func holdsAlive(s *Server, addr string) bool {
	for _, n := range s.nodeStatus() {
		if n.Addr == addr && n.Alive {
			return true
		}
	}
	return false
}

// TestEventRing: the ring keeps the newest eventCap events, oldest first.
func TestEventRing(t *testing.T) {
	var l eventLog
	start := time.Now()
	for i := range eventCap + 10 {
		l.add(Event{Kind: EventTable, TableVersion: route.Version(i + 1), Message: "x"})
	}
	got := l.since(start.Add(-time.Second))
	if len(got) != eventCap || got[0].TableVersion != 11 || got[len(got)-1].TableVersion != eventCap+10 {
		t.Fatalf("ring: %d events, first v%d last v%d", len(got), got[0].TableVersion, got[len(got)-1].TableVersion)
	}
	if n := len(l.since(time.Now().Add(time.Hour))); n != 0 {
		t.Fatalf("%d events in the future", n)
	}
}

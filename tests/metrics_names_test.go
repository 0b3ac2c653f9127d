package tests

import (
	"context"
	"encoding/json"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/tairkv/tair/cluster"
	"github.com/tairkv/tair/internal/testcluster"
	"github.com/tairkv/tair/internal/testutil"
)

// promSynthetic are the series Prometheus makes itself for every target
// (no process exports them); the alert rules may use them.
var promSynthetic = map[string]bool{"up": true}

// TestMetricsNamesExported: every metric the Grafana dashboard
// (deploy/grafana/tair.json) and the alert rules
// (deploy/prometheus/alerts.yml) name is exported by a running cluster's
// configserver, dataservers or proxy at /metrics, so neither reads a
// series that does not exist (a renamed metric would leave a panel empty
// and an alert silent). It also checks the redis_exporter names the
// proxies and dataservers export, and that they count what they say.
func TestMetricsNamesExported(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{Options: cluster.Options{DataServers: 3, Copies: 2, Buckets: 64}})
	ctx := context.Background()
	rc := c.Client(0)
	for i := 0; i < 50; i++ {
		k := "k" + strconv.Itoa(i)
		if err := rc.Set(ctx, k, "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
		if err := rc.Get(ctx, k).Err(); err != nil {
			t.Fatal(err)
		}
	}
	rc.Get(ctx, "missing")
	rc.Do(ctx, "incr", "k1")                     // an error reply: failed_calls
	rc.Do(ctx, "set", "ttl1", "v", "ex", "1000") // an expiring key
	area5 := selectConn(t, rc, 5)
	defer area5.Close()
	if err := area5.Set(ctx, "a5", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}

	exported := map[string]bool{}
	scrape := func(role, addr string) string {
		t.Helper()
		body := httpGet(t, "http://"+addr+"/metrics")
		n := 0
		for _, ln := range strings.Split(body, "\n") {
			if ln == "" || ln[0] == '#' {
				continue
			}
			name := ln
			if i := strings.IndexAny(ln, "{ "); i >= 0 {
				name = ln[:i]
			}
			exported[name] = true
			n++
		}
		if n == 0 {
			t.Fatalf("%s %s exports no metric", role, addr)
		}
		return body
	}
	for _, cs := range c.ConfigServers {
		scrape("configserver", cs.HTTPAddr())
	}
	var dsBodies []string
	for _, ds := range c.DataServers {
		dsBodies = append(dsBodies, scrape("dataserver", ds.HTTPAddr()))
	}
	proxyBody := scrape("proxy", c.Proxies[0].HTTPAddr())

	// redis_exporter's names, where the figure lives.
	for _, name := range []string{"redis_up", "redis_commands_processed_total", "redis_commands_total",
		"redis_commands_duration_seconds_total", "redis_commands_failed_calls_total", "redis_connected_clients",
		"redis_connections_received_total", "redis_net_input_bytes_total", "redis_net_output_bytes_total"} {
		if !strings.Contains(proxyBody, "\n"+name+" ") && !strings.Contains(proxyBody, "\n"+name+"{") {
			t.Errorf("the proxy does not export %s", name)
		}
	}
	for _, want := range []string{`redis_commands_total{cmd="get"} 51`, `redis_commands_total{cmd="set"} 52`,
		`redis_commands_failed_calls_total{cmd="incr"} 1`} {
		if !strings.Contains(proxyBody, "\n"+want+"\n") {
			t.Errorf("proxy /metrics has no line %q", want)
		}
	}
	if m := regexp.MustCompile(`\nredis_connected_clients (\d+)\n`).FindStringSubmatch(proxyBody); m == nil || m[1] == "0" {
		t.Errorf("proxy /metrics: redis_connected_clients %v with clients connected", m)
	}
	sum := func(prefix string) float64 {
		var total float64
		for _, body := range dsBodies {
			for _, ln := range strings.Split(body, "\n") {
				if v, ok := strings.CutPrefix(ln, prefix+" "); ok {
					f, err := strconv.ParseFloat(v, 64)
					if err != nil {
						t.Fatalf("%q: %v", ln, err)
					}
					total += f
				}
			}
		}
		return total
	}
	if hits := sum("redis_keyspace_hits_total"); hits < 50 {
		t.Errorf("dataservers' redis_keyspace_hits_total sum to %v after 50 GETs of existing keys", hits)
	}
	if misses := sum("redis_keyspace_misses_total"); misses < 1 {
		t.Errorf("dataservers' redis_keyspace_misses_total sum to %v after a GET of a missing key", misses)
	}
	// Every key is held by both copies.
	if keys := sum(`redis_db_keys{db="db0"}`); keys != 2*51 {
		t.Errorf(`redis_db_keys{db="db0"} sums to %v over the dataservers, want %d (51 keys, 2 copies)`, keys, 2*51)
	}
	if keys := sum(`redis_db_keys{db="db5"}`); keys != 2 {
		t.Errorf(`redis_db_keys{db="db5"} sums to %v, want 2`, keys)
	}
	if used := sum("redis_memory_used_bytes"); used <= 0 {
		t.Errorf("redis_memory_used_bytes sums to %v", used)
	}
	for _, name := range []string{"redis_expired_keys_total", "redis_evicted_keys_total", "redis_memory_max_bytes",
		"tair_dataserver_table_version", `tair_dataserver_buckets{role="master"}`} {
		if !strings.Contains(dsBodies[0], "\n"+name+" ") {
			t.Errorf("dataserver /metrics has no %s", name)
		}
	}
	if m := sum(`tair_dataserver_buckets{role="master"}`); m != 64 {
		t.Errorf("the dataservers master %v buckets in all, want 64", m)
	}

	var used []usedName
	used = append(used, dashboardNames(t, "../deploy/grafana/tair.json")...)
	used = append(used, alertNames(t, "../deploy/prometheus/alerts.yml")...)
	if len(used) < 50 {
		t.Fatalf("only %d metric uses found in the dashboard and the alert rules: the extractor is broken", len(used))
	}
	for _, u := range used {
		if !exported[u.name] && !promSynthetic[u.name] {
			t.Errorf("%s: %q names %s, which no process of the cluster exports", u.where, u.expr, u.name)
		}
	}
	if t.Failed() {
		names := make([]string, 0, len(exported))
		for n := range exported {
			if strings.HasPrefix(n, "tair_") || strings.HasPrefix(n, "redis_") {
				names = append(names, n)
			}
		}
		sort.Strings(names)
		t.Logf("exported: %s", strings.Join(names, " "))
	}
}

// TestInfoSumsDataservers: the proxy's INFO shows the dataservers'
// figures: keyspace_hits/misses, expired_keys, evicted_keys in Stats,
// used_memory in Memory, and real keys/expires/avg_ttl per area in
// Keyspace.
func TestInfoSumsDataservers(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{Options: cluster.Options{DataServers: 2, Copies: 2, Buckets: 64}})
	ctx := context.Background()
	rc := c.Client(0)
	info := func(section string) map[string]string {
		t.Helper()
		s, err := rc.Info(ctx, section).Result()
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, ln := range strings.Split(s, "\r\n") {
			if k, v, ok := strings.Cut(ln, ":"); ok {
				out[k] = v
			}
		}
		return out
	}
	num := func(m map[string]string, k string) int64 {
		t.Helper()
		v, ok := m[k]
		if !ok {
			t.Fatalf("INFO has no %s", k)
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatalf("INFO %s:%s: %v", k, v, err)
		}
		return n
	}
	st := info("stats")
	hits0, misses0 := num(st, "keyspace_hits"), num(st, "keyspace_misses")
	num(st, "expired_keys")
	num(st, "evicted_keys")
	for i := 0; i < 10; i++ {
		rc.Set(ctx, "k"+strconv.Itoa(i), "v", 0)
		rc.Get(ctx, "k"+strconv.Itoa(i))
	}
	rc.Get(ctx, "nope1")
	rc.Get(ctx, "nope2")
	rc.Set(ctx, "t1", "v", 100*time.Second)
	rc.Set(ctx, "t2", "v", 200*time.Second)
	rc.Set(ctx, "gone", "v", 50*time.Millisecond)
	time.Sleep(100 * time.Millisecond)
	rc.Set(ctx, "gone", "w", 0) // a write on the expired key reclaims it

	st = info("stats")
	if d := num(st, "keyspace_hits") - hits0; d < 10 {
		t.Errorf("keyspace_hits grew by %d after 10 GETs of existing keys", d)
	}
	if d := num(st, "keyspace_misses") - misses0; d < 2 {
		t.Errorf("keyspace_misses grew by %d after 2 GETs of missing keys", d)
	}
	if n := num(st, "expired_keys"); n < 1 {
		t.Errorf("expired_keys is %d after a write on an expired key", n)
	}
	mem := info("memory")
	if n := num(mem, "used_memory"); n <= 0 {
		t.Errorf("used_memory is %d with keys stored", n)
	}
	num(mem, "maxmemory")
	ks := info("keyspace")
	line, ok := ks["db0"]
	if !ok {
		t.Fatalf("INFO keyspace has no db0: %v", ks)
	}
	m := regexp.MustCompile(`^keys=(\d+),expires=(\d+),avg_ttl=(\d+)$`).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("db0:%s is not keys=N,expires=N,avg_ttl=N", line)
	}
	if m[1] != "13" || m[2] != "2" {
		t.Errorf("db0:%s, want keys=13 (k0..k9, t1, t2, gone), expires=2 (t1, t2)", line)
	}
	// t1 and t2 have 100 s and 200 s left: 150 s on average, less what
	// the test took.
	if avg, _ := strconv.Atoi(m[3]); avg < 140000 || avg > 150000 {
		t.Errorf("db0 avg_ttl=%d ms, want about 150000", avg)
	}
	// A second area is listed too, as Redis lists every db with keys.
	area3 := selectConn(t, rc, 3)
	defer area3.Close()
	if err := area3.Set(ctx, "x", "y", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if got := info("keyspace")["db3"]; got != "keys=1,expires=0,avg_ttl=0" {
		t.Errorf("db3:%s, want keys=1,expires=0,avg_ttl=0", got)
	}
}

func httpGet(t *testing.T, url string) string { t.Helper(); return testutil.HTTPGetOK(t, url) }

// usedName is one metric a PromQL expression names.
type usedName struct{ name, expr, where string }

// dashboardNames returns the metrics every PromQL expression of a Grafana
// dashboard names (each "expr" string, and the templating queries).
func dashboardNames(t *testing.T, path string) []usedName {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var out []usedName
	var walk func(v any, where string)
	walk = func(v any, where string) {
		switch v := v.(type) {
		case map[string]any:
			if title, ok := v["title"].(string); ok {
				where = path + ": " + title
			}
			for k, x := range v {
				if s, ok := x.(string); ok && k == "expr" {
					for _, n := range promqlMetricNames(s) {
						out = append(out, usedName{n, s, where})
					}
					continue
				}
				walk(x, where)
			}
		case []any:
			for _, x := range v {
				walk(x, where)
			}
		}
	}
	walk(doc, path)
	return out
}

// alertNames returns the metrics the alert rules' expressions name; the
// file must be a valid rule file's shape (groups of named rules, each an
// alert with an expression).
func alertNames(t *testing.T, path string) []usedName {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Groups []struct {
			Name  string `yaml:"name"`
			Rules []struct {
				Alert       string            `yaml:"alert"`
				Record      string            `yaml:"record"`
				Expr        string            `yaml:"expr"`
				For         string            `yaml:"for"`
				Labels      map[string]string `yaml:"labels"`
				Annotations map[string]string `yaml:"annotations"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	dec.KnownFields(true)
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if len(doc.Groups) == 0 {
		t.Fatalf("%s: no rule groups", path)
	}
	var out []usedName
	seen := map[string]bool{}
	for _, g := range doc.Groups {
		for _, r := range g.Rules {
			where := path + ": " + g.Name + "/" + r.Alert + r.Record
			if (r.Alert == "") == (r.Record == "") || r.Expr == "" {
				t.Errorf("%s: a rule needs an alert (or record) name and an expr", where)
			}
			if r.Alert != "" && seen[r.Alert] {
				t.Errorf("%s: alert %s defined twice", where, r.Alert)
			}
			seen[r.Alert] = true
			if r.For != "" {
				if _, err := time.ParseDuration(r.For); err != nil {
					t.Errorf("%s: for: %v", where, err)
				}
			}
			names := promqlMetricNames(r.Expr)
			if len(names) == 0 {
				t.Errorf("%s: %q names no metric", where, r.Expr)
			}
			for _, n := range names {
				out = append(out, usedName{n, r.Expr, where})
			}
		}
	}
	return out
}

var (
	promStrings   = regexp.MustCompile("\"(?:[^\"\\\\]|\\\\.)*\"|'(?:[^'\\\\]|\\\\.)*'|`[^`]*`")
	promMatchers  = regexp.MustCompile(`\{[^{}]*\}`)
	promRanges    = regexp.MustCompile(`\[[^\[\]]*\]`)
	promGrouping  = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)`)
	promOffset    = regexp.MustCompile(`\boffset\s+-?[0-9a-zA-Z]+`)
	promVariables = regexp.MustCompile(`\$\{[^}]*\}|\$[A-Za-z_][A-Za-z0-9_]*`)
	promIdent     = regexp.MustCompile(`(^|[^A-Za-z0-9_:.])([A-Za-z_:][A-Za-z0-9_:]*)`)
	// label_values(metric, label) in Grafana's templating: the metric only.
	promLabelValues = regexp.MustCompile(`label_values\(\s*([^,()]+?)\s*(?:,[^()]*)?\)`)
)

// promqlKeywords are the words of PromQL that are not metric names when
// not followed by "(" (binary operators, modifiers, literals).
var promqlKeywords = map[string]bool{"and": true, "or": true, "unless": true, "bool": true, "offset": true,
	"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
	"inf": true, "nan": true, "Inf": true, "NaN": true, "atan2": true}

// promqlMetricNames extracts the metric names a PromQL expression reads:
// identifiers outside strings, label matchers, ranges and grouping
// clauses that are not functions, aggregations or keywords. (The real
// parser, prometheus/promql/parser, is a heavy dependency for this.)
func promqlMetricNames(expr string) []string {
	e := promLabelValues.ReplaceAllString(expr, "$1")
	e = promStrings.ReplaceAllString(e, `""`)
	e = promVariables.ReplaceAllString(e, "")
	for prev := ""; prev != e; {
		prev = e
		e = promMatchers.ReplaceAllString(e, " ")
	}
	e = promRanges.ReplaceAllString(e, " ")
	e = promGrouping.ReplaceAllString(e, " ")
	e = promOffset.ReplaceAllString(e, " ")
	var out []string
	seen := map[string]bool{}
	for _, m := range promIdent.FindAllStringSubmatchIndex(e, -1) {
		name := e[m[4]:m[5]]
		rest := strings.TrimLeft(e[m[5]:], " \t\n")
		if strings.HasPrefix(rest, "(") || promqlKeywords[name] || seen[name] {
			continue
		}
		seen[name] = true
		out = append(out, name)
	}
	return out
}

// TestPromqlMetricNames: the extractor finds the metrics, and only them.
func TestPromqlMetricNames(t *testing.T) {
	for expr, want := range map[string]string{
		`up{job="tair-dataserver"} == 0`: "up",
		`sum by (instance) (rate(redis_commands_failed_calls_total{cmd=~"get|set"}[5m])) / sum by (instance) (rate(redis_commands_total[$__rate_interval])) > 0.05`: "redis_commands_failed_calls_total redis_commands_total",
		`histogram_quantile(0.99, sum by (le) (rate(tair_proxy_command_duration_seconds_bucket[5m])))`:                                                              "tair_proxy_command_duration_seconds_bucket",
		`(a_known - b_alive) * on (instance) group_left (job) c_leader > 0 and rate(d_total[15m] offset 1h) == 0 or vector(1e3)`:                                    "a_known b_alive c_leader d_total",
		`label_values(redis_up, instance)`:                                   "redis_up",
		`x_bytes / (y_bytes > 0) > 0.9 unless ignoring(area) z bool`:         "x_bytes y_bytes z",
		`sum(increase(m_total{reason="a{b}"}[1h])) + max(n:recorded:rate5m)`: "m_total n:recorded:rate5m",
	} {
		if got := strings.Join(promqlMetricNames(expr), " "); got != want {
			t.Errorf("%s: got %q, want %q", expr, got, want)
		}
	}
}

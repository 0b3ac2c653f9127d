package proxy

import (
	"encoding/json"
	"math/bits"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/tairkv/tair/internal/pprofhttp"
)

// cmdStat counts one command's calls (INFO commandstats and the
// tair_proxy_commands_total metric read them).
type cmdStat struct {
	name     string
	calls    atomic.Int64
	usec     atomic.Int64
	failed   atomic.Int64
	rejected atomic.Int64
	// hist[i] counts calls of at most 2^i microseconds (i=0: <=1us).
	hist [32]atomic.Int64
}

// percentile returns the upper bound (us) of the bucket holding quantile q.
func (c *cmdStat) percentile(q float64) float64 {
	var total int64
	for i := range c.hist {
		total += c.hist[i].Load()
	}
	if total == 0 {
		return 0
	}
	want := int64(q * float64(total))
	if want < 1 {
		want = 1
	}
	var seen int64
	for i := range c.hist {
		seen += c.hist[i].Load()
		if seen >= want {
			return float64(uint64(1) << i)
		}
	}
	return float64(uint64(1) << 31)
}

func (c *cmdStat) record(d time.Duration, isErr, rejected bool) {
	if rejected {
		c.rejected.Add(1)
		return
	}
	c.calls.Add(1)
	us := d.Microseconds()
	c.usec.Add(us)
	i := 0
	if us > 1 {
		i = bits.Len64(uint64(us - 1))
		if i > 31 {
			i = 31
		}
	}
	c.hist[i].Add(1)
	if isErr {
		c.failed.Add(1)
	}
}

// metrics are a server's Prometheus collectors, in its own registry (a
// process may run several proxies).
type metrics struct {
	reg              *prometheus.Registry
	latency          prometheus.Histogram
	backendErrors    *prometheus.CounterVec
	retries          *prometheus.CounterVec
	tableVersion     prometheus.Gauge
	tableFetchErrors prometheus.Counter
	clients          prometheus.Gauge
	backendConns     prometheus.Gauge
	authFailures     prometheus.Counter
	clientEvictions  prometheus.Counter
	panics           prometheus.Counter // every panic, contained or not
	sessionPanics    prometheus.Counter // those that ended a session

	statsMu sync.Mutex
	stats   atomic.Pointer[map[string]*cmdStat] // copy-on-write
}

func newMetrics(s *Server) *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	m.latency = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "tair_proxy_command_duration_seconds", Help: "Time from reading a command to having its reply.",
		Buckets: prometheus.ExponentialBuckets(50e-6, 2, 16),
	})
	m.backendErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tair_proxy_backend_errors_total", Help: "Dataserver connection failures by kind (dial, read, write, timeout).",
	}, []string{"kind"})
	m.retries = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tair_proxy_retries_total", Help: "Commands sent again, by reason.",
	}, []string{"reason"})
	m.tableVersion = prometheus.NewGauge(prometheus.GaugeOpts{Name: "tair_proxy_table_version", Help: "Version of the bucket table in use."})
	m.tableFetchErrors = prometheus.NewCounter(prometheus.CounterOpts{Name: "tair_proxy_table_fetch_errors_total", Help: "Failed table fetches from the configservers."})
	m.clients = prometheus.NewGauge(prometheus.GaugeOpts{Name: "tair_proxy_clients", Help: "Connected clients."})
	m.backendConns = prometheus.NewGauge(prometheus.GaugeOpts{Name: "tair_proxy_backend_connections", Help: "Open dataserver connections."})
	m.authFailures = prometheus.NewCounter(prometheus.CounterOpts{Name: "tair_proxy_auth_failures_total", Help: "Failed AUTH/HELLO AUTH attempts."})
	m.clientEvictions = prometheus.NewCounter(prometheus.CounterOpts{Name: "tair_proxy_client_output_evictions_total", Help: "Clients closed for not reading their replies."})
	m.panics = prometheus.NewCounter(prometheus.CounterOpts{Name: "tair_proxy_panics_total", Help: "Panics while handling commands (a bug): each command's is answered with an error and the proxy serves on."})
	m.sessionPanics = prometheus.NewCounter(prometheus.CounterOpts{Name: "tair_proxy_session_panics_total", Help: "Client sessions ended by an internal error (a bug)."})
	// Every label value exported from the start, at 0: a rate() over a
	// series that appears only with its first count misses that count.
	for _, k := range []string{"dial", "read", "write", "timeout"} {
		m.backendErrors.WithLabelValues(k)
	}
	for _, k := range []retryKind{retryNotMaster, retryTryAgain, retryConn, retryNoMaster} {
		m.retries.WithLabelValues(k.String())
	}
	m.retries.WithLabelValues("resplit")
	empty := map[string]*cmdStat{}
	m.stats.Store(&empty)
	loopFwd := prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "tair_proxy_loop_forwarded_total", Help: "Commands an event loop handled itself (the fast path): forwarded on its own dataserver connections, or answered from the hot-key cache.",
	}, func() float64 { return float64(s.stats.loopFwd.Load()) })
	batches := prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "tair_proxy_session_batches_total", Help: "Batches of commands run by session goroutines (everything the loops do not forward).",
	}, func() float64 { return float64(s.stats.batches.Load()) })
	m.reg.MustRegister(loopFwd, batches)
	m.reg.MustRegister(m.latency, m.backendErrors, m.retries, m.tableVersion, m.tableFetchErrors,
		m.clients, m.backendConns, m.authFailures, m.clientEvictions, m.panics, m.sessionPanics, &cmdCollector{m: m},
		&redisCollector{s: s},
		prometheus.NewGoCollector(), prometheus.NewProcessCollector(prometheus.ProcessCollectorOpts{}))
	return m
}

// stat returns the counters of a command, creating them.
func (m *metrics) stat(name string) *cmdStat {
	if c := (*m.stats.Load())[name]; c != nil {
		return c
	}
	m.statsMu.Lock()
	defer m.statsMu.Unlock()
	old := *m.stats.Load()
	if c := old[name]; c != nil {
		return c
	}
	next := make(map[string]*cmdStat, len(old)+1)
	for k, v := range old {
		next[k] = v
	}
	c := &cmdStat{name: name}
	next[name] = c
	m.stats.Store(&next)
	return c
}

func (m *metrics) sortedStats() []*cmdStat {
	st := *m.stats.Load()
	out := make([]*cmdStat, 0, len(st))
	for _, c := range st {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

func (m *metrics) resetStats() {
	for _, c := range m.sortedStats() {
		c.calls.Store(0)
		c.usec.Store(0)
		c.failed.Store(0)
		c.rejected.Store(0)
		for i := range c.hist {
			c.hist[i].Store(0)
		}
	}
}

type cmdCollector struct{ m *metrics }

// redisCollector exports the proxy's INFO figures under redis_exporter's
// names, so that dashboards and alerts written for Redis read a proxy as
// they read a redis-server: the commands it answered, its clients and
// connections. The keyspace's figures (hits, misses, expired, evicted,
// memory, keys) are the dataservers' (dataserver/metrics.go).
type redisCollector struct{ s *Server }

var (
	descRedisUp         = prometheus.NewDesc("redis_up", "1 while the proxy has a bucket table to route by (redis_exporter's name).", nil, nil)
	descRedisUptime     = prometheus.NewDesc("redis_uptime_in_seconds", "Seconds since the proxy started.", nil, nil)
	descRedisProcessed  = prometheus.NewDesc("redis_commands_processed_total", "Commands the proxy processed (INFO total_commands_processed).", nil, nil)
	descRedisCalls      = prometheus.NewDesc("redis_commands_total", "Calls per command (INFO commandstats calls).", []string{"cmd"}, nil)
	descRedisSeconds    = prometheus.NewDesc("redis_commands_duration_seconds_total", "Time spent per command, from reading it to having its reply (INFO commandstats usec).", []string{"cmd"}, nil)
	descRedisFailed     = prometheus.NewDesc("redis_commands_failed_calls_total", "Calls per command answered with an error (INFO commandstats failed_calls).", []string{"cmd"}, nil)
	descRedisRejected   = prometheus.NewDesc("redis_commands_rejected_calls_total", "Calls per command refused before they ran (INFO commandstats rejected_calls).", []string{"cmd"}, nil)
	descRedisClients    = prometheus.NewDesc("redis_connected_clients", "Connected clients (INFO connected_clients).", nil, nil)
	descRedisBlocked    = prometheus.NewDesc("redis_blocked_clients", "Clients in a blocking command (INFO blocked_clients).", nil, nil)
	descRedisConns      = prometheus.NewDesc("redis_connections_received_total", "Client connections accepted (INFO total_connections_received).", nil, nil)
	descRedisRejConns   = prometheus.NewDesc("redis_rejected_connections_total", "Client connections refused for maxclients (INFO rejected_connections).", nil, nil)
	descRedisNetIn      = prometheus.NewDesc("redis_net_input_bytes_total", "Bytes read from clients (INFO total_net_input_bytes).", nil, nil)
	descRedisNetOut     = prometheus.NewDesc("redis_net_output_bytes_total", "Bytes written to clients (INFO total_net_output_bytes).", nil, nil)
	descHotKeys         = prometheus.NewDesc("tair_proxy_hot_keys", "Keys this proxy saw hot in the last full window (TAIR.HOTKEYS).", nil, nil)
	descHotCacheHits    = prometheus.NewDesc("tair_proxy_hot_cache_hits_total", "GETs of hot keys answered from the proxy's hot-key cache (--hot-cache-ttl).", nil, nil)
	descHotCacheMisses  = prometheus.NewDesc("tair_proxy_hot_cache_misses_total", "GETs of hot keys the hot-key cache did not hold.", nil, nil)
	descHotCacheEntries = prometheus.NewDesc("tair_proxy_hot_cache_keys", "Keys held in the hot-key cache.", nil, nil)
	descHotCacheInvals  = prometheus.NewDesc("tair_proxy_hot_cache_invalidations_total", "Invalidations of hot-key cache entries pushed by the dataservers (a cached key changed).", nil, nil)
	descHotCacheClears  = prometheus.NewDesc("tair_proxy_hot_cache_clears_total", "Times the whole hot-key cache was dropped for a push it may have missed (an invalidation link down, a bucket's master changed, FLUSHALL, evictions).", nil, nil)
)

func (c *redisCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descRedisUp, descRedisUptime, descRedisProcessed, descRedisCalls, descRedisSeconds,
		descRedisFailed, descRedisRejected, descRedisClients, descRedisBlocked, descRedisConns, descRedisRejConns,
		descRedisNetIn, descRedisNetOut, descHotKeys, descHotCacheHits, descHotCacheMisses, descHotCacheEntries, descHotCacheInvals, descHotCacheClears} {
		ch <- d
	}
}

func (c *redisCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.s
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	up := 0.0
	if s.r.load() != nil {
		up = 1
	}
	gauge(descRedisUp, up)
	gauge(descRedisUptime, time.Since(s.start).Seconds())
	counter(descRedisProcessed, float64(s.stats.commands.Load()))
	for _, st := range s.m.sortedStats() {
		calls, rej := st.calls.Load(), st.rejected.Load()
		if calls == 0 && rej == 0 {
			continue // INFO commandstats leaves them out too
		}
		counter(descRedisCalls, float64(calls), st.name)
		counter(descRedisSeconds, float64(st.usec.Load())/1e6, st.name)
		counter(descRedisFailed, float64(st.failed.Load()), st.name)
		counter(descRedisRejected, float64(rej), st.name)
	}
	gauge(descRedisClients, float64(s.clients.Load()))
	gauge(descRedisBlocked, float64(s.stats.blocked.Load()))
	counter(descRedisConns, float64(s.stats.connections.Load()))
	counter(descRedisRejConns, float64(s.stats.rejected.Load()))
	counter(descRedisNetIn, float64(s.stats.netIn.Load()))
	counter(descRedisNetOut, float64(s.stats.netOut.Load()))
	if s.hot != nil {
		gauge(descHotKeys, float64(len(s.hot.Hot())))
	}
	var hits, misses int64
	keys := 0
	if s.hotCache != nil {
		hits, misses, keys = s.hotCache.Stats()
	}
	counter(descHotCacheInvals, float64(s.tl.invalidations.Load()))
	counter(descHotCacheClears, float64(s.tl.clears.Load()))
	counter(descHotCacheHits, float64(hits))
	counter(descHotCacheMisses, float64(misses))
	gauge(descHotCacheEntries, float64(keys))
}

var (
	descCalls  = prometheus.NewDesc("tair_proxy_commands_total", "Commands by name.", []string{"cmd"}, nil)
	descFailed = prometheus.NewDesc("tair_proxy_command_errors_total", "Commands answered with an error, by name.", []string{"cmd"}, nil)
	descUsec   = prometheus.NewDesc("tair_proxy_command_seconds_total", "Time spent in commands, by name.", []string{"cmd"}, nil)
)

func (c *cmdCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descCalls
	ch <- descFailed
	ch <- descUsec
}

func (c *cmdCollector) Collect(ch chan<- prometheus.Metric) {
	for _, s := range c.m.sortedStats() {
		ch <- prometheus.MustNewConstMetric(descCalls, prometheus.CounterValue, float64(s.calls.Load()), s.name)
		ch <- prometheus.MustNewConstMetric(descFailed, prometheus.CounterValue, float64(s.failed.Load()), s.name)
		ch <- prometheus.MustNewConstMetric(descUsec, prometheus.CounterValue, float64(s.usec.Load())/1e6, s.name)
	}
}

// httpHandler serves /metrics, /healthz, /status and /debug/pprof/.
func (s *Server) httpHandler() http.Handler {
	mux := http.NewServeMux()
	pprofhttp.Register(mux)
	mux.Handle("/metrics", promhttp.HandlerFor(s.m.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		if s.r.load() == nil {
			http.Error(w, "no table yet", http.StatusServiceUnavailable)
			return
		}
		if r := s.unhealthy.Load(); r != nil {
			http.Error(w, "unhealthy: "+*r, http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("/status", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"kind":           "proxy",
			"id":             s.id,
			"addr":           s.Addr(),
			"table_version":  s.r.version(),
			"clients":        s.clients.Load(),
			"config_servers": s.cfg.ConfigServers,
			"uptime_seconds": int64(time.Since(s.start).Seconds()),
		})
	})
	return mux
}

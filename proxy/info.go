package proxy

import (
	"fmt"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/tairkv/tair/internal/glob"

	"github.com/tairkv/tair/resp"
)

// dynConfig holds what CONFIG SET may change at run time.
type dynConfig struct {
	maxBulkLen atomic.Int64
	maxClients atomic.Int64
	maxOutput  atomic.Int64
	idle       atomic.Int64 // nanoseconds
	slower     atomic.Int64 // nanoseconds; negative disables
	pass       atomic.Pointer[string]

	mu     sync.Mutex
	values map[string]string // the rest: answered as set
	areas  map[int]bool      // areas clients selected (INFO keyspace)
}

func (d *dynConfig) init(c *Config) {
	d.maxBulkLen.Store(c.MaxBulkLen)
	d.maxClients.Store(int64(c.MaxClients))
	d.maxOutput.Store(c.MaxOutputBuffer)
	d.idle.Store(int64(c.IdleTimeout))
	d.slower.Store(int64(c.SlowlogSlowerThan))
	p := c.RequirePass
	d.pass.Store(&p)
	d.areas = map[int]bool{0: true}
	d.values = map[string]string{
		"save":                      "",
		"appendonly":                "no",
		"appendfsync":               "everysec",
		"maxmemory":                 "0",
		"maxmemory-policy":          "noeviction",
		"hash-max-listpack-entries": "512",
		"hash-max-listpack-value":   "64",
		"hash-max-ziplist-entries":  "512",
		"hash-max-ziplist-value":    "64",
		"list-max-listpack-size":    "-2",
		"list-max-ziplist-size":     "-2",
		"list-compress-depth":       "0",
		"set-max-intset-entries":    "512",
		"set-max-listpack-entries":  "128",
		"set-max-listpack-value":    "64",
		"zset-max-listpack-entries": "128",
		"zset-max-listpack-value":   "64",
		"zset-max-ziplist-entries":  "128",
		"zset-max-ziplist-value":    "64",
		"client-query-buffer-limit": "1073741824",
		"databases":                 "1024",
		"cluster-enabled":           "yes",
		"lazyfree-lazy-user-del":    "no",
		"lazyfree-lazy-user-flush":  "no",
		"activedefrag":              "no",
		"lua-time-limit":            "5000",
		"busy-reply-threshold":      "5000",
		"notify-keyspace-events":    "",
		"latency-tracking":          "yes",
		"enable-debug-command":      "no",
		"io-threads":                "1",
		"stream-node-max-entries":   "100",
		"stream-node-max-bytes":     "4096",
		"maxmemory-samples":         "5",
		"lfu-log-factor":            "10",
		"lfu-decay-time":            "1",
		"hz":                        "10",
		"tcp-keepalive":             "300",
		"dir":                       "",
		"dbfilename":                "dump.rdb",
		"bind":                      c.Listen,
		"loglevel":                  "notice",
	}
}

func (d *dynConfig) password() string             { return *d.pass.Load() }
func (d *dynConfig) idleTimeout() time.Duration   { return time.Duration(d.idle.Load()) }
func (d *dynConfig) slowlogSlower() time.Duration { return time.Duration(d.slower.Load()) }

// get returns every (name, value) whose name matches pattern.
func (s *Server) configGet(pattern []byte) [][2]string {
	d := &s.dyn
	d.mu.Lock()
	all := map[string]string{}
	for k, v := range d.values {
		all[k] = v
	}
	d.mu.Unlock()
	all["proto-max-bulk-len"] = strconv.FormatInt(d.maxBulkLen.Load(), 10)
	all["maxclients"] = strconv.FormatInt(d.maxClients.Load(), 10)
	all["timeout"] = strconv.FormatInt(int64(d.idleTimeout()/time.Second), 10)
	all["requirepass"] = d.password()
	all["slowlog-log-slower-than"] = strconv.FormatInt(d.slowlogSlower().Microseconds(), 10)
	all["slowlog-max-len"] = strconv.Itoa(s.slowlog.maxLen())
	all["port"] = strconv.Itoa(func() int { _, p := splitHostPort(s.Addr()); return p }())
	out := make([][2]string, 0)
	for k, v := range all {
		if glob.Match(pattern, []byte(k), true) {
			out = append(out, [2]string{k, v})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0] < out[j][0] })
	return out
}

// configSet applies one setting; the error is the reply text.
func (s *Server) configSet(name, value string) string {
	d := &s.dyn
	parseInt := func() (int64, bool) {
		n, err := parseMemory(value)
		return n, err == nil
	}
	switch name {
	case "proto-max-bulk-len":
		n, ok := parseInt()
		if !ok || n < 1024*1024 {
			return "ERR CONFIG SET failed (possibly related to argument 'proto-max-bulk-len') - argument must be a memory value at least 1mb"
		}
		d.maxBulkLen.Store(n)
		s.applyLimits()
	case "maxclients":
		n, ok := parseInt()
		if !ok || n < 1 {
			return "ERR CONFIG SET failed (possibly related to argument 'maxclients') - argument couldn't be parsed into an integer"
		}
		d.maxClients.Store(n)
	case "timeout":
		n, ok := parseInt()
		if !ok || n < 0 {
			return "ERR CONFIG SET failed (possibly related to argument 'timeout') - argument couldn't be parsed into an integer"
		}
		d.idle.Store(int64(time.Duration(n) * time.Second))
	case "requirepass":
		v := value
		d.pass.Store(&v)
	case "slowlog-log-slower-than":
		n, err := strconv.ParseInt(value, 10, 64)
		if err != nil {
			return "ERR CONFIG SET failed (possibly related to argument 'slowlog-log-slower-than') - argument couldn't be parsed into an integer"
		}
		if n < 0 {
			d.slower.Store(-1)
		} else {
			d.slower.Store(int64(time.Duration(n) * time.Microsecond))
		}
	case "slowlog-max-len":
		n, err := strconv.Atoi(value)
		if err != nil || n < 0 {
			return "ERR CONFIG SET failed (possibly related to argument 'slowlog-max-len') - argument couldn't be parsed into an integer"
		}
		s.slowlog.setMax(n)
	case "client-output-buffer-limit":
		d.mu.Lock()
		d.values[name] = value
		d.mu.Unlock()
	default:
		d.mu.Lock()
		defer d.mu.Unlock()
		cur, ok := d.values[name]
		if !ok {
			return "ERR Unknown option or number of arguments for CONFIG SET - '" + name + "'"
		}
		v, msg := checkConfigValue(name, cur, value)
		if msg != "" {
			return "ERR CONFIG SET failed (possibly related to argument '" + name + "') - " + msg
		}
		d.values[name] = v
	}
	return ""
}

// configEnums are the settings with a fixed set of values (as Redis).
var configEnums = map[string][]string{
	"maxmemory-policy": {"volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl", "allkeys-lru", "allkeys-lfu", "allkeys-random", "noeviction"},
	"appendfsync":      {"always", "everysec", "no"},
	"loglevel":         {"debug", "verbose", "notice", "warning"},
}

// checkConfigValue validates value for a stored setting whose current
// value is cur, as Redis does: enums (case-insensitive, stored in lower
// case), yes/no booleans, integers and memory sizes. It returns the value
// to store, or the reason it is refused.
func checkConfigValue(name, cur, value string) (string, string) {
	if vals, ok := configEnums[name]; ok {
		lv := strings.ToLower(value)
		for _, v := range vals {
			if v == lv {
				return lv, ""
			}
		}
		return "", "argument(s) must be one of the following: " + strings.Join(vals, ", ")
	}
	switch {
	case cur == "yes" || cur == "no":
		lv := strings.ToLower(value)
		if lv != "yes" && lv != "no" {
			return "", "argument must be 'yes' or 'no'"
		}
		return lv, ""
	case name == "maxmemory":
		if _, err := parseMemory(value); err != nil {
			return "", "argument must be a memory value"
		}
	case cur != "":
		if _, err := strconv.ParseInt(cur, 10, 64); err == nil {
			if _, err := strconv.ParseInt(value, 10, 64); err != nil {
				return "", "argument couldn't be parsed into an integer"
			}
		}
	}
	return value, ""
}

// applyLimits pushes new request limits to every session.
func (s *Server) applyLimits() {
	lim := s.requestLimits()
	s.sessMu.Lock()
	defer s.sessMu.Unlock()
	for _, ss := range s.sessions {
		ss.limits.Store(&lim)
	}
}

// parseMemory parses "1gb", "512mb", "100k", "123".
func parseMemory(v string) (int64, error) {
	v = strings.ToLower(strings.TrimSpace(v))
	mul := int64(1)
	for _, u := range []struct {
		s string
		m int64
	}{{"gb", 1 << 30}, {"mb", 1 << 20}, {"kb", 1 << 10}, {"g", 1e9}, {"m", 1e6}, {"k", 1e3}, {"b", 1}} {
		if strings.HasSuffix(v, u.s) {
			mul = u.m
			v = strings.TrimSuffix(v, u.s)
			break
		}
	}
	n, err := strconv.ParseInt(v, 10, 64)
	return n * mul, err
}

func cmdConfig(ss *session, r *request) {
	s := ss.srv
	switch strings.ToLower(string(r.args[1])) {
	case "get":
		if len(r.args) < 3 {
			r.setError("ERR wrong number of arguments for 'config|get' command")
			return
		}
		seen := map[string]bool{}
		var kv [][2]string
		for _, p := range r.args[2:] {
			for _, e := range s.configGet(p) {
				if !seen[e[0]] {
					seen[e[0]] = true
					kv = append(kv, e)
				}
			}
		}
		b := resp.AppendMap(r.reply[:0], len(kv), r.proto)
		for _, e := range kv {
			b = resp.AppendBulkString(b, e[0])
			b = resp.AppendBulkString(b, e[1])
		}
		r.raw(b)
	case "set":
		if len(r.args) < 4 || len(r.args)%2 != 0 {
			r.setError("ERR wrong number of arguments for 'config|set' command")
			return
		}
		for i := 2; i+1 < len(r.args); i += 2 {
			if e := s.configSet(strings.ToLower(string(r.args[i])), string(r.args[i+1])); e != "" {
				r.setError(e)
				return
			}
		}
		r.ok()
	case "resetstat":
		s.m.resetStats()
		s.stats.commands.Store(0)
		s.stats.connections.Store(0)
		s.stats.rejected.Store(0)
		s.stats.retries.Store(0)
		s.stats.loopFwd.Store(0)
		s.stats.batches.Store(0)
		r.ok()
	case "rewrite":
		r.setError("ERR The server is running without a config file")
	case "help":
		r.raw(helpReply("CONFIG", []string{"GET <pattern>", "SET <directive> <value>", "RESETSTAT", "REWRITE"}))
	default:
		r.setError("ERR unknown subcommand '" + quotedArg(r.args[1]) + "'. Try CONFIG HELP.")
	}
}

// noteArea remembers an area a client used (INFO keyspace lists them).
func (s *Server) noteArea(a int) {
	s.dyn.mu.Lock()
	s.dyn.areas[a] = true
	s.dyn.mu.Unlock()
}

// INFO [section ...]: server, clients, memory, persistence, stats,
// replication, cpu, cluster, keyspace, commandstats, latencystats. "all"/"everything"/"default".
func cmdInfo(ss *session, r *request) {
	want := map[string]bool{}
	for _, a := range r.args[1:] {
		want[strings.ToLower(string(a))] = true
	}
	all := len(want) == 0 || want["all"] || want["everything"] || want["default"]
	has := func(s string) bool {
		if s == "commandstats" || s == "latencystats" {
			return want[s] || want["all"] || want["everything"]
		}
		return all || want[s]
	}
	if has("keyspace") || has("stats") || has("memory") {
		// These sections sum the dataservers' figures (NODESTATS): off
		// the event loop, once the client's earlier commands are answered.
		r.barrier = func(r *request) { r.reply = resp.AppendVerbatim(r.reply[:0], ss.info2(has), r.proto) }
		return
	}
	r.reply = resp.AppendVerbatim(r.reply[:0], ss.info2(has), r.proto)
	r.local = true
}

func (ss *session) info2(has func(string) bool) string {
	s := ss.srv
	var b strings.Builder
	section := func(name string) {
		if b.Len() > 0 {
			b.WriteString("\r\n")
		}
		b.WriteString("# " + name + "\r\n")
	}
	kv := func(k string, v any) { fmt.Fprintf(&b, "%s:%v\r\n", k, v) }
	now := time.Now()
	var ds *dsStats
	if has("keyspace") || has("stats") || has("memory") {
		ds = ss.gatherNodeStats(has("keyspace"))
	}
	if has("server") {
		section("Server")
		_, port := splitHostPort(s.Addr())
		kv("redis_version", Version)
		kv("redis_mode", "cluster")
		kv("tair_role", "proxy")
		kv("os", runtime.GOOS+" "+runtime.GOARCH)
		kv("arch_bits", 64)
		kv("go_version", runtime.Version())
		kv("process_id", os.Getpid())
		kv("run_id", s.id)
		kv("tcp_port", port)
		kv("server_time_usec", now.UnixMicro())
		kv("uptime_in_seconds", int64(now.Sub(s.start).Seconds()))
		kv("uptime_in_days", int64(now.Sub(s.start).Hours()/24))
		kv("hz", 10)
		kv("executable", os.Args[0])
		kv("table_version", s.r.version())
		kv("config_servers", strings.Join(s.cfg.ConfigServers, ","))
	}
	if has("clients") {
		section("Clients")
		kv("connected_clients", s.clients.Load())
		kv("maxclients", s.dyn.maxClients.Load())
		kv("blocked_clients", s.stats.blocked.Load())
		kv("tracking_clients", 0)
	}
	if has("memory") {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		section("Memory")
		// used_memory and maxmemory are the dataservers' (the bytes
		// their engines account, every copy, and their --memory-limit
		// summed); the rest is this proxy process's.
		kv("used_memory", ds.f["used_memory"])
		kv("used_memory_human", human(ds.f["used_memory"]))
		kv("used_memory_rss", ms.Sys)
		kv("used_memory_rss_human", human(int64(ms.Sys)))
		kv("used_memory_peak", ms.HeapSys)
		kv("proxy_used_memory", ms.HeapAlloc)
		kv("proxy_used_memory_human", human(int64(ms.HeapAlloc)))
		kv("total_system_memory", 0)
		kv("maxmemory", ds.f["maxmemory"])
		kv("maxmemory_policy", "noeviction")
		kv("mem_allocator", "go")
		kv("gc_cycles", ms.NumGC)
	}
	if has("persistence") {
		// The proxy keeps nothing; persistence is the dataservers'
		// engines' (ldb, kdb).
		section("Persistence")
		kv("loading", 0)
		kv("async_loading", 0)
		kv("rdb_changes_since_last_save", 0)
		kv("rdb_bgsave_in_progress", 0)
		kv("rdb_last_bgsave_status", "ok")
		kv("aof_enabled", 0)
		kv("aof_rewrite_in_progress", 0)
		kv("aof_last_write_status", "ok")
	}
	if has("stats") {
		section("Stats")
		kv("total_connections_received", s.stats.connections.Load())
		kv("total_commands_processed", s.stats.commands.Load())
		kv("rejected_connections", s.stats.rejected.Load())
		kv("total_net_input_bytes", s.stats.netIn.Load())
		kv("total_net_output_bytes", s.stats.netOut.Load())
		kv("instantaneous_ops_per_sec", s.stats.opsPerSec.Load())
		// The keyspace's counters are the dataservers', summed.
		kv("expired_keys", ds.f["expired_keys"])
		kv("evicted_keys", ds.f["evicted_keys"])
		kv("keyspace_hits", ds.f["keyspace_hits"])
		kv("keyspace_misses", ds.f["keyspace_misses"])
		// This proxy's subscriptions (PUBSUB gathers every proxy's).
		chans, pats, shards := s.ps.sizes()
		kv("pubsub_channels", chans)
		kv("pubsub_patterns", pats)
		kv("pubsubshard_channels", shards)
		kv("proxy_retries", s.stats.retries.Load())
		kv("proxy_backend_connections", int64(s.backendConnCount())+s.stats.loopConns.Load())
		kv("proxy_loop_forwarded", s.stats.loopFwd.Load())
		kv("proxy_session_batches", s.stats.batches.Load())
		if s.hotCache != nil {
			hits, misses, keys := s.hotCache.Stats()
			kv("hot_cache_hits", hits)
			kv("hot_cache_misses", misses)
			kv("hot_cache_keys", int64(keys))
			kv("hot_cache_invalidations", s.tl.invalidations.Load())
			kv("hot_cache_clears", s.tl.clears.Load())
			kv("hot_cache_links", s.trackLinksUp())
		}
	}
	if has("replication") {
		// Clients see one master (the proxy); the copies behind it are
		// the dataservers' (tair_* fields, from the bucket table).
		section("Replication")
		kv("role", "master")
		kv("connected_slaves", 0)
		kv("master_failover_state", "no-failover")
		if rt := s.r.load(); rt != nil {
			kv("tair_table_version", rt.t.Version)
			kv("tair_buckets", rt.t.Buckets)
			kv("tair_copies", rt.t.Copies)
			kv("tair_dataservers", len(rt.t.Nodes()))
			kv("tair_migrating_buckets", len(rt.t.Migrating))
		}
	}
	if has("cpu") {
		section("CPU")
		var ru syscall.Rusage
		if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
			kv("used_cpu_sys", fmt.Sprintf("%.6f", float64(ru.Stime.Sec)+float64(ru.Stime.Usec)/1e6))
			kv("used_cpu_user", fmt.Sprintf("%.6f", float64(ru.Utime.Sec)+float64(ru.Utime.Usec)/1e6))
		}
	}
	if has("cluster") {
		section("Cluster")
		kv("cluster_enabled", 1)
	}
	if has("keyspace") {
		section("Keyspace")
		// Every area holding keys, as Redis lists every db that does:
		// keys and expires counted on the masters, avg_ttl the mean
		// remaining TTL (ms) of the keys that have one (Redis's is a
		// sampled estimate of the same).
		areas := make([]int, 0, len(ds.areas))
		for a := range ds.areas {
			areas = append(areas, a)
		}
		sort.Ints(areas)
		for _, a := range areas {
			k := ds.areas[a]
			if k.keys == 0 {
				continue
			}
			avg := int64(0)
			if k.expires > 0 {
				avg = k.ttl / k.expires
			}
			fmt.Fprintf(&b, "db%d:keys=%d,expires=%d,avg_ttl=%d\r\n", a, k.keys, k.expires, avg)
		}
	}
	if has("commandstats") {
		section("Commandstats")
		for _, c := range s.m.sortedStats() {
			calls, rej := c.calls.Load(), c.rejected.Load()
			if calls == 0 && rej == 0 {
				continue
			}
			usec := c.usec.Load()
			per := 0.0
			if calls > 0 {
				per = float64(usec) / float64(calls)
			}
			fmt.Fprintf(&b, "cmdstat_%s:calls=%d,usec=%d,usec_per_call=%.2f,rejected_calls=%d,failed_calls=%d\r\n",
				c.name, calls, usec, per, rej, c.failed.Load())
		}
	}
	if has("latencystats") {
		section("Latencystats")
		for _, c := range s.m.sortedStats() {
			calls := c.calls.Load()
			if calls == 0 {
				continue
			}
			fmt.Fprintf(&b, "latency_percentiles_usec_%s:p50=%.3f,p99=%.3f,p99.9=%.3f\r\n",
				c.name, c.percentile(0.5), c.percentile(0.99), c.percentile(0.999))
		}
	}
	return b.String()
}

// dsStats are the dataservers' NODESTATS summed: f by field, areas by
// area (keyspace).
type dsStats struct {
	f     map[string]int64
	areas map[int]*areaKeys
}

type areaKeys struct{ keys, expires, ttl int64 }

// gatherNodeStats asks every dataserver of the table for its NODESTATS
// (with the keyspace of the buckets it masters when keyspace) and sums
// them. A node that does not answer is left out of the sums.
func (ss *session) gatherNodeStats(keyspace bool) *dsStats {
	st := &dsStats{f: map[string]int64{}, areas: map[int]*areaKeys{}}
	rt := ss.srv.r.load()
	if rt == nil {
		return st
	}
	args := [][]byte{[]byte("NODESTATS")}
	if keyspace {
		args = append(args, []byte("KEYSPACE"))
	}
	for _, p := range ss.fanOut(&request{proto: 2}, rt.nodes, args, false) {
		if len(p.reply) == 0 || p.reply[0] != '*' {
			continue
		}
		fields, err := flatFields(p.reply)
		if err != nil {
			continue
		}
		for i := 0; i+1 < len(fields); i += 2 {
			name := string(fields[i])
			n, err := strconv.ParseInt(string(fields[i+1]), 10, 64)
			if err != nil {
				continue
			}
			if a, what, ok := areaField(name); ok {
				k := st.areas[a]
				if k == nil {
					k = &areaKeys{}
					st.areas[a] = k
				}
				switch what {
				case "keys":
					k.keys += n
				case "expires":
					k.expires += n
				case "ttl_ms":
					k.ttl += n
				}
				continue
			}
			st.f[name] += n
		}
	}
	return st
}

// areaField splits a NODESTATS keyspace field, db<area>_<what>.
func areaField(name string) (int, string, bool) {
	if !strings.HasPrefix(name, "db") {
		return 0, "", false
	}
	i := strings.IndexByte(name, '_')
	if i < 0 {
		return 0, "", false
	}
	a, err := strconv.Atoi(name[2:i])
	if err != nil || a < 0 {
		return 0, "", false
	}
	return a, name[i+1:], true
}

func (s *Server) backendConnCount() int {
	n := 0
	for _, nd := range s.r.allNodes() {
		for i := range nd.conns {
			if bc := nd.conns[i].Load(); bc != nil && !bc.dead.Load() {
				n++
			}
		}
	}
	return n
}

func human(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2fG", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.2fM", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.2fK", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%dB", n)
}

package dataserver

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/tairkv/tair/engines"
	"github.com/tairkv/tair/internal/route"
)

// nodeCollector exports, at each scrape, what the dataserver holds rather
// than counts as it goes: the engine's figures under redis_exporter's
// names (so dashboards made for Redis read them), and the cluster's own
// view of this node (its table, its buckets, its replication streams and
// moves) as tair_dataserver_*.
type nodeCollector struct{ s *Server }

func dsDesc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, labels, nil)
}

var (
	descUp      = dsDesc("redis_up", "1 while the dataserver serves (redis_exporter's name).")
	descUptime  = dsDesc("redis_uptime_in_seconds", "Seconds since the dataserver started.")
	descHits    = dsDesc("redis_keyspace_hits_total", "Reads that found their key, on the buckets this node masters (the engine's TAIR.STAT hits; a slave's replay is not counted).")
	descMisses  = dsDesc("redis_keyspace_misses_total", "Reads that found no key (missing or expired), on the buckets this node masters (TAIR.STAT misses).")
	descExpired = dsDesc("redis_expired_keys_total", "Keys reclaimed because they expired: by a write that found one, or by the engine's sweep (every copy counts its own).")
	descEvicted = dsDesc("redis_evicted_keys_total", "Keys evicted to keep an area under its quota or the engine under --memory-limit (in-memory engines; every copy counts its own).")
	descMemUsed = dsDesc("redis_memory_used_bytes", "Bytes of data the engine accounts, every area and every copy this node holds (what quotas and --memory-limit are compared with).")
	descMemMax  = dsDesc("redis_memory_max_bytes", "The engine's --memory-limit (0: none), as Redis's maxmemory.")
	descDBKeys  = dsDesc("redis_db_keys", "Keys held by this node in an area (db=\"db<area>\"), master and slave copies, hidden keys included.", "db")

	descTableVersion = dsDesc("tair_dataserver_table_version", "Version of the bucket table this node serves from.")
	descBuckets      = dsDesc("tair_dataserver_buckets", "Buckets this node holds in its table, by role (master, slave).", "role")
	descAreaBytes    = dsDesc("tair_dataserver_area_used_bytes", "Bytes the engine accounts to an area on this node.", "area")
	descAreaQuota    = dsDesc("tair_dataserver_area_quota_bytes", "The byte quota the engine enforces for an area (0: none; quotas are enforced while the quota hook is on).", "area")
	descReplPending  = dsDesc("tair_dataserver_replication_pending_items", "Items sent to a slave (or a move's destination) not acknowledged yet.", "slave")
	descReplLag      = dsDesc("tair_dataserver_replication_lag_seconds", "Age of the oldest item a slave has not acknowledged (0: none waiting).", "slave")
	descReplUnreach  = dsDesc("tair_dataserver_replication_unreachable", "1 while a slave has not acknowledged within the replication timeout (or cannot be connected to with items waiting).", "slave")
	descBehind       = dsDesc("tair_dataserver_slaves_behind", "Slaves of this node's buckets the table marks behind this master (they may lack acknowledged writes and will not be promoted).")
	descMigRunning   = dsDesc("tair_dataserver_migrations_running", "Bucket moves this node is the source of, in progress.")
	descMigKeys      = dsDesc("tair_dataserver_migration_keys", "Records the destinations of this node's running moves have acknowledged so far.")

	// A persistent engine's block cache (ldb), absent for the others.
	descCacheHits     = dsDesc("tair_dataserver_block_cache_hits_total", "Block cache lookups that found their block (ldb: pebble's block cache).")
	descCacheMisses   = dsDesc("tair_dataserver_block_cache_misses_total", "Block cache lookups that read the block from its file.")
	descCacheBytes    = dsDesc("tair_dataserver_block_cache_bytes", "Bytes of blocks the block cache holds.")
	descCacheCapacity = dsDesc("tair_dataserver_block_cache_capacity_bytes", "The block cache's capacity, the memtables' share included.")
	descMemtableBytes = dsDesc("tair_dataserver_memtable_bytes", "Bytes the engine's memtables hold reserved in the block cache (what is left of the capacity is the blocks' room).")
)

func (c *nodeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descUp, descUptime, descHits, descMisses, descExpired, descEvicted,
		descMemUsed, descMemMax, descDBKeys, descTableVersion, descBuckets, descAreaBytes, descAreaQuota,
		descReplPending, descReplLag, descReplUnreach, descBehind, descMigRunning, descMigKeys,
		descCacheHits, descCacheMisses, descCacheBytes, descCacheCapacity, descMemtableBytes} {
		ch <- d
	}
}

func (c *nodeCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.s
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v)
	}
	up := 1.0
	if s.closing.Load() {
		up = 0
	}
	gauge(descUp, up)
	gauge(descUptime, time.Since(s.epoch).Seconds())
	gauge(descMemMax, float64(s.cfg.MemoryLimit))

	var quotas map[uint16]int64
	if at := s.areas.Load(); at != nil {
		quotas = at.quota
	}
	var hits, misses, evicted, used, expired int64
	seen := map[uint16]bool{}
	if eng := s.eng; eng != nil && !s.closing.Load() {
		for area, st := range eng.AllStats() {
			hits += st.Hits
			misses += st.Misses
			evicted += st.Evictions
			used += st.Bytes
			a := strconv.Itoa(int(area))
			if st.Keys > 0 {
				gauge(descDBKeys, float64(st.Keys), "db"+a)
			}
			gauge(descAreaBytes, float64(st.Bytes), a)
			gauge(descAreaQuota, float64(quotas[area]), a)
			seen[area] = true
		}
		if ec, ok := eng.(interface{ ExpiredKeys() int64 }); ok {
			expired = ec.ExpiredKeys()
		}
		if cs, ok := engines.CacheStatsOf(eng); ok {
			counter(descCacheHits, float64(cs.Hits))
			counter(descCacheMisses, float64(cs.Misses))
			gauge(descCacheBytes, float64(cs.CachedBytes))
			gauge(descCacheCapacity, float64(cs.CapacityBytes))
			gauge(descMemtableBytes, float64(cs.MemtableBytes))
		}
	}
	counter(descHits, float64(hits))
	counter(descMisses, float64(misses))
	counter(descEvicted, float64(evicted))
	counter(descExpired, float64(expired))
	gauge(descMemUsed, float64(used))
	for area, q := range quotas {
		if !seen[area] {
			gauge(descAreaBytes, 0, strconv.Itoa(int(area)))
			gauge(descAreaQuota, float64(q), strconv.Itoa(int(area)))
		}
	}

	t := s.Table()
	var version route.Version
	masters, slaves := 0, 0
	behind := 0
	if t != nil {
		version = t.Version
		for b := range route.BucketID(t.Buckets) {
			if t.IsMaster(b, s.addr) {
				masters++
			} else if t.IsSlave(b, s.addr) {
				slaves++
			}
		}
		behind = len(t.Behind[s.addr])
	}
	gauge(descTableVersion, float64(version))
	gauge(descBuckets, float64(masters), "master")
	gauge(descBuckets, float64(slaves), "slave")
	gauge(descBehind, float64(behind))

	now := time.Now()
	s.mu.Lock()
	streams := make([]*stream, 0, len(s.mu.streams))
	for _, st := range s.mu.streams {
		streams = append(streams, st)
	}
	migs, migKeys := len(s.mu.migs), int64(0)
	for _, m := range s.mu.migs {
		migKeys += m.keys.Load()
	}
	s.mu.Unlock()
	// A node may have a stream to a slave and another to a move's
	// destination on the same node: one series per node, summed.
	type replStat struct {
		pending     int
		lag         float64
		unreachable bool
	}
	per := map[string]*replStat{}
	for _, st := range streams {
		r := per[st.to]
		if r == nil {
			r = &replStat{}
			per[st.to] = r
		}
		st.mu.Lock()
		r.pending += len(st.mu.q)
		if len(st.mu.q) > 0 && !st.mu.q[0].at.IsZero() {
			if lag := now.Sub(st.mu.q[0].at).Seconds(); lag > r.lag {
				r.lag = lag
			}
		}
		st.mu.Unlock()
		r.unreachable = r.unreachable || st.unreachable.Load()
	}
	for to, r := range per {
		gauge(descReplPending, float64(r.pending), to)
		gauge(descReplLag, r.lag, to)
		u := 0.0
		if r.unreachable {
			u = 1
		}
		gauge(descReplUnreach, u, to)
	}
	gauge(descMigRunning, float64(migs))
	gauge(descMigKeys, float64(migKeys))
}

package configserver

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/tairkv/tair/internal/route"
)

// metrics live in a registry per Server, so several configservers can run
// in one process (tests, `tair up`).
type metrics struct {
	reg          *prometheus.Registry
	leader       prometheus.Gauge
	tableVersion prometheus.Gauge
	nodesAlive   prometheus.Gauge
	nodesKnown   prometheus.Gauge
	movesPending prometheus.Gauge
	movesRunning prometheus.Gauge
	movesDone    prometheus.Counter
	heartbeats   prometheus.Counter
	buildRefused prometheus.Gauge
	// tablesSent counts the tables sent to dataservers and proxies, by
	// form: whole, or delta (the changes since the fetcher's version).
	tablesSent *prometheus.CounterVec

	underReplicated        prometheus.Gauge
	underReplicatedSeconds prometheus.Gauge
	unavailable            prometheus.Gauge
	restoreSeconds         prometheus.Gauge
	bucketsLost            prometheus.Counter

	invalidQueued  prometheus.Counter
	invalidSent    *prometheus.CounterVec
	invalidPending *prometheus.GaugeVec

	// From the served table (setTable) and the leader's events (event).
	behindMarks prometheus.Gauge
	nodeBuckets *prometheus.GaugeVec
	failovers   prometheus.Counter
	moveFails   prometheus.Counter
}

func newMetrics() *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	g := func(name, help string) prometheus.Gauge {
		x := prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "tair", Subsystem: "configserver", Name: name, Help: help})
		m.reg.MustRegister(x)
		return x
	}
	c := func(name, help string) prometheus.Counter {
		x := prometheus.NewCounter(prometheus.CounterOpts{Namespace: "tair", Subsystem: "configserver", Name: name, Help: help})
		m.reg.MustRegister(x)
		return x
	}
	m.leader = g("leader", "1 while this configserver leads.")
	m.tableVersion = g("table_version", "Version of the bucket table this configserver serves.")
	m.nodesAlive = g("nodes_alive", "Dataservers heard from within the down timeout (leader only).")
	m.nodesKnown = g("nodes_known", "Dataservers known to the cluster, alive or not (leader only).")
	m.movesPending = g("migrations_pending", "Planned bucket moves not started yet (leader only).")
	m.movesRunning = g("migrations_running", "Bucket moves in progress (leader only).")
	m.movesDone = c("migrations_done_total", "Bucket moves completed by this configserver.")
	m.buildRefused = g("build_refused", "1 while the table builder refuses the member set (see the log for why).")
	m.underReplicated = g("buckets_under_replicated", "Buckets with fewer caught-up copies on live nodes than the copy count (leader only).")
	m.unavailable = g("buckets_unavailable", "Buckets with no caught-up copy on a live node (leader only).")
	m.underReplicatedSeconds = g("under_replicated_seconds", "How long the longest-waiting bucket has been below its copy count (leader only).")
	m.restoreSeconds = g("restore_seconds", "How long the last episode took, from the first bucket below its copy count to the count whole again.")
	m.bucketsLost = c("buckets_lost_total", "Buckets that lost every copy and were recreated empty.")
	m.heartbeats = c("heartbeats_total", "Dataserver heartbeats received.")
	m.invalidQueued = c("invalid_queued_total", "TAIR.INVALID entries queued for peer clusters (one per peer).")
	m.invalidSent = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "tair", Subsystem: "configserver", Name: "invalid_sent_total",
		Help: "TAIR.INVALID entries a peer cluster has applied (leader only)."}, []string{"peer"})
	m.invalidPending = prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "tair", Subsystem: "configserver", Name: "invalid_pending",
		Help: "TAIR.INVALID entries queued for a peer cluster, as last seen by the leader's sender."}, []string{"peer"})
	m.reg.MustRegister(m.invalidSent, m.invalidPending)
	m.behindMarks = g("behind_marks", "Slaves the served table marks behind their master (they may lack acknowledged writes and are not promoted until caught up).")
	m.failovers = c("failovers_total", "Dataservers whose master buckets this configserver, as leader, gave to their slaves (a down or away node).")
	m.moveFails = c("move_failures_total", "Times this configserver, as leader, saw bucket moves end unfinished (failed, stalled or no longer planned; one count for all that ended at once).")
	m.nodeBuckets = prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "tair", Subsystem: "configserver", Name: "node_buckets",
		Help: "Buckets each dataserver holds in the served table, by role (master, slave)."}, []string{"node", "role"})
	m.reg.MustRegister(m.nodeBuckets)
	m.tablesSent = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "tair", Subsystem: "configserver", Name: "tables_sent_total",
		Help: "Tables sent to dataservers and proxies (table polls and heartbeat replies), by form: whole, or delta (the changes since the version the fetcher holds)."}, []string{"form"})
	m.reg.MustRegister(m.tablesSent)
	m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// tableSent counts a table sent whole or as a delta.
func (m *metrics) tableSent(delta bool) {
	form := "whole"
	if delta {
		form = "delta"
	}
	m.tablesSent.WithLabelValues(form).Inc()
}

// setTable refreshes what the metrics read from the served table.
func (m *metrics) setTable(t *route.Table) {
	m.tableVersion.Set(float64(t.Version))
	marks := 0
	for _, slaves := range t.Behind {
		marks += len(slaves)
	}
	m.behindMarks.Set(float64(marks))
	masters, slaves := map[string]int{}, map[string]int{}
	for _, n := range t.Nodes() {
		masters[n], slaves[n] = 0, 0
	}
	for b := range route.BucketID(t.Buckets) {
		if ms := t.Master(b); ms != "" {
			masters[ms]++
		}
		for _, sl := range t.Slaves(b) {
			slaves[sl]++
		}
	}
	m.nodeBuckets.Reset()
	for n, c := range masters {
		m.nodeBuckets.WithLabelValues(n, "master").Set(float64(c))
	}
	for n, c := range slaves {
		m.nodeBuckets.WithLabelValues(n, "slave").Set(float64(c))
	}
}

// event counts one event the leader loop recorded (leader.go).
func (m *metrics) event(kind string) {
	switch kind {
	case EventFailover:
		m.failovers.Inc()
	case EventMoveFailed:
		m.moveFails.Inc()
	}
}

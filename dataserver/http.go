package dataserver

import (
	"encoding/json"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"

	"github.com/tairkv/tair/internal/pprofhttp"
	"github.com/tairkv/tair/internal/wire"
)

type metrics struct {
	reg               *prometheus.Registry
	requests          prometheus.Counter
	heartbeats        *prometheus.CounterVec
	leaseRefusals     prometheus.Counter
	replTimeouts      prometheus.Counter
	replEntries       prometheus.Counter
	replRefused       prometheus.Counter
	replDroppedWrites prometheus.Counter
	replRefusedHeld   prometheus.Counter
	replApplyErrors   prometheus.Counter
	migApplyMisses    prometheus.Counter
	forwarded         prometheus.Counter
	flowLimited       prometheus.Counter
	panics            prometheus.Counter
	stalls            prometheus.Counter
	offLoop           prometheus.Counter
	migSumMismatches  prometheus.Counter
	migOffFreeze      prometheus.Counter
	migResumes        prometheus.Counter
	migSkipped        prometheus.Counter
	divergedKeyed     prometheus.Counter
	repairedNames     prometheus.Counter
	repairedWrites    prometheus.Counter
	areaCommands      *prometheus.CounterVec
	// fullCopies and fullCopyRecords count the whole buckets this node
	// sent to another node, by reason (fullCopy).
	fullCopies, fullCopyRecords *prometheus.CounterVec
}

func newMetrics() *metrics {
	c := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Namespace: "tair", Subsystem: "dataserver", Name: name, Help: help})
	}
	m := &metrics{
		reg:               prometheus.NewRegistry(),
		requests:          c("requests_total", "Commands served."),
		leaseRefusals:     c("lease_refusals_total", "Requests refused because the lease had expired."),
		replTimeouts:      c("replication_timeouts_total", "Writes whose slave did not answer within the replication timeout."),
		replEntries:       c("replication_items_total", "Items appended to replication streams."),
		replRefused:       c("replication_refused_total", "Incoming replication items refused (sender not master)."),
		replRefusedHeld:   c("replication_refused_held_total", "Writes refused for a bucket this node holds, whose copy was then copied again (it may differ from a copy that took them)."),
		replDroppedWrites: c("replication_dropped_copy_writes_total", "Writes acknowledged although a slave refused them because a newer table dropped its copy, this node staying master (droppedWrite)."),
		replApplyErrors:   c("replication_apply_errors_total", "Incoming replication items that failed to apply."),
		migApplyMisses:    c("migration_apply_misses_total", "Commands a move passed on that failed at this destination before the move had copied their key (expected: the move sends the key again)."),
		forwarded:         c("forwarded_total", "Requests forwarded to a bucket's new master."),
		flowLimited:       c("flow_limited_total", "Requests refused by an area's flow limit."),
		panics:            c("panics_total", "Commands that panicked (a bug): answered with an error, the node serves on."),
		stalls:            c("stalls_total", "Times the watchdog found a batch or a bucket lock without progress for the stall timeout (the node reported itself unhealthy)."),
		offLoop:           c("batches_off_loop_total", "Request batches handed from an event loop to a goroutine because they may wait (admin commands, an fsync per write, a copy's records, a write relayed to a migration's destination)."),
		migSumMismatches:  c("migration_checksum_mismatches_total", "Moves whose destination's checksum of the bucket differed from the source's (the move started over)."),
		migOffFreeze:      c("migration_verified_off_freeze_total", "Moves whose checksum compared snapshots of both copies with writes let through (an engine with snapshots), not under the freeze."),
		migResumes:        c("migration_resumes_total", "Move attempts that resumed the copy their destination held instead of copying from zero."),
		migSkipped:        c("migration_resume_skipped_total", "Keys a resumed move found equal at its destination and did not send again."),
		divergedKeyed:     c("diverged_keyed_total", "Times a copy of a bucket diverged on known keys (repaired key by key, replrepair.go) rather than whole."),
		repairedWrites:    c("replication_repaired_writes_total", "Writes a dropped copy refused that this node brought the copy's new holder as its records of their keys, and then acknowledged."),
		repairedNames:     c("repaired_keys_total", "Keys this node sent a slave its records of to repair a diverged copy (TAIR.REPAIR, a refused write)."),
		areaCommands: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "tair", Subsystem: "dataserver",
			Name: "area_commands_total", Help: "Commands by area, kind (read/write) and result (ok/error) (stats hook)."}, []string{"area", "kind", "result"}),
		heartbeats: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "tair", Subsystem: "dataserver",
			Name: "heartbeats_total", Help: "Heartbeats by result."}, []string{"result"}),
	}
	m.reg.MustRegister(m.requests, m.leaseRefusals, m.replTimeouts, m.replEntries, m.replRefused, m.replDroppedWrites, m.replRefusedHeld,
		m.replApplyErrors, m.migApplyMisses, m.forwarded, m.flowLimited, m.panics, m.stalls, m.offLoop, m.migSumMismatches, m.migOffFreeze, m.migResumes, m.migSkipped, m.divergedKeyed, m.repairedNames, m.repairedWrites, m.heartbeats, m.areaCommands,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.fullCopies = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "tair", Subsystem: "dataserver",
		Name: "full_copies_total", Help: "Whole-bucket copies this node started sending to another node, by reason (migration, resync, resync_master, replace_stream)."}, []string{"reason"})
	m.fullCopyRecords = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "tair", Subsystem: "dataserver",
		Name: "full_copy_records_total", Help: "Records queued in whole-bucket copies, by reason."}, []string{"reason"})
	for _, r := range []string{"migration", "resync", "resync_master", "replace_stream"} {
		m.fullCopies.WithLabelValues(r) // every reason is exported from the start
		m.fullCopyRecords.WithLabelValues(r)
	}
	m.reg.MustRegister(m.fullCopies, m.fullCopyRecords)
	return m
}

// fullCopy counts one whole bucket of records sent to another node.
func (m *metrics) fullCopy(reason string, records int) {
	m.fullCopies.WithLabelValues(reason).Inc()
	m.fullCopyRecords.WithLabelValues(reason).Add(float64(records))
}

func (m *metrics) requestCount() float64 {
	var d dto.Metric
	if err := m.requests.Write(&d); err != nil || d.Counter == nil {
		return 0
	}
	return d.Counter.GetValue()
}

// Status is GET /status.
func (s *Server) Status() wire.Status {
	t := s.Table()
	return wire.Status{
		Kind:         "dataserver",
		Addr:         s.addr,
		TableVersion: s.TableVersion(),
		Masters:      bucketsOf(t, s.addr, true),
		Slaves:       bucketsOf(t, s.addr, false),
	}
}

// httpHandler serves /metrics, /healthz, /status, /debug/pprof/ and
// /v1/backup (backup.go).
func (s *Server) httpHandler() http.Handler {
	mux := http.NewServeMux()
	pprofhttp.Register(mux)
	mux.Handle("/metrics", promhttp.HandlerFor(s.m.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		if s.closing.Load() {
			http.Error(w, "stopping", http.StatusServiceUnavailable)
			return
		}
		if r := s.stallReason(); r != "" {
			http.Error(w, "unhealthy: "+r, http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("/status", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(s.Status())
	})
	mux.HandleFunc("GET /v1/backup", s.handleBackup)
	return mux
}

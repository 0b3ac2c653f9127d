// Package dataserver is one Tair storage node: it serves the buckets the
// configserver's table gives it, as master or slave, over RESP.
//
// # Requests
//
// Proxies wrap each command in an envelope (internal/envelope):
//
//	TAIR.X  <area> <proxy-table-version> <proto 2|3> <cmd> <args...>
//	TAIR.XR <area> <proxy-table-version> <proto 2|3> <cmd> <args...>   (a read a slave may serve)
//	TAIR.XF <area> <proxy-table-version> <proto 2|3> <cmd> <args...>   (forwarded by a former master)
//
// Plain commands work too (area 0, RESP2) so redis-cli can poke a node.
// Every key of a command must be in a bucket this node masters (TAIR.XR
// reads: masters or holds as slave), else
// "-NOTMASTER bucket <b> table <v> (tair -3986)"; a write's keys must share
// one bucket (else CROSSSLOT). During the final step of an outgoing
// migration writes get "-TRYAGAIN bucket <b> is migrating (tair -3984)".
// NOTMASTER and TRYAGAIN always mean the command did not run. Commands the
// node answers itself (inside the envelope):
//
//	DBSIZE                                  keys of the area in the buckets this node masters
//	SCANBUCKET <b> <cursor> [MATCH p] [COUNT n] [TYPE t]   -> [next-cursor, [keys...]], the whole bucket ("0")
//	FLUSHDB | FLUSHALL                      the area / every area on this node (proxies send it to every node)
//	MULTIEXEC <n> (<argc> <arg>...){n} [WATCH <m> (<key> <version>){m}]   atomic, one bucket
//	TAIR.KEYVER <key>...                    the keys' versions (0 = missing), for WATCH
//	PING, ECHO, QUIT
//
// Between nodes (replstream.go): TAIR.REPLHELLO, TAIR.REPL (replication and
// migration items), TAIR.TABLE (a node's table as JSON, so tables spread
// between nodes while no configserver answers).
//
// # Replication
//
// Writes run under their bucket's lock: exec, then the propagated commands
// are appended to the replication stream of every slave of the bucket
// (replstream.go). The reply is released when every slave applied them
// (strict), or when the reachable ones did (degraded), and only while the
// node's lease from the configserver holds (heartbeat.go).
//
// # Migration
//
// Moves listed in the table with From = this node are carried out by
// migration.go: a snapshot of the bucket and every later write flow through
// one ordered stream to the destination; a short freeze drains it, the
// heartbeat reports Done, the configserver switches the table, and this
// node forwards the bucket's requests to the new master for ForwardGrace
// before deleting its copy.
package dataserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tairkv/tair/dataserver/exec"
	"github.com/tairkv/tair/engines"
	"github.com/tairkv/tair/internal/gnetx"
	"github.com/tairkv/tair/internal/liveness"
	"github.com/tairkv/tair/internal/route"
	"github.com/tairkv/tair/internal/wire"
)

// Server is one dataserver. Create it with New, then Start; Close stops it.
type Server struct {
	cfg Config
	log *slog.Logger

	eng  engines.Engine
	x    atomic.Pointer[exec.Executor]
	rt   atomic.Pointer[routing]
	bk   atomic.Pointer[[]*bucket]
	addr string
	// tableSig.ch closes when the next table is published (tableChange).
	tableSig struct {
		sync.Mutex
		ch chan struct{}
	}

	cs          *wire.Client
	sc          scriptHost // Lua scripts and functions (script.go)
	migSnaps    migSnaps   // snapshots for moves' checksums (migsum.go)
	incarnation int64
	// leaseFrom is when the last successful heartbeat was sent, in
	// nanoseconds since epoch plus one (0: never). Measured on the
	// monotonic clock, so that a wall clock stepped backwards (NTP)
	// cannot stretch the lease.
	leaseFrom atomic.Int64
	// dataKept: the engine's data holds every write acknowledged before
	// the last stop (heartbeats report it as Persistent; dataSurvived).
	dataKept  bool
	epoch     time.Time    // the server's creation, with a monotonic reading
	csDown    atomic.Bool  // every configserver refused the last heartbeat
	clientLat atomic.Int64 // ns, moving average (observeClientLatency)
	// forwardUntil (unix ns) is when the last forwarding window of a
	// bucket that moved away ends: until then a proxy's request may be
	// forwarded (a network round trip), so batches run off the event
	// loop (loop.go).
	forwardUntil atomic.Int64
	// writesWait: the engine's writes wait for an fsync, so batches run
	// off the event loop.
	writesWait bool
	// durable is the engine's group committer (ldb under --sync group):
	// its writes return before their fsync, so no reply and no
	// replication batch leaves before the fsync that covers what it ran
	// after (runBatch's ticket; the streams' send loop).
	durable  engines.GroupCommitter
	fetching atomic.Bool // a table fetch from a peer is running
	hbKick   chan struct{}
	// hbUrgent: the next kick skips kickSpacing (kickHeartbeatNow).
	hbUrgent atomic.Bool
	hbSeq    atomic.Uint64 // the last heartbeat's wire.Heartbeat.Seq
	areas    atomic.Pointer[areaTable]
	hooks    atomic.Pointer[hookChain] // nil: no hook on (hooks.go)

	fe      *gnetx.Engine // the RESP listener's event loops (loop.go)
	httpLn  net.Listener
	httpSrv *http.Server

	// connWG counts the connections' writer and runner goroutines.
	connWG  sync.WaitGroup
	closing atomic.Bool
	// track: the keys proxies cache, for the invalidations (tracking.go).
	track    *tracker
	ctx      context.Context
	cancel   context.CancelFunc
	hbCancel context.CancelFunc
	hbDone   chan struct{}
	wg       sync.WaitGroup

	mu struct {
		sync.Mutex
		streams map[string]*stream // replication streams by slave node
		migs    map[route.BucketID]*migration
		recv    map[string]*recvState
		drops   map[route.BucketID]time.Time // buckets to delete after their grace
		retired map[string][]*stream         // node -> streams a new stream to it supersedes (its last closed one's successorSupersedes)
		started bool
		closed  bool
		// recvSwept: when recv was last swept of idle sessions.
		recvSwept time.Time
	}
	// loadN/loadAt: the request count at the last heartbeat (guarded by mu).
	loadN   float64
	loadAt  time.Time
	applyMu sync.Mutex // serialises table applies
	// bulkMu serialises the bulk work of bucket copies: taking a
	// bucket's snapshot (pushSnapshotLocked) and restoring a received one
	// (snapshot items). Each is short, but dozens of moves run at once
	// and Go's scheduler has no priorities: dozens of goroutines copying
	// at once kept the event loops, the replication appliers and the
	// heartbeats waiting for a processor for up to seconds (leases
	// lapsed, slaves were judged unreachable). One at a time copies as
	// fast on a busy machine. Taken before a bucket's lock.
	bulkMu bulkLock
	// walkWrites counts the writes that ran while a move walked their
	// bucket (migwalk.go).
	walkWrites atomic.Int64
	// walkSlices counts the slices moves walked their buckets in, each
	// under one hold of the bucket's lock.
	walkSlices atomic.Int64
	// walkPieces counts the big keys moves sent in pieces.
	walkPieces atomic.Int64
	// walkMaxHold is the longest hold of a bucket's lock by a walk (ns).
	walkMaxHold atomic.Int64
	migSem      chan struct{}
	pace        *pacer // the outgoing copies' rate (pace.go)
	copyCap     *copyCap
	pool        connPool
	m           *metrics
	// wd watches the connections' batches and the buckets' locks
	// (watchdog.go).
	wd watchdog
	// fx indexes the TairHash keys with field expiries, for their active
	// expiry (fieldexpiry.go); fxCursor (the expiry loop's own) is
	// where its last round started, fxExpired counts the fields it
	// removed.
	fx        fieldIndex
	fxCursor  int
	fxExpired atomic.Int64
}

// bulkLock is a mutex that counts how long it was held.
type bulkLock struct {
	mu    sync.Mutex
	since time.Time
	busy  atomic.Int64 // ns held, in all
}

func (b *bulkLock) Lock() {
	b.mu.Lock()
	b.since = time.Now()
	copyGC.touch() // snapshots and restores: collect less often (gcdefer.go)
}

func (b *bulkLock) Unlock() {
	b.busy.Add(int64(time.Since(b.since)))
	b.mu.Unlock()
}

// routing is the published table with what requests need from it.
type routing struct {
	t *route.Table
	// slaves[b] are the replication streams of bucket b when this node is
	// its master.
	slaves [][]*stream
}

// bucket is this node's state of one bucket.
type bucket struct {
	id route.BucketID
	// mu orders the bucket's writes with their replication appends;
	// taken with lock and released with unlock, which stamp held for the
	// watchdog (watchdog.go).
	mu   sync.Mutex
	held liveness.Progress
	// frozen: the final step of an outgoing migration (TRYAGAIN).
	frozen atomic.Bool
	// cutover: a table change waits for the bucket's streams to drain
	// before it is published (TRYAGAIN; cutover.go).
	cutover atomic.Bool
	// mig is the outgoing migration in progress (guarded by mu).
	mig *migration
	// inMig is the stream session of the latest incoming migration
	// (guarded by mu).
	inMig string
	// resume (guarded by mu): the incoming copy of session inMig resumes
	// the one this node holds (migresume.go).
	resume *resumeCopy
	// diverged: a write applied here was refused by a slave that had
	// moved to a newer table; once this node is a slave of the bucket it
	// asks its master for a full copy (replresync.go), or for its records
	// of divNames, the names it diverged on, when known (replrepair.go;
	// nil: the whole bucket). Changed under divMu.
	diverged  atomic.Bool
	divMu     sync.Mutex
	divNames  map[walkName]struct{}
	resyncing atomic.Bool
	// handedOff: this node was the bucket's master and gave the role up
	// at the end of a move it sourced, whose destination received every
	// write applied here before the switch (cleared when this node is
	// master again). A write of that time that a slave refused is then
	// on the new master already, so it is not answered NOTMASTER, which
	// would have the proxy apply it a second time (see refusedWrite).
	handedOff atomic.Bool
	// moved is set when the bucket moved away: requests are forwarded to
	// the new master until then.
	moved atomic.Pointer[movedTo]
	// relay (guarded by mu) is the stream of a finished move of this
	// slave copy: the master's writes sent before it learned of the
	// switch still reach this node, which passes them on (see relay).
	relay *relay
	// takeover (guarded by mu): this node just became the bucket's master
	// in place of a slave of it that may not know yet (see takeover).
	takeover *takeover
}

// takeover is the short window after a master switch without a move (the
// old master stays as a slave): the new master does not take writes yet
// (TRYAGAIN) and still applies, as its slave, what the old master sent on
// the older table, so that the old master's last writes are neither
// refused nor applied out of order with the new master's first ones.
type takeover struct {
	from      string
	switchVer route.Version
}

// relay passes a master's writes on to the new holder of a slave copy
// that moved away from this node, for the items the master sent on a
// table older than the switch (it had not learned it yet). Without it
// they would be refused here and never reach the new slave, and the
// master could not acknowledge them.
type relay struct {
	st        *stream
	master    string
	switchVer route.Version
}

type movedTo struct {
	to    string
	until time.Time
}

// New checks cfg and returns a stopped server.
func New(cfg Config, log *slog.Logger) (*Server, error) {
	cfg.Adjust()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.Default()
	}
	s := &Server{
		cfg:         cfg,
		log:         log,
		cs:          wire.NewClient(cfg.ConfigServers...),
		incarnation: time.Now().UnixNano(),
		epoch:       time.Now(),
		hbKick:      make(chan struct{}, 1),
		migSem:      make(chan struct{}, cfg.MigrateParallel),
		pace:        newPacer(cfg.MigrateMinBytesPerSec, cfg.MigrateLatencyTarget),
		copyCap:     newCopyCap(cfg.MigrateBytesPerSec),
	}
	s.mu.streams = map[string]*stream{}
	s.mu.migs = map[route.BucketID]*migration{}
	s.mu.recv = map[string]*recvState{}
	s.mu.retired = map[string][]*stream{}
	s.areas.Store(&areaTable{})
	s.m = newMetrics()
	s.track = newTracker(cfg.TrackingMaxKeys)
	s.m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "tair", Subsystem: "dataserver",
		Name: "tracking_pushes_total", Help: "Invalidations pushed to proxies' hot-key caches (a tracked key changed, expired, was evicted or its bucket moved)."},
		func() float64 { return float64(s.track.pushes.Load()) }))
	s.m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "tair", Subsystem: "dataserver",
		Name: "tracking_evictions_total", Help: "Tracked keys dropped (and pushed) to keep the tracking table under --tracking-max-keys."},
		func() float64 { return float64(s.track.evicts.Load()) }))
	s.m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "tair", Subsystem: "dataserver",
		Name: "tracking_keys", Help: "Keys proxies' hot-key caches hold from this node, whose changes it pushes."},
		func() float64 { return float64(s.track.count.Load()) }))
	s.m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "tair", Subsystem: "dataserver",
		Name: "copy_seconds_total", Help: "Time spent taking and restoring bucket copies (one at a time)."},
		func() float64 { return time.Duration(s.bulkMu.busy.Load()).Seconds() }))
	s.m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "tair", Subsystem: "dataserver",
		Name: "expired_fields_total", Help: "TairHash fields the active expiry removed, on the buckets this node masters."},
		func() float64 { return float64(s.fxExpired.Load()) }))
	s.m.reg.MustRegister(&nodeCollector{s: s}) // metrics.go
	s.applyHooks(nil)                          // the defaults until the configserver says otherwise
	return s, nil
}

// Start opens the engine, binds the RESP and HTTP addresses and starts the
// heartbeat loop. It returns once the node serves.
func (s *Server) Start() error {
	s.mu.Lock()
	if s.mu.started {
		s.mu.Unlock()
		return errors.New("dataserver: already started")
	}
	s.mu.started = true
	s.mu.Unlock()

	fresh := dirEmpty(s.cfg.Dir)
	eng, err := engines.Open(s.cfg.Engine, engines.Options{
		Dir:          s.cfg.Dir,
		Sync:         s.cfg.Sync,
		MemoryLimit:  s.cfg.MemoryLimit,
		MaxKeySize:   s.cfg.MaxKeySize,
		MaxValueSize: s.cfg.MaxValueSize,
		Now:          s.cfg.Now,
	})
	if err != nil {
		return fmt.Errorf("dataserver: open engine: %w", err)
	}
	s.eng = eng
	s.dataKept = !fresh && s.dataSurvived()
	s.durable = engines.GroupCommitOf(eng)
	s.writesWait = eng.Persistent() && s.cfg.Sync != engines.SyncNone && s.durable == nil
	s.fx.scanAll = eng.Persistent() && !fresh // data no write reported
	s.x.Store(s.newExecutor(route.DefaultBuckets))

	if err := s.startFrontEnd(); err != nil {
		_ = eng.Close()
		return err
	}
	if s.cfg.HTTP != "" {
		hl, err := net.Listen("tcp", s.cfg.HTTP)
		if err != nil {
			s.stopFrontEnd()
			_ = eng.Close()
			return fmt.Errorf("dataserver: listen http %s: %w", s.cfg.HTTP, err)
		}
		s.httpLn = hl
		s.httpSrv = &http.Server{Handler: s.httpHandler(), ReadHeaderTimeout: 5 * time.Second}
		go func() { _ = s.httpSrv.Serve(hl) }()
	}
	s.log = s.log.With("node", s.addr)
	s.ctx, s.cancel = context.WithCancel(context.Background())

	var hbCtx context.Context
	hbCtx, s.hbCancel = context.WithCancel(s.ctx)
	s.hbDone = make(chan struct{})
	tableDone := make(chan struct{})
	go func() {
		defer close(tableDone)
		s.tableLoop(hbCtx)
	}()
	go func() {
		defer close(s.hbDone)
		s.heartbeatLoop(hbCtx)
		<-tableDone
	}()
	s.wg.Add(3)
	go func() {
		defer s.wg.Done()
		s.watchdogLoop(s.ctx.Done())
	}()
	go func() {
		defer s.wg.Done()
		s.evictLoop(s.ctx.Done()) // tracking.go
	}()
	go func() {
		defer s.wg.Done()
		s.fieldExpiryLoop(s.ctx.Done())
	}()
	s.log.Info("dataserver started", "engine", eng.Name(), "http", s.HTTPAddr(), "replication", s.cfg.ReplicationMode)
	return nil
}

// Addr is the bound RESP address, the node's identity in the table.
func (s *Server) Addr() string { return s.addr }

// HTTPAddr is the bound HTTP address ("" when none).
func (s *Server) HTTPAddr() string {
	if s.httpLn == nil {
		return ""
	}
	return s.httpLn.Addr().String()
}

// TableVersion is the version of the table the node serves with (0 before
// the first one arrives).
func (s *Server) TableVersion() route.Version {
	if r := s.rt.Load(); r != nil && r.t != nil {
		return r.t.Version
	}
	return 0
}

// Table returns the table the node serves with (nil before the first).
func (s *Server) Table() *route.Table {
	if r := s.rt.Load(); r != nil {
		return r.t
	}
	return nil
}

// Engine returns the storage engine (for tests and tools).
func (s *Server) Engine() engines.Engine { return s.eng }

// Close stops the node: it stops taking requests, lets those in flight
// finish (their replication included), drains the replication streams,
// stops heartbeats and closes the engine. Nothing acknowledged is lost.
func (s *Server) Close() error {
	s.mu.Lock()
	if !s.mu.started || s.mu.closed {
		s.mu.Unlock()
		return nil
	}
	s.mu.closed = true
	s.mu.Unlock()
	s.closing.Store(true)

	// Stop taking requests: close the listener and every connection (a
	// reply not yet written was not acknowledged), and wait for their
	// goroutines; replies waiting for replication finish first, the
	// streams still run.
	s.stopFrontEnd()
	if !liveness.WaitTimeout(&s.connWG, closeWait) {
		// An event loop wedged in a command (the watchdog's stall)
		// never closes its connections: stop without them.
		s.log.Error("connection goroutines did not stop; stopping without them", "waited", closeWait)
	}

	// Stop heartbeats first: no table applied from now on starts
	// migrations or streams.
	s.hbCancel()
	<-s.hbDone

	s.mu.Lock()
	migs := make([]*migration, 0, len(s.mu.migs))
	for _, m := range s.mu.migs {
		migs = append(migs, m)
	}
	streams := make([]*stream, 0, len(s.mu.streams))
	for _, st := range s.mu.streams {
		streams = append(streams, st)
	}
	s.mu.Unlock()
	for _, m := range migs {
		m.abort()
	}
	var wg sync.WaitGroup
	for _, st := range streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st.close(s.cfg.ReplicationTimeout)
		}()
	}
	wg.Wait()
	s.cancel()
	s.wg.Wait()
	s.pool.close()
	if s.httpSrv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = s.httpSrv.Shutdown(ctx)
		cancel()
	}
	err := s.eng.Close()
	if err == nil && s.eng.Persistent() {
		if werr := os.WriteFile(filepath.Join(s.cfg.Dir, cleanMarker), nil, 0o644); werr != nil {
			s.log.Warn("recording the clean shutdown", "err", werr)
		}
	}
	s.log.Info("dataserver stopped")
	return err
}

// cleanMarker is the file a persistent dataserver leaves in its data
// directory when it stops cleanly (removed again at start).
const cleanMarker = "CLEAN_SHUTDOWN"

// dirEmpty reports whether dir is missing or empty: a new data directory
// holds no acknowledged write (a node whose disk was wiped must not say
// it kept its copies).
func dirEmpty(dir string) bool {
	ents, err := os.ReadDir(dir)
	return err != nil || len(ents) == 0
}

// dataSurvived reports whether the engine's data holds every write this
// node acknowledged before it last stopped: always for a persistent
// engine that syncs its writes, and for one that does not (--sync none)
// only after a clean stop. A node whose data may lack acknowledged writes
// reports itself not persistent, so the configserver treats its copies
// as lost and rebuilds them rather than serve it as it is.
func (s *Server) dataSurvived() bool {
	if !s.eng.Persistent() {
		return false
	}
	marker := filepath.Join(s.cfg.Dir, cleanMarker)
	_, err := os.Stat(marker)
	clean := err == nil
	if clean {
		if err := os.Remove(marker); err != nil {
			s.log.Warn("removing the clean-shutdown marker", "err", err)
			clean = false
		}
	}
	if s.cfg.Sync == engines.SyncNone && !clean {
		// What is left is an unknown prefix of what was acknowledged:
		// start empty, as a node that lost its data does.
		s.log.Warn("the data directory was not closed cleanly and writes were not synced (--sync none): dropping its data, this node's copies count as lost", "dir", s.cfg.Dir)
		for area := range s.eng.AllStats() {
			if _, err := s.eng.DeleteArea(area); err != nil {
				s.log.Error("dropping unsynced data", "area", area, "err", err)
			}
		}
		return false
	}
	return true
}

// buckets returns the bucket states (nil before the first table).
func (s *Server) buckets() []*bucket {
	if p := s.bk.Load(); p != nil {
		return *p
	}
	return nil
}

func (s *Server) bucket(b route.BucketID) *bucket {
	bs := s.buckets()
	if int(b) < len(bs) {
		return bs[b]
	}
	return nil
}

// streamTo returns the replication stream to node, creating it.
func (s *Server) streamTo(node string) *stream {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.mu.streams[node]
	if st == nil {
		// A stream closed earlier to the same node may still have a batch
		// in flight: the new one retires it at the receiver.
		st = s.newStream(node, false, s.mu.retired[node])
		delete(s.mu.retired, node)
		s.mu.streams[node] = st
	}
	return st
}

// leaseOK reports whether the node may acknowledge requests as a master.
func (s *Server) leaseOK() bool {
	from := s.leaseFrom.Load()
	return from != 0 && time.Duration(s.leaseClock(time.Now())-from) < s.cfg.LeaseTimeout
}

// leaseClock is the lease clock's reading for t.
func (s *Server) leaseClock(t time.Time) int64 {
	return int64(t.Sub(s.epoch)) + 1
}

// observeClientLatency folds one batch's service time (read to reply
// written) into the moving average migrations pace themselves by.
func (s *Server) observeClientLatency(d time.Duration) {
	old := s.clientLat.Load()
	s.clientLat.Store(old + (int64(d)-old)/16)
}

// clientLatency is the moving average of client batches' service time.
func (s *Server) clientLatency() time.Duration { return time.Duration(s.clientLat.Load()) }

func (s *Server) kickHeartbeat() {
	select {
	case s.hbKick <- struct{}{}:
	default:
	}
}

// kickHeartbeatNow sends a heartbeat at once, without the kickSpacing
// wait: for a Done that clients' writes wait on (a master's bucket
// frozen until the table hands it over).
func (s *Server) kickHeartbeatNow() {
	s.hbUrgent.Store(true)
	s.kickHeartbeat()
}

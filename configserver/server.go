// Package configserver is Tair's control plane: it keeps the bucket table
// in etcd, learns which dataservers live from their heartbeats, promotes
// slaves when a master dies, and plans and paces bucket migrations.
//
// # Roles
//
// Every configserver runs a concurrency.Election on a lease (Config.LeaseTTL).
// The leader alone accepts heartbeats and admin requests and changes the
// table; each of its writes is an etcd transaction conditioned on its
// election key (pd's LeaderTxn), so a leader that lost its lease cannot
// write. Standbys watch the table key and serve GET /v1/table from it;
// they answer leader-only calls with 421 naming the leader.
//
// # State in etcd (under Config.EtcdPrefix, default /tair)
//
//	/table     route.Table as JSON: serving, destination, running moves, version
//	/meta      known dataservers (labels, incarnation, drain), areas, hooks, pause
//	/election  the election's keys
//
// The table is committed before anyone is told of it, so a restarted or new
// leader resumes from exactly what dataservers and proxies saw.
//
// # HTTP
//
// --listen serves the wire API (package wire): heartbeats, the table long
// poll, nodes, migrations, areas, admin, plus GET /v1/stats (per-node area
// counters from the last heartbeats), GET /v1/proxies (the live proxies)
// and GET /v1/events (the leader's events of the last hour, events.go).
// --http serves /metrics, /healthz (200 while etcd answers), /status, and
// the web console (package console) at / with the read API it polls and
// POST /v1/admin (JSON only); a standby forwards those to the leader.
//
// # Migrations
//
// The table's Migrating list names the moves running now; the source
// dataserver (Move.From) copies the bucket to Move.To and reports
// wire.MigrationProgress in its heartbeats. On Done the leader installs the
// move in Serving (To takes From's slot, so a moving master stays master;
// a recovery move fills the lost slot), bumps the version and starts the
// next moves: recovery first, at most Config.MovesPerNode per source and
// Config.MaxMoves in all. Masters move to their planned nodes in one table
// once no copy needs moving.
package configserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tairkv/tair/internal/route"
)

// startTimeout bounds Start's first etcd read: an unreachable etcd is a
// start failure, reported rather than waited out.
const startTimeout = 5 * time.Second

// Server is one configserver. Create it with New, then Start; Close stops
// it. Its methods are safe for concurrent use.
type Server struct {
	cfg     Config
	log     *slog.Logger
	metrics *metrics
	// recovery is the leader's last RecoveryStatus (nil before the first
	// reconcile of a term of its own).
	recovery atomic.Pointer[RecoveryStatus]

	etcd  *embeddedEtcd // nil with external etcd
	cli   *clientv3.Client
	store *store
	nodes *cluster

	apiLn, httpLn   net.Listener
	apiSrv, httpSrv *http.Server

	// table is the newest committed table (nil before the first);
	// tableCh is closed and replaced whenever it changes (long polls).
	table   atomic.Pointer[route.Table]
	tableMu sync.Mutex
	tableCh chan struct{}
	// tableEnc is the served table's JSON, encoded once per version for
	// every dataserver and proxy that fetches it (see tableJSON).
	tableEnc atomic.Pointer[tableBytes]
	// history keeps the newest tables, for fetchers that take deltas.
	history recentTables

	// areas and hooks are what heartbeat replies carry.
	metaState atomic.Pointer[meta]

	leader     atomic.Bool
	renewed    atomic.Int64 // unix ns of the election lease's last renewal
	lastTerm   string       // term record of this server's last term (election goroutine only)
	leaderAddr atomic.Pointer[string]

	kick    chan struct{}
	proxies proxySet
	hotKeys hotKeySet // the proxies' hot keys (hotkeys.go)
	// events are the leader's recent events (GET /v1/events).
	events eventLog
	// invalidKicks wake the invalid sender of each peer (InvalidPeers
	// order) when an entry is queued.
	invalidKicks []chan struct{}
	admin        chan adminCall

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	closed atomic.Bool
}

// New checks cfg and returns a server that is not started yet.
func New(cfg Config, log *slog.Logger) (*Server, error) {
	cfg.adjust()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := cfg.loadAdminToken(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.Default()
	}
	s := &Server{
		cfg:     cfg,
		log:     log,
		metrics: newMetrics(),
		nodes:   newCluster(),
		tableCh: make(chan struct{}),
		kick:    make(chan struct{}, 1),
		admin:   make(chan adminCall),
	}
	for range cfg.InvalidPeers {
		s.invalidKicks = append(s.invalidKicks, make(chan struct{}, 1))
	}
	empty := ""
	s.leaderAddr.Store(&empty)
	s.metaState.Store(newMeta())
	return s, nil
}

// Start binds both listeners, connects to etcd (starting the embedded one
// when Config.Etcd is empty), loads the stored table, and starts serving
// and campaigning. It returns once the API answers; leadership comes
// asynchronously (IsLeader).
func (s *Server) Start() (err error) {
	s.ctx, s.cancel = context.WithCancel(context.Background())
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	if s.apiLn, err = net.Listen("tcp", s.cfg.Listen); err != nil {
		return fmt.Errorf("configserver: listen %s: %w", s.cfg.Listen, err)
	}
	if s.cfg.HTTP != "" {
		if s.httpLn, err = net.Listen("tcp", s.cfg.HTTP); err != nil {
			return fmt.Errorf("configserver: http listen %s: %w", s.cfg.HTTP, err)
		}
	}
	if s.cfg.Name == "" {
		s.cfg.Name = s.Addr()
	}
	s.log = s.log.With("configserver", s.cfg.Name)
	endpoints := s.cfg.Etcd
	if len(endpoints) == 0 {
		if s.etcd, err = startEmbeddedEtcd(s.cfg.EtcdDir, s.log); err != nil {
			return err
		}
		endpoints = []string{s.etcd.client}
	}
	if s.cli, err = newEtcdClient(endpoints, newZapLogger(s.log, &s.closed)); err != nil {
		return err
	}
	s.store = &store{cli: s.cli, prefix: s.cfg.EtcdPrefix}
	ctx, cancel := context.WithTimeout(s.ctx, startTimeout)
	t, m, rev, err := s.store.load(ctx)
	cancel()
	if err != nil {
		return fmt.Errorf("%w (etcd %v)", err, endpoints)
	}
	if t != nil {
		s.publish(t)
		s.log.Info("table loaded from etcd", "table_version", t.Version, "nodes", len(t.Nodes()))
	}
	s.setMeta(m)

	s.apiSrv = &http.Server{Handler: s.apiHandler(), ReadHeaderTimeout: 5 * time.Second}
	s.serve(s.apiSrv, s.apiLn)
	if s.httpLn != nil {
		s.httpSrv = &http.Server{Handler: s.httpHandler(), ReadHeaderTimeout: 5 * time.Second}
		s.serve(s.httpSrv, s.httpLn)
	}
	s.wg.Add(2)
	go s.watchLoop(rev + 1)
	go s.electionLoop()
	s.log.Info("configserver started", "listen", s.Addr(), "http", s.HTTPAddr(), "etcd", endpoints)
	return nil
}

func (s *Server) serve(srv *http.Server, ln net.Listener) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("http server stopped", "addr", ln.Addr().String(), "err", err)
		}
	}()
}

// Close resigns leadership (so a standby takes over at once rather than
// after the lease TTL), stops serving, and stops the embedded etcd.
func (s *Server) Close() error {
	if !s.closed.CompareAndSwap(false, true) {
		return nil
	}
	if s.cancel != nil {
		s.cancel()
	}
	// Wake long polls so the HTTP servers can shut down.
	for _, srv := range []*http.Server{s.apiSrv, s.httpSrv} {
		if srv != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			_ = srv.Shutdown(ctx)
			cancel()
		}
	}
	for _, ln := range []net.Listener{s.apiLn, s.httpLn} {
		if ln != nil {
			ln.Close()
		}
	}
	s.wg.Wait()
	var err error
	if s.cli != nil {
		err = s.cli.Close()
	}
	if s.etcd != nil {
		s.etcd.close()
	}
	s.log.Info("configserver stopped")
	return err
}

// Addr is the cluster API address (--listen), with the real port.
func (s *Server) Addr() string {
	if s.apiLn == nil {
		return s.cfg.Listen
	}
	return s.apiLn.Addr().String()
}

// HTTPAddr is the /metrics, /healthz and /status address (--http).
func (s *Server) HTTPAddr() string {
	if s.httpLn == nil {
		return s.cfg.HTTP
	}
	return s.httpLn.Addr().String()
}

// EtcdEndpoints are the etcd client endpoints this server uses: the
// embedded etcd's when it runs one, so standbys can share it.
func (s *Server) EtcdEndpoints() []string {
	if s.etcd != nil {
		return []string{s.etcd.client}
	}
	return append([]string(nil), s.cfg.Etcd...)
}

// IsLeader reports whether this server leads now: it won the election,
// loaded the state, and its session is alive.
func (s *Server) IsLeader() bool { return s.leader.Load() && s.leaseValid() }

// Leader is the API address of the current leader, "" when unknown.
func (s *Server) Leader() string { return *s.leaderAddr.Load() }

// Table returns the newest committed table, nil before the first. The
// table is shared and must not be modified.
func (s *Server) Table() *route.Table { return s.table.Load() }

// publish makes t the served table when it is newer, and wakes long polls.
func (s *Server) publish(t *route.Table) {
	s.tableMu.Lock()
	defer s.tableMu.Unlock()
	if cur := s.table.Load(); cur != nil && cur.Version >= t.Version {
		return
	}
	s.table.Store(t)
	s.history.add(t)
	close(s.tableCh)
	s.tableCh = make(chan struct{})
	s.metrics.setTable(t)
}

// tableJSON returns t's encoding for GET /v1/table. Every node and proxy
// fetches every version, and a rebalance makes hundreds of versions a
// minute: encoding each once took a sixth of the leader's CPU off it
// during `make bench-migration`. The leader serves the bytes it saved in
// etcd; a standby encodes what its watch decoded, once. Published tables
// are never modified, so the pointer identifies the version.
func (s *Server) tableJSON(t *route.Table) ([]byte, error) {
	if data := s.store.savedJSON(t); data != nil {
		return data, nil
	}
	if c := s.tableEnc.Load(); c != nil && c.t == t {
		return c.data, nil
	}
	data, err := json.Marshal(t)
	if err != nil {
		return nil, err
	}
	s.tableEnc.Store(&tableBytes{t: t, data: data})
	return data, nil
}

// tableWait returns the current table and a channel closed when it changes.
func (s *Server) tableWait() (*route.Table, <-chan struct{}) {
	s.tableMu.Lock()
	defer s.tableMu.Unlock()
	return s.table.Load(), s.tableCh
}

func (s *Server) setMeta(m *meta) { s.metaState.Store(m) }

// poke asks the leader loop to reconcile now.
func (s *Server) poke() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// observe refreshes the leader's gauges.
func (s *Server) observe(t *route.Table, m *meta, view map[string]nodeView) {
	alive := 0
	for _, v := range view {
		if v.alive {
			alive++
		}
	}
	s.metrics.nodesAlive.Set(float64(alive))
	s.metrics.nodesKnown.Set(float64(len(m.Nodes)))
	if t == nil {
		return
	}
	s.metrics.movesRunning.Set(float64(len(t.Migrating)))
	s.metrics.movesPending.Set(float64(len(pendingMoves(t))))
}

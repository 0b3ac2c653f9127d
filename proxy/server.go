package proxy

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tairkv/tair/hotkey"
	"github.com/tairkv/tair/internal/liveness"
	"github.com/tairkv/tair/internal/route"
)

// Server is one proxy.
//
// # Lifecycle
//
// New checks the config; Start binds both listeners, waits for a first
// table (up to StartTimeout) and serves; Close stops accepting, closes
// every client and backend connection and waits for the goroutines.
//
// # Concurrency
//
// Client connections live on event loops (frontend.go), one per
// GOMAXPROCS: a loop reads a client's pipelined commands, forwards the
// plain keyed ones on its own pipelined dataserver connections and
// writes the replies in order. Each session has a goroutine for the
// rest (local commands, multi-key splits, transactions, blocking pops,
// retries), which forwards over the server's shared backend connections
// (backend.go, two goroutines each). The table is an immutable snapshot
// behind an atomic pointer.
type Server struct {
	cfg   Config
	log   *slog.Logger
	m     *metrics
	r     *router
	id    string // CLUSTER MYID
	start time.Time

	fe      *frontEnd
	httpLn  net.Listener
	httpSrv *http.Server

	ctx     context.Context
	cancel  context.CancelFunc
	closing atomic.Bool
	wg      sync.WaitGroup

	nextID   atomic.Int64
	sessMu   sync.Mutex
	sessions map[int64]*session
	clients  atomic.Int64

	cmds    atomic.Pointer[map[string]*cmdEntry] // copy-on-write
	cmdsMu  sync.Mutex
	unknown *cmdEntry

	watchWarned atomic.Bool
	livePeers   atomic.Pointer[[]string]
	ps          pubsubHub // subscribers and peer links (pubsub.go)

	stats   serverStats
	slowlog slowlog
	// hot counts sampled key accesses for TAIR.HOTKEYS.
	hot *hotkey.Detector
	// hotCache serves GETs of hot keys (nil: Config.HotCacheTTL is 0).
	hotCache *hotkey.Cache
	// trackID names this proxy to the dataservers' tracking, tl its
	// invalidation links (hotpush.go).
	trackID uint64
	tl      trackLinks
	dyn     dynConfig

	// stallAfter (ns): an event loop without progress this long makes
	// the proxy unhealthy; unhealthy is why ("" healthy, contain.go).
	stallAfter atomic.Int64
	unhealthy  atomic.Pointer[string]
}

// serverStats are INFO stats counters.
type serverStats struct {
	connections atomic.Int64 // total_connections_received
	rejected    atomic.Int64 // rejected_connections
	commands    atomic.Int64 // total_commands_processed
	netIn       atomic.Int64
	netOut      atomic.Int64
	retries     atomic.Int64
	blocked     atomic.Int64 // clients in a blocking pop
	resplits    atomic.Int64 // read parts split again per bucket
	loopFwd     atomic.Int64 // commands an event loop handled itself (forwarded, or from the hot-key cache)
	batches     atomic.Int64 // batches run by session goroutines
	loopConns   atomic.Int64 // event loops' open dataserver connections
	opsPerSec   atomic.Int64 // commands in the last second
}

// New returns a proxy for cfg; Start runs it.
func New(cfg Config, log *slog.Logger) (*Server, error) {
	cfg.Adjust()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var idb [20]byte
	_, _ = rand.Read(idb[:])
	s := &Server{
		cfg:      cfg,
		log:      log,
		id:       hex.EncodeToString(idb[:]),
		sessions: map[int64]*session{},
		hot:      hotkey.NewDetector(hotkey.Options{}),
	}
	if cfg.HotCacheTTL > 0 {
		s.hotCache = hotkey.NewCache(cfg.HotCacheTTL, cfg.HotCacheKeys, cfg.HotCacheBytes, nil)
		s.trackID = newTrackID()
	}
	s.stallAfter.Store(int64(defaultStallTimeout))
	s.m = newMetrics(s)
	s.unknown = &cmdEntry{stat: s.m.stat("unknown")}
	cmds := map[string]*cmdEntry{}
	s.cmds.Store(&cmds)
	s.r = newRouter(s)
	s.slowlog.max = cfg.SlowlogMaxLen
	s.dyn.init(&s.cfg)
	s.ctx, s.cancel = context.WithCancel(context.Background())
	return s, nil
}

// Start binds, fetches a first table and serves.
func (s *Server) Start() error {
	if s.cfg.HTTP != "" {
		hl, err := net.Listen("tcp", s.cfg.HTTP)
		if err != nil {
			return fmt.Errorf("proxy: listen http %s: %w", s.cfg.HTTP, err)
		}
		s.httpLn = hl
		s.httpSrv = &http.Server{Handler: s.httpHandler(), ReadHeaderTimeout: 5 * time.Second}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			_ = s.httpSrv.Serve(hl)
		}()
	}
	if err := s.r.first(s.ctx, s.cfg.StartTimeout); err != nil {
		_ = s.Close()
		return err
	}
	if s.r.client != nil {
		s.wg.Add(1)
		go s.r.refreshLoop(s.ctx)
	}
	s.start = time.Now()
	if err := s.startFrontEnd(); err != nil {
		_ = s.Close()
		return err
	}
	s.wg.Add(1)
	go s.statsLoop()
	if s.hotCache != nil {
		s.wg.Add(1)
		go s.trackLoop() // hotpush.go
	}
	if len(s.cfg.Peers) > 0 || s.r.client != nil {
		s.wg.Add(1)
		go s.peersLoop()
	}
	s.log.Info("proxy started", "listen", s.Addr(), "http", s.HTTPAddr(), "table_version", s.r.version())
	return nil
}

// Addr is the RESP address.
func (s *Server) Addr() string {
	if s.fe != nil {
		if e := s.fe.eng.Load(); e != nil {
			return e.Addr()
		}
	}
	return s.cfg.Listen
}

// HTTPAddr is the HTTP address ("" without one).
func (s *Server) HTTPAddr() string {
	if s.httpLn == nil {
		return s.cfg.HTTP
	}
	return s.httpLn.Addr().String()
}

// SetTable replaces the routing table, whatever its version (tests, and
// setups without configservers). A configserver's newer table replaces
// it again.
func (s *Server) SetTable(t *route.Table) error {
	if t == nil {
		return errors.New("proxy: nil table")
	}
	if err := t.Validate(); err != nil {
		return err
	}
	s.r.apply(t, true)
	return nil
}

// TableVersion is the version of the table in use (0 before the first).
func (s *Server) TableVersion() route.Version { return s.r.version() }

// Table returns the table in use (nil before the first). Do not modify.
func (s *Server) Table() *route.Table {
	if rt := s.r.load(); rt != nil {
		return rt.t
	}
	return nil
}

// Close stops the proxy.
func (s *Server) Close() error {
	if !s.closing.CompareAndSwap(false, true) {
		return nil
	}
	s.cancel()
	s.stopFrontEnd()
	if s.httpSrv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = s.httpSrv.Shutdown(ctx)
		cancel()
	}
	for _, n := range s.r.allNodes() {
		n.closeAll()
	}
	s.ps.peers.close()
	if !liveness.WaitTimeout(&s.wg, closeWait) {
		// An event loop wedged in a command never closes its sessions,
		// whose goroutines wait for it: stop without them.
		s.log.Error("goroutines did not stop; stopping without them", "waited", closeWait)
	}
	s.log.Info("proxy stopped")
	return nil
}

// statsLoop samples the command rate once a second (INFO
// instantaneous_ops_per_sec).
func (s *Server) statsLoop() {
	defer s.wg.Done()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	last := s.stats.commands.Load()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
			now := s.stats.commands.Load()
			s.stats.opsPerSec.Store(now - last)
			last = now
		}
	}
}

// forget drops a finished session.
func (s *Server) forget(ss *session) {
	s.sessMu.Lock()
	delete(s.sessions, ss.id)
	s.sessMu.Unlock()
	s.clients.Add(-1)
	s.m.clients.Dec()
}

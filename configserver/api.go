package configserver

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/tairkv/tair/configserver/console"
	"github.com/tairkv/tair/configserver/schedule"
	"github.com/tairkv/tair/internal/pprofhttp"
	"github.com/tairkv/tair/internal/route"
	"github.com/tairkv/tair/internal/wire"
)

// maxTableWait bounds a table long poll.
const maxTableWait = time.Minute

// apiHandler serves the wire API on --listen (see package wire).
func (s *Server) apiHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/heartbeat", s.leaderOnly(s.handleHeartbeat))
	mux.HandleFunc("GET /v1/table", s.handleTable)
	mux.HandleFunc("GET /v1/nodes", s.leaderOnly(s.handleNodes))
	mux.HandleFunc("GET /v1/migrations", s.leaderOnly(s.handleMigrations))
	mux.HandleFunc("GET /v1/areas", s.handleAreas)
	mux.HandleFunc("GET /v1/hooks", s.handleHooks)
	mux.HandleFunc("GET /v1/stats", s.leaderOnly(s.handleStats))
	mux.HandleFunc("POST /v1/admin", s.leaderOnly(s.requireAdmin(s.handleAdmin)))
	mux.HandleFunc("POST /v1/invalid", s.leaderOnly(s.handleInvalid))
	mux.HandleFunc("POST /v1/proxies", s.leaderOnly(s.handleProxyBeat))
	mux.HandleFunc("GET /v1/proxies", s.leaderOnly(s.handleProxies))
	mux.HandleFunc("GET /v1/hotkeys", s.leaderOnly(s.handleHotKeys))
	mux.HandleFunc("GET /v1/events", s.leaderOnly(s.handleEvents))
	mux.HandleFunc("POST /v1/scripts", s.leaderOnly(s.handleScripts))
	// The status endpoints answer here too, for tools given only --listen.
	mux.HandleFunc("GET /status", s.handleStatus)
	mux.HandleFunc("GET /healthz", s.handleHealthz)
	return mux
}

// httpHandler serves /metrics, /healthz, /status and /debug/pprof/ on
// --http, and the web console at / with the part of the API it uses,
// answered as the leader sees it (consoleAPI).
func (s *Server) httpHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", s.handleHealthz)
	mux.HandleFunc("GET /status", s.handleStatus)
	pprofhttp.Register(mux)
	api := s.consoleAPI(s.apiHandler())
	for _, p := range []string{"/v1/table", "/v1/nodes", "/v1/migrations", "/v1/areas", "/v1/hooks",
		"/v1/stats", "/v1/proxies", "/v1/events", "/v1/hotkeys"} {
		mux.Handle("GET "+p, api)
	}
	mux.Handle("POST /v1/admin", jsonOnly(api))
	mux.Handle("/", console.Handler())
	return mux
}

// forwardedHeader marks a console API request a standby forwarded, so
// it is never forwarded twice.
const forwardedHeader = "X-Tair-Forwarded-By"

// consoleAPI answers the console's API calls on --http: the leader with
// api itself, a standby by forwarding them to the leader's --listen
// address, so every configserver's console shows the leader's view.
func (s *Server) consoleAPI(api http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		leader := s.Leader()
		switch {
		case s.IsLeader():
			api.ServeHTTP(w, r)
		case leader == "" || leader == s.Addr() || r.Header.Get(forwardedHeader) != "":
			writeJSON(w, http.StatusServiceUnavailable, wire.NotLeader{Leader: leader})
		default:
			proxy := &httputil.ReverseProxy{
				Rewrite: func(pr *httputil.ProxyRequest) {
					pr.SetURL(&url.URL{Scheme: "http", Host: leader})
					pr.Out.Header.Set(forwardedHeader, s.Addr())
				},
				ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
					http.Error(w, "leader unreachable: "+err.Error(), http.StatusBadGateway)
				},
			}
			proxy.ServeHTTP(w, r)
		}
	})
}

// jsonOnly refuses a POST whose body is not declared JSON: a page of
// another origin cannot send that without a CORS preflight, which this
// server never grants, so no other web site can drive admin operations
// through an operator's browser.
func jsonOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct != "application/json" {
			http.Error(w, "Content-Type must be application/json", http.StatusUnsupportedMediaType)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// leaderOnly answers 421 + NotLeader on a standby, so wire.Client moves
// on to the leader it names.
func (s *Server) leaderOnly(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !s.IsLeader() {
			writeJSON(w, http.StatusMisdirectedRequest, wire.NotLeader{Leader: s.Leader()})
			return
		}
		h(w, r)
	}
}

func (s *Server) handleHeartbeat(w http.ResponseWriter, r *http.Request) {
	var hb wire.Heartbeat
	if err := json.NewDecoder(r.Body).Decode(&hb); err != nil || hb.Addr == "" {
		http.Error(w, fmt.Sprintf("bad heartbeat: %v", err), http.StatusBadRequest)
		return
	}
	s.metrics.heartbeats.Inc()
	if s.nodes.heartbeat(&hb, time.Now(), s.cfg.downAfter()) {
		s.poke()
	}
	m := s.metaState.Load()
	reply := wire.HeartbeatReply{Areas: m.Areas, Hooks: m.Hooks, MigrateBytesPerSec: m.MigrateRate}
	if t := s.Table(); t != nil && t.Version > hb.TableVersion {
		var e *encodedDelta
		if hb.Deltas {
			e = s.history.delta(hb.TableVersion, t)
		}
		if e != nil {
			reply.TableDelta = e.d
		} else {
			reply.Table = t
		}
		s.metrics.tableSent(e != nil)
	}
	writeJSON(w, http.StatusOK, reply)
}

// handleTable serves the table, long-polling up to wait ms for a version
// above after; 304 when none came. With delta=1 the reply is a
// wire.TableReply: a fetcher that holds table version after gets the
// changes since (route.Delta) when this configserver still keeps that
// version, else the table.
func (s *Server) handleTable(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	after, _ := strconv.ParseUint(q.Get("after"), 10, 64)
	waitMS, _ := strconv.ParseInt(q.Get("wait"), 10, 64)
	deltas := q.Get("delta") == "1" // the fetcher takes a delta against after
	wait := min(time.Duration(waitMS)*time.Millisecond, maxTableWait)
	var timer <-chan time.Time
	if wait > 0 {
		tm := time.NewTimer(wait)
		defer tm.Stop()
		timer = tm.C
	}
	for {
		t, changed := s.tableWait()
		if t != nil && t.Version > route.Version(after) {
			var e *encodedDelta
			if deltas {
				e = s.history.delta(route.Version(after), t)
			}
			data, field := []byte(nil), `{"table":` // field: of a wire.TableReply
			if e != nil {
				data, field = e.json, `{"delta":`
			} else {
				var err error
				if data, err = s.tableJSON(t); err != nil {
					http.Error(w, err.Error(), http.StatusInternalServerError)
					return
				}
			}
			s.metrics.tableSent(e != nil)
			w.Header().Set("Content-Type", "application/json")
			if deltas {
				_, _ = io.WriteString(w, field)
			}
			_, _ = w.Write(data)
			if deltas {
				_, _ = io.WriteString(w, "}")
			}
			return
		}
		if timer == nil {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		select {
		case <-changed:
		case <-timer:
			w.WriteHeader(http.StatusNotModified)
			return
		case <-r.Context().Done():
			return
		case <-s.ctx.Done():
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
	}
}

func (s *Server) handleNodes(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, s.nodeStatus())
}

// nodeStatus lists every known dataserver with its share of the table.
func (s *Server) nodeStatus() []wire.NodeStatus {
	now := time.Now()
	view, _ := s.nodes.snapshot(now, s.cfg.downAfter())
	m := s.metaState.Load()
	t := s.Table()
	masters, slaves := map[string]int{}, map[string]int{}
	if t != nil {
		for _, row := range t.Serving {
			for k, a := range row {
				if a == "" {
					continue
				}
				if k == 0 {
					masters[a]++
				} else {
					slaves[a]++
				}
			}
		}
	}
	addrs := map[string]bool{}
	for a := range m.Nodes {
		addrs[a] = true
	}
	for a := range view {
		addrs[a] = true
	}
	out := []wire.NodeStatus{}
	for _, a := range sortedKeys(addrs) {
		v := view[a]
		st := wire.NodeStatus{Addr: a, Alive: v.alive && v.heard, Masters: masters[a], Slaves: slaves[a],
			HTTP: v.hb.HTTP, Engine: v.hb.Engine, TableVersion: v.hb.TableVersion, Load: v.hb.Load, Zone: v.hb.Zone, Rack: v.hb.Rack,
			Health: v.hb.Health, HeldMasters: v.hb.MasterBuckets, HeldSlaves: v.hb.SlaveBuckets, Resources: v.hb.Resources}
		if !st.Alive && v.hb.Unhealthy == "" {
			st.Health = "down"
		}
		if !v.lastSeen.IsZero() && v.heard {
			st.LastHeartbeat = v.lastSeen.UnixMilli()
		}
		if nm := m.Nodes[a]; nm != nil {
			if st.Zone == "" && st.Rack == "" {
				st.Zone, st.Rack = nm.Zone, nm.Rack
			}
			st.Draining = nm.Draining
			if nm.Removed {
				continue
			}
		}
		out = append(out, st)
	}
	return out
}

func (s *Server) handleMigrations(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, s.migrationStatus())
}

func (s *Server) migrationStatus() wire.MigrationStatus {
	m := s.metaState.Load()
	// Completed and Total count the current plan (since the destination was
	// last rebuilt), so Completed/Total is its progress.
	st := wire.MigrationStatus{Paused: m.Paused, Rate: m.MigrateRate, Completed: m.PlanDone, Pending: []route.Move{}, Running: []wire.MigrationProgress{}}
	if rs := s.recovery.Load(); rs != nil {
		st.UnderReplicated = rs.UnderReplicated
		st.Unavailable = rs.Unavailable
		st.UnderReplicatedSeconds = rs.Oldest.Seconds()
		st.LastRestoreSeconds = rs.LastRestore.Seconds()
	}
	t := s.Table()
	if t == nil {
		return st
	}
	st.Pending = pendingMoves(t)
	view, _ := s.nodes.snapshot(time.Now(), s.cfg.downAfter())
	for _, mv := range t.Migrating {
		p := wire.MigrationProgress{Bucket: mv.Bucket, To: mv.To}
		if r, ok := view[mv.From].reports[moveKey{mv.Bucket, mv.To}]; ok {
			p = r.MigrationProgress
		}
		st.Running = append(st.Running, p)
	}
	st.Total = st.Completed + len(st.Running) + len(st.Pending)
	return st
}

// pendingMoves are the planned moves not running yet.
func pendingMoves(t *route.Table) []route.Move {
	out := []route.Move{}
	if t.Destination == nil {
		return out
	}
	running := map[route.Move]bool{}
	for _, mv := range t.Migrating {
		running[mv] = true
	}
	for _, p := range schedule.Diff(t.Serving, t.Destination) {
		if !running[p.Move] {
			out = append(out, p.Move)
		}
	}
	return out
}

// servedMeta is the metadata a read API answers from: the leader's own,
// or on a standby what etcd holds (false: the error was written).
func (s *Server) servedMeta(w http.ResponseWriter, r *http.Request) (*meta, bool) {
	if s.IsLeader() {
		return s.metaState.Load(), true
	}
	ctx, cancel := context.WithTimeout(r.Context(), 3*time.Second)
	defer cancel()
	_, stored, _, err := s.store.load(ctx)
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return nil, false
	}
	return stored, true
}

// handleAreas serves the area configuration; a standby reads it from etcd.
func (s *Server) handleAreas(w http.ResponseWriter, r *http.Request) {
	m, ok := s.servedMeta(w, r)
	if !ok {
		return
	}
	areas := m.Areas
	if areas == nil {
		areas = map[uint16]wire.AreaConfig{}
	}
	writeJSON(w, http.StatusOK, areas)
}

// handleHooks serves the dataservers' hook list (wire.HooksStatus); a
// standby reads it from etcd.
func (s *Server) handleHooks(w http.ResponseWriter, r *http.Request) {
	m, ok := s.servedMeta(w, r)
	if !ok {
		return
	}
	st := wire.HooksStatus{Enabled: wire.DefaultHooks, Known: wire.KnownHooks}
	if m.Hooks != nil {
		st.Enabled, st.Set = *m.Hooks, true
	}
	writeJSON(w, http.StatusOK, st)
}

// handleStats serves each live dataserver's per-area counters from its
// last heartbeat: map[node]map[area]AreaStats. Counters cover every copy a
// node holds, so summing nodes counts slaves too.
func (s *Server) handleStats(w http.ResponseWriter, _ *http.Request) {
	view, _ := s.nodes.snapshot(time.Now(), s.cfg.downAfter())
	out := map[string]map[uint16]wire.AreaStats{}
	for addr, v := range view {
		if v.alive && v.heard {
			out[addr] = v.hb.Stats
		}
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleAdmin(w http.ResponseWriter, r *http.Request) {
	var req wire.AdminRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, fmt.Sprintf("bad admin request: %v", err), http.StatusBadRequest)
		return
	}
	call := adminCall{req: req, reply: make(chan wire.AdminReply, 1)}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	select {
	case s.admin <- call:
	case <-ctx.Done():
		http.Error(w, "leader busy", http.StatusServiceUnavailable)
		return
	}
	select {
	case reply := <-call.reply:
		writeJSON(w, http.StatusOK, reply)
	case <-ctx.Done():
		http.Error(w, "leader did not answer", http.StatusServiceUnavailable)
	}
}

func (s *Server) handleStatus(w http.ResponseWriter, _ *http.Request) {
	st := wire.Status{Kind: "configserver", Role: "standby", Addr: s.Addr(), Leader: s.Leader(), EtcdEndpoints: s.EtcdEndpoints()}
	if s.IsLeader() {
		st.Role = "leader"
	}
	if t := s.Table(); t != nil {
		st.TableVersion = t.Version
	}
	writeJSON(w, http.StatusOK, st)
}

// handleHealthz is 200 while the server runs and etcd answers.
func (s *Server) handleHealthz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), time.Second)
	defer cancel()
	if _, err := s.cli.Get(ctx, s.store.tableKey(), clientv3CountOnly()...); err != nil {
		http.Error(w, "etcd unreachable: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	w.Write([]byte("ok\n"))
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

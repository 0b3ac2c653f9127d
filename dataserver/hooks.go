package dataserver

import (
	"bytes"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tairkv/tair/internal/errs"
	"github.com/tairkv/tair/internal/route"
	"github.com/tairkv/tair/internal/wire"
	"github.com/tairkv/tair/resp"
)

// # Hooks
//
// A chain of request hooks wraps every command this node serves to a
// client as the owner of its data (the proxies' envelopes: keyed
// commands, keyless ones such as TAIR.STAT and TAIR.DELALL, MULTIEXEC,
// FLUSHDB, DBSIZE, SCANBUCKET, TAIR.KEYVER), after the ownership checks.
// Replicated and migrated writes applied on slaves (replapply.go) run no hook:
// they are the master's decisions.
//
// Each hook has two phases: Before runs before the engine and may refuse
// the request (its error becomes the client's reply, and the chain stops
// there); After sees the reply. Before runs in the configured order;
// After runs in the reverse order for every hook whose Before ran (the
// refusing one included). The configserver's heartbeat reply names the
// hooks switched on, in order (wire.HeartbeatReply.Hooks, set with
// `tair ctl hooks`); wire.DefaultHooks apply while it never set them.
//
//	stats  tair_dataserver_area_commands_total{area,kind,result}
//	quota  the areas' byte quotas go to the engine (SetQuota) only while
//	       it is on; writes that may grow an area already over its quota
//	       are refused with QUOTA on persistent engines (in-memory ones
//	       evict instead)
//	audit  one Info line per write, under component=audit
//
// With no hook on, the chain is nil: a command pays one atomic load.

// hookRequest is one command as hooks see it. Hooks get it by value and
// must not keep its slices.
type hookRequest struct {
	area  uint16
	cmd   string // lower-case command name ("multiexec" for a transaction)
	write bool
	key   []byte   // the first key; nil for keyless commands
	args  [][]byte // the command, name first
	peer  net.Addr // the connection it came on (a proxy); may be nil
}

// hook is one request hook.
type hook interface {
	// Before runs before the engine; an error refuses the request and
	// becomes its reply.
	Before(r hookRequest) error
	// After sees the RESP reply (an error reply starts with '-').
	After(r hookRequest, reply []byte)
}

// hookKinds builds the known hooks by name (wire.KnownHooks).
var hookKinds = map[string]func(s *Server) hook{
	"stats": newStatsHook,
	"quota": newQuotaHook,
	"audit": newAuditHook,
}

// hookChain is the hooks switched on, in order. A nil chain has none.
type hookChain struct {
	names []string
	hooks []hook
}

// has reports whether the hook called name is on.
func (hc *hookChain) has(name string) bool {
	return hc != nil && slices.Contains(hc.names, name)
}

// before runs the hooks' Before in order until one refuses; it returns
// how many ran (the refusing one included) and the refusal.
func (hc *hookChain) before(r hookRequest) (int, error) {
	for i, h := range hc.hooks {
		if err := h.Before(r); err != nil {
			return i + 1, err
		}
	}
	return len(hc.hooks), nil
}

// after runs After, in reverse order, for the first ran hooks.
func (hc *hookChain) after(r hookRequest, ran int, reply []byte) {
	for i := ran - 1; i >= 0; i-- {
		hc.hooks[i].After(r, reply)
	}
}

// hooked runs serve inside the chain hc (nil: directly) and appends its
// reply to out.
func (s *Server) hooked(out []byte, hc *hookChain, r hookRequest, serve func([]byte) []byte) []byte {
	if hc == nil {
		return serve(out)
	}
	ran, err := hc.before(r)
	start := len(out)
	if err != nil {
		out = resp.AppendErr(out, err)
	} else {
		out = serve(out)
	}
	hc.after(r, ran, out[start:])
	return out
}

// applyHooks switches the hooks the configserver names on (nil: never
// set, so wire.DefaultHooks) and the rest off. Switching quota on or off
// pushes the areas' quotas to the engine, or takes them away.
func (s *Server) applyHooks(set *[]string) {
	names := wire.DefaultHooks
	if set != nil {
		names = *set
	}
	areaMu.Lock()
	defer areaMu.Unlock()
	cur := s.hooks.Load()
	var curNames []string
	if cur != nil {
		curNames = cur.names
	}
	nc := &hookChain{}
	for _, n := range names {
		mk := hookKinds[n]
		if mk == nil {
			s.log.Warn("unknown hook ignored", "hook", n)
			continue
		}
		if !slices.Contains(nc.names, n) {
			nc.names = append(nc.names, n)
			nc.hooks = append(nc.hooks, mk(s))
		}
	}
	if slices.Equal(nc.names, curNames) {
		return
	}
	if len(nc.hooks) == 0 {
		nc = nil
	}
	s.hooks.Store(nc)
	if cur.has("quota") != nc.has("quota") {
		at := *s.areas.Load()
		s.syncQuotasLocked(&at)
		s.areas.Store(&at)
	}
	var on []string
	if nc != nil {
		on = nc.names
	}
	s.log.Info("hooks applied", "hooks", wire.HookList(on))
}

// syncQuotasLocked pushes to the engine the quotas at's areas should have
// (their QuotaBytes while the quota hook is on, else none) where they
// differ from what was pushed (at.quota), and records them. areaMu is
// held.
func (s *Server) syncQuotasLocked(at *areaTable) {
	on := s.hooks.Load().has("quota")
	applied := map[uint16]int64{}
	for a, c := range at.cfg {
		want := int64(0)
		if on {
			want = c.QuotaBytes
		}
		if at.quota[a] != want {
			s.eng.SetQuota(a, want)
		}
		if want != 0 {
			applied[a] = want
		}
	}
	for a, q := range at.quota {
		if _, ok := at.cfg[a]; !ok && q != 0 {
			s.eng.SetQuota(a, 0)
		}
	}
	at.quota = applied
}

// replyOK reports whether a RESP reply is not an error.
func replyOK(reply []byte) bool { return len(reply) > 0 && reply[0] != '-' }

// replyResult is "ok", or an error reply's prefix ("QUOTA", "ERR" ...).
func replyResult(reply []byte) string {
	if replyOK(reply) {
		return "ok"
	}
	if len(reply) == 0 {
		return "error"
	}
	e := reply[1:]
	if i := bytes.IndexAny(e, " \r"); i >= 0 {
		e = e[:i]
	}
	return string(e)
}

// statsHook counts commands per area, kind and result. The counters of
// an area are looked up once, so counting allocates nothing.
type statsHook struct {
	vec   *prometheus.CounterVec
	areas [route.MaxArea + 1]atomic.Pointer[areaCounters]
}

// areaCounters are one area's counters by [write][error].
type areaCounters [2][2]prometheus.Counter

func newStatsHook(s *Server) hook { return &statsHook{vec: s.m.areaCommands} }

func (h *statsHook) Before(hookRequest) error { return nil }

func (h *statsHook) After(r hookRequest, reply []byte) {
	if int(r.area) >= len(h.areas) {
		return
	}
	c := h.areas[r.area].Load()
	if c == nil {
		c = new(areaCounters)
		a := strconv.Itoa(int(r.area))
		for w, kind := range []string{"read", "write"} {
			for e, res := range []string{"ok", "error"} {
				c[w][e] = h.vec.WithLabelValues(a, kind, res)
			}
		}
		h.areas[r.area].Store(c)
	}
	w, e := 0, 0
	if r.write {
		w = 1
	}
	if !replyOK(reply) {
		e = 1
	}
	c[w][e].Inc()
}

// quotaHook refuses, on persistent engines, writes that may grow an area
// whose stored bytes already exceed its quota. (Its being on is also what
// pushes the quotas to the engine: syncQuotasLocked.)
type quotaHook struct {
	s *Server
	// usage caches each area's stored bytes for usageTTL: the engine's
	// stats are too dear to read on every write.
	usage [route.MaxArea + 1]struct{ bytes, at atomic.Int64 }
}

const usageTTL = 100 * time.Millisecond

func newQuotaHook(s *Server) hook { return &quotaHook{s: s} }

// shrinking are the writes that only remove data: always let through, so
// that an area over its quota can be brought back under it.
var shrinking = map[string]bool{
	"del": true, "unlink": true, "getdel": true, "flushdb": true, "flushall": true,
	"hdel": true, "srem": true, "spop": true, "lpop": true, "rpop": true, "lrem": true, "ltrim": true,
	"zrem": true, "zpopmin": true, "zpopmax": true, "zremrangebyscore": true, "zremrangebyrank": true,
	"zremrangebylex": true, "exhdel": true, "excad": true, "cad": true,
	"tair.delv": true, "tair.pdel": true, "tair.itemdel": true, "tair.itemgetdel": true,
	"tair.delall": true, "tair.invalid": true, "tair.invalidlocal": true,
}

func (h *quotaHook) Before(r hookRequest) error {
	if !r.write || int(r.area) >= len(h.usage) || shrinking[r.cmd] {
		return nil
	}
	q := h.s.areas.Load().cfg[r.area].QuotaBytes
	if q <= 0 || !h.s.eng.Persistent() {
		return nil
	}
	u := &h.usage[r.area]
	now := time.Now().UnixNano()
	if at := u.at.Load(); now-at > int64(usageTTL) && u.at.CompareAndSwap(at, now) {
		u.bytes.Store(h.s.eng.Stats(r.area).Bytes)
	}
	if u.bytes.Load() > q {
		return errs.ErrQuota
	}
	return nil
}

func (h *quotaHook) After(hookRequest, []byte) {}

// auditHook logs every write.
type auditHook struct{ log *slog.Logger }

func newAuditHook(s *Server) hook { return &auditHook{log: s.log.With("component", "audit")} }

func (h *auditHook) Before(hookRequest) error { return nil }

// maxAuditKey bounds the key bytes an audit line shows.
const maxAuditKey = 64

func (h *auditHook) After(r hookRequest, reply []byte) {
	if !r.write {
		return
	}
	key := r.key
	if len(key) > maxAuditKey {
		key = key[:maxAuditKey]
	}
	attrs := []any{"area", r.area, "cmd", r.cmd, "key", string(key), "result", replyResult(reply)}
	if r.peer != nil {
		attrs = append(attrs, "peer", r.peer.String())
	}
	h.log.Info("audit", attrs...)
}

package configserver

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/tairkv/tair/internal/wire"
)

// proxyTTL is how long a proxy counts as live after its last beat
// (proxies beat every second).
const proxyTTL = 3 * time.Second

// proxySet is the live proxies, as the leader hears them: kept in memory
// only (a new leader knows them all again after one beat interval), so
// that proxies can name each other in CLUSTER SLOTS/NODES without a
// --peers list.
type proxySet struct {
	mu   sync.Mutex
	seen map[string]time.Time
}

// beat records addr and returns the live proxies, sorted.
func (p *proxySet) beat(addr string, now time.Time) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.seen == nil {
		p.seen = map[string]time.Time{}
	}
	p.seen[addr] = now
	out := make([]string, 0, len(p.seen))
	for a, t := range p.seen {
		if now.Sub(t) > proxyTTL {
			delete(p.seen, a)
			continue
		}
		out = append(out, a)
	}
	sort.Strings(out)
	return out
}

// live returns the proxies heard from within proxyTTL, sorted.
func (p *proxySet) live(now time.Time) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]string, 0, len(p.seen))
	for a, t := range p.seen {
		if now.Sub(t) <= proxyTTL {
			out = append(out, a)
		}
	}
	sort.Strings(out)
	return out
}

// handleProxies serves the live proxies (wire.ProxyList) for the console.
func (s *Server) handleProxies(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, wire.ProxyList{Proxies: s.proxies.live(time.Now())})
}

func (s *Server) handleProxyBeat(w http.ResponseWriter, r *http.Request) {
	var b wire.ProxyBeat
	if err := json.NewDecoder(r.Body).Decode(&b); err != nil || b.Addr == "" {
		http.Error(w, fmt.Sprintf("bad proxy beat: %v", err), http.StatusBadRequest)
		return
	}
	now := time.Now()
	s.hotKeys.report(b.Addr, b.HotKeys, now)
	writeJSON(w, http.StatusOK, wire.ProxyList{Proxies: s.proxies.beat(b.Addr, now)})
}

package configserver

import (
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/tairkv/tair/internal/wire"
)

// hotKeySet keeps the hot keys each proxy reported in its last beat, in
// memory only (like proxySet: a new leader hears them all again within a
// beat), and merges them cluster-wide.
type hotKeySet struct {
	mu   sync.Mutex
	last map[string]hotReport // proxy → its last report
}

type hotReport struct {
	at   time.Time
	keys []wire.HotKey
}

// report records proxy's hot keys at now (an empty list too: it has none
// now).
func (h *hotKeySet) report(proxy string, keys []wire.HotKey, now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.last == nil {
		h.last = map[string]hotReport{}
	}
	h.last[proxy] = hotReport{at: now, keys: keys}
}

// merged sums each key's rate over the proxies heard from within
// proxyTTL, hottest first.
func (h *hotKeySet) merged(now time.Time) wire.HotKeysStatus {
	h.mu.Lock()
	defer h.mu.Unlock()
	type id struct {
		area uint16
		key  string
	}
	byKey := map[id]*wire.ClusterHotKey{}
	st := wire.HotKeysStatus{Keys: []wire.ClusterHotKey{}, Proxies: []string{}}
	for p, r := range h.last {
		if now.Sub(r.at) > proxyTTL {
			delete(h.last, p)
			continue
		}
		st.Proxies = append(st.Proxies, p)
		for _, k := range r.keys {
			c := byKey[id{k.Area, k.Key}]
			if c == nil {
				c = &wire.ClusterHotKey{Area: k.Area, Key: k.Key, Proxies: map[string]float64{}}
				byKey[id{k.Area, k.Key}] = c
			}
			c.Rate += k.Rate
			c.Proxies[p] += k.Rate
		}
	}
	for _, c := range byKey {
		st.Keys = append(st.Keys, *c)
	}
	sort.Slice(st.Keys, func(i, j int) bool {
		a, b := st.Keys[i], st.Keys[j]
		if a.Rate != b.Rate {
			return a.Rate > b.Rate
		}
		if a.Area != b.Area {
			return a.Area < b.Area
		}
		return a.Key < b.Key
	})
	sort.Strings(st.Proxies)
	return st
}

// handleHotKeys serves the cluster's hot keys (wire.HotKeysStatus).
func (s *Server) handleHotKeys(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, s.hotKeys.merged(time.Now()))
}

package configserver

import (
	"encoding/json"
	"sync"

	"github.com/tairkv/tair/internal/route"
)

// recentTablesLen is how many of the newest tables a configserver keeps
// to answer a fetcher that holds one of them with a delta: a fetcher
// further behind (one that was away) gets the whole table.
const recentTablesLen = 64

// recentTables keeps the tables last published and the deltas to the
// newest one, each made and encoded once for every fetcher at the same
// version (by poll or heartbeat).
type recentTables struct {
	mu     sync.Mutex
	tables []*route.Table // oldest first, newest last
	deltas map[route.Version]*encodedDelta
}

// encodedDelta is a delta and its JSON.
type encodedDelta struct {
	d    *route.Delta
	json []byte
}

// add records t, the newest table (publish's lock held).
func (h *recentTables) add(t *route.Table) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.tables) == recentTablesLen {
		h.tables = append(h.tables[:0], h.tables[1:]...)
	}
	h.tables = append(h.tables, t)
	h.deltas = nil
}

// find is the kept table of version v, or nil (h.mu held).
func (h *recentTables) find(v route.Version) *route.Table {
	for i := len(h.tables) - 1; i >= 0; i-- {
		if h.tables[i].Version == v {
			return h.tables[i]
		}
	}
	return nil
}

// delta is the newest table cur as changes since version from, or nil
// when from is not kept, cur cannot be given so, or cur is no longer the
// newest (the caller sends it whole).
func (h *recentTables) delta(from route.Version, cur *route.Table) *encodedDelta {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.tables) == 0 || h.tables[len(h.tables)-1] != cur {
		return nil
	}
	if e, ok := h.deltas[from]; ok {
		return e
	}
	var e *encodedDelta
	if d := route.Diff(h.find(from), cur); d != nil {
		data, _ := json.Marshal(d) // a Delta always encodes
		e = &encodedDelta{d: d, json: data}
	}
	if h.deltas == nil {
		h.deltas = map[route.Version]*encodedDelta{}
	}
	h.deltas[from] = e
	return e
}

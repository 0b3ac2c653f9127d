package proxy

import (
	"context"
	"errors"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tairkv/tair/internal/route"
	"github.com/tairkv/tair/internal/wire"
)

// routing is one table with its nodes resolved: immutable once
// published, read without locks.
type routing struct {
	t      *route.Table
	copies [][]*node // per bucket: master first (nil when lost), then slaves
	nodes  []*node   // every node of the table, sorted by address
	// masterIdx[b] is the index in nodes of bucket b's master, -1 if none.
	masterIdx []int32
}

func (rt *routing) master(b route.BucketID) *node {
	if int(b) >= len(rt.copies) || len(rt.copies[b]) == 0 {
		return nil
	}
	return rt.copies[b][0]
}

// pickNode is the node a request for bucket b goes to: the master, or
// with slave reads a copy chosen by the client's id.
func pickNode(rt *routing, b route.BucketID, slaveRead bool, id int64) (*node, bool) {
	copies := rt.copies[b%route.BucketID(len(rt.copies))]
	if len(copies) == 0 {
		return nil, false
	}
	if slaveRead && len(copies) > 1 {
		i := id % int64(len(copies))
		if c := copies[i]; c != nil {
			return c, i > 0
		}
	}
	return copies[0], false
}

// router holds the current routing and keeps it fresh from the
// configservers. When they are down it keeps serving the cached table.
type router struct {
	srv     *Server
	cur     atomic.Pointer[routing]
	client  *wire.Client
	changed atomic.Pointer[chan struct{}] // closed when the table changes
	kick    chan struct{}

	nodesMu sync.Mutex
	nodes   map[string]*node

	fetchMu   sync.Mutex // one forced fetch at a time
	lastFetch time.Time
}

func newRouter(s *Server) *router {
	r := &router{srv: s, nodes: map[string]*node{}, kick: make(chan struct{}, 1)}
	if len(s.cfg.ConfigServers) > 0 {
		r.client = wire.NewClient(s.cfg.ConfigServers...)
	}
	ch := make(chan struct{})
	r.changed.Store(&ch)
	return r
}

func (r *router) load() *routing { return r.cur.Load() }

func (r *router) version() route.Version {
	if rt := r.cur.Load(); rt != nil {
		return rt.t.Version
	}
	return 0
}

// node returns the node of addr, creating it.
func (r *router) node(addr string) *node {
	r.nodesMu.Lock()
	defer r.nodesMu.Unlock()
	n := r.nodes[addr]
	if n == nil {
		n = &node{addr: addr, srv: r.srv, conns: make([]atomic.Pointer[backendConn], r.srv.cfg.BackendConns)}
		r.nodes[addr] = n
	}
	return n
}

// allNodes returns every node ever used.
func (r *router) allNodes() []*node {
	r.nodesMu.Lock()
	defer r.nodesMu.Unlock()
	out := make([]*node, 0, len(r.nodes))
	for _, n := range r.nodes {
		out = append(out, n)
	}
	return out
}

// apply publishes t. force publishes it even when it is not newer (a
// test's SetTable, or the configserver's answer to a forced fetch).
func (r *router) apply(t *route.Table, force bool) bool {
	if t == nil || t.Validate() != nil {
		return false
	}
	if old := r.cur.Load(); old != nil && !force && t.Version <= old.t.Version {
		return false
	}
	rt := &routing{t: t, copies: make([][]*node, len(t.Serving))}
	for b, row := range t.Serving {
		cp := make([]*node, 0, len(row))
		for i, a := range row {
			switch {
			case a != "" && i > 0 && t.IsBehind(row[0], a):
				// A slave behind its master may lack acknowledged writes:
				// no reads from it.
			case a != "":
				cp = append(cp, r.node(a))
			case i == 0:
				cp = append(cp, nil)
			}
		}
		rt.copies[b] = cp
	}
	idx := map[string]int32{}
	for i, a := range t.Nodes() {
		rt.nodes = append(rt.nodes, r.node(a))
		idx[a] = int32(i)
	}
	rt.masterIdx = make([]int32, len(t.Serving))
	for b := range rt.masterIdx {
		rt.masterIdx[b] = -1
		if m := t.Master(route.BucketID(b)); m != "" {
			rt.masterIdx[b] = idx[m]
		}
	}
	old := r.cur.Swap(rt)
	r.srv.hotTableChanged(old, rt) // hotpush.go
	ch := make(chan struct{})
	if prev := r.changed.Swap(&ch); prev != nil {
		close(*prev)
	}
	r.srv.m.tableVersion.Set(float64(t.Version))
	if old == nil || old.t.Version != t.Version {
		r.srv.log.Info("table applied", "table_version", t.Version, "buckets", t.Buckets, "nodes", len(rt.nodes))
	}
	return true
}

// waitChange returns a channel closed at the next table change.
func (r *router) waitChange() <-chan struct{} { return *r.changed.Load() }

// refresh asks for the configserver's current table now (NOTMASTER, lost
// connections). Concurrent callers share one fetch; fetches are at most
// every 20 ms.
func (r *router) refresh(ctx context.Context) {
	if r.client == nil {
		return
	}
	select {
	case r.kick <- struct{}{}:
	default:
	}
	r.fetchMu.Lock()
	defer r.fetchMu.Unlock()
	if time.Since(r.lastFetch) < 20*time.Millisecond {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	t, err := r.client.Table(ctx, 0, 0)
	r.lastFetch = time.Now()
	if err != nil {
		return
	}
	// A newer table, or one of the same version that says otherwise (a
	// table set by hand): re-applying an identical one would wake every
	// retry waiting for a change at once.
	if cur := r.cur.Load(); cur == nil || t.Version > cur.t.Version ||
		(t.Version == cur.t.Version && !reflect.DeepEqual(t, cur.t)) {
		r.apply(t, true)
	}
}

// first waits for a first table, retrying, up to timeout.
func (r *router) first(ctx context.Context, timeout time.Duration) error {
	if r.client == nil || r.cur.Load() != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var lastErr error
	for {
		t, err := r.client.Table(ctx, 0, 0)
		if err == nil && r.apply(t, false) {
			return nil
		}
		if err == nil {
			err = errors.New("invalid table")
		}
		lastErr = err
		select {
		case <-ctx.Done():
			return errors.Join(errors.New("proxy: no table from the configservers"), lastErr)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// refreshLoop long-polls the configservers for newer tables, each as the
// changes since the one the proxy holds where the configserver can.
func (r *router) refreshLoop(ctx context.Context) {
	defer r.srv.wg.Done()
	backoff := 100 * time.Millisecond
	whole := false // the last reply could not be used: fetch the whole table
	for ctx.Err() == nil {
		var have *route.Table
		if cur := r.cur.Load(); cur != nil && !whole {
			have = cur.t
		}
		reply, err := r.client.TableSince(ctx, have, r.srv.cfg.TablePoll)
		var t *route.Table
		if err == nil {
			t, err = reply.Resolve(have)
		}
		whole = err != nil && !errors.Is(err, wire.ErrNotModified)
		switch {
		case err == nil:
			if t != nil {
				r.apply(t, false)
			}
			backoff = 100 * time.Millisecond
			continue
		case errors.Is(err, wire.ErrNotModified):
			continue
		}
		if ctx.Err() != nil {
			return
		}
		r.srv.m.tableFetchErrors.Inc()
		select {
		case <-ctx.Done():
			return
		case <-r.kick:
		case <-time.After(backoff):
		}
		if backoff < 2*time.Second {
			backoff *= 2
		}
	}
}

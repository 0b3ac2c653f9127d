package configserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync/atomic"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tairkv/tair/internal/route"
	"github.com/tairkv/tair/internal/wire"
)

// errFenced reports that a leader write found the leader key gone or
// re-created: another configserver leads now, and this one must stop.
var errFenced = errors.New("configserver: not leader any more (fenced write failed)")

// meta is the cluster state kept beside the table: what the configserver
// must remember across restarts and leader changes that the table does
// not say.
type meta struct {
	Nodes  map[string]*nodeMeta       `json:"nodes"`
	Areas  map[uint16]wire.AreaConfig `json:"areas,omitempty"`
	Hooks  *[]string                  `json:"hooks,omitempty"` // dataservers' hooks; nil until first set
	Paused bool                       `json:"paused,omitempty"`
	// MigrateRate caps each move's copy rate on every dataserver (bytes a
	// second, 0: none); nil until set, and each node's own flag applies.
	MigrateRate *int64 `json:"migrate_rate,omitempty"`
	// Completed counts moves finished over the cluster's life; PlanDone
	// those finished since the destination was last rebuilt (what
	// `tair ctl` shows as progress).
	Completed int `json:"completed"`
	PlanDone  int `json:"plan_done"`
}

// nodeMeta is one known dataserver.
type nodeMeta struct {
	Zone        string `json:"zone,omitempty"`
	Rack        string `json:"rack,omitempty"`
	Incarnation int64  `json:"incarnation"`
	Persistent  bool   `json:"persistent,omitempty"`
	// Draining nodes get no copies; their copies move away.
	Draining bool `json:"draining,omitempty"`
	// Removed nodes are out of the cluster until node-add.
	Removed bool `json:"removed,omitempty"`
}

func newMeta() *meta { return &meta{Nodes: map[string]*nodeMeta{}} }

func (m *meta) clone() *meta {
	c := *m
	c.Nodes = make(map[string]*nodeMeta, len(m.Nodes))
	for k, v := range m.Nodes {
		nv := *v
		c.Nodes[k] = &nv
	}
	c.Areas = maps.Clone(m.Areas)
	if m.Hooks != nil {
		h := slices.Clone(*m.Hooks)
		c.Hooks = &h
	}
	if m.MigrateRate != nil {
		r := *m.MigrateRate
		c.MigrateRate = &r
	}
	return &c
}

// fence identifies this configserver's leadership: the election key and
// the revision that created it (pd's LeaderTxn condition).
type fence struct {
	key string
	rev int64
}

// store reads and writes the cluster state in etcd under prefix.
type store struct {
	cli    *clientv3.Client
	prefix string
	// saved is the table this configserver last wrote, as stored: its
	// own watch skips decoding it again, since the leader publishes what
	// it saves (a decode per version was a fifth of the leader's CPU
	// during a rebalance), and GET /v1/table serves these bytes.
	saved atomic.Pointer[tableBytes]
}

// tableBytes is a published table with its JSON encoding (published
// tables are never modified, so the pointer names the version).
type tableBytes struct {
	t    *route.Table
	data []byte
}

func (s *store) tableKey() string    { return s.prefix + "/table" }
func (s *store) metaKey() string     { return s.prefix + "/meta" }
func (s *store) electionKey() string { return s.prefix + "/election" }
func (s *store) termKey() string     { return s.prefix + "/term" }

// beginTerm opens a leadership term in one transaction under f's fence:
// it reads the table and the meta, and swaps the term record (who leads,
// since which election revision) for term, returning the record it
// replaced. Every leader writes it before it takes a heartbeat, so a
// configserver that finds its own previous record knows nobody led in
// between (and that no other configserver took the dataservers'
// heartbeats meanwhile).
func (s *store) beginTerm(ctx context.Context, f fence, term string) (*route.Table, *meta, string, error) {
	resp, err := s.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(f.key), "=", f.rev)).
		Then(clientv3.OpGet(s.tableKey()), clientv3.OpGet(s.metaKey()),
			clientv3.OpGet(s.termKey()), clientv3.OpPut(s.termKey(), term)).
		Commit()
	if err != nil {
		return nil, nil, "", fmt.Errorf("configserver: begin term: %w", err)
	}
	if !resp.Succeeded {
		return nil, nil, "", errFenced
	}
	t, m, err := decodeState(resp)
	var prev string
	if kvs := resp.Responses[2].GetResponseRange().Kvs; len(kvs) > 0 {
		prev = string(kvs[0].Value)
	}
	return t, m, prev, err
}

// load returns the stored table (nil before the first one), the meta
// (empty when none) and the revision they were read at.
func (s *store) load(ctx context.Context) (*route.Table, *meta, int64, error) {
	resp, err := s.cli.Txn(ctx).Then(
		clientv3.OpGet(s.tableKey()),
		clientv3.OpGet(s.metaKey()),
	).Commit()
	if err != nil {
		return nil, nil, 0, fmt.Errorf("configserver: load state: %w", err)
	}
	t, m, err := decodeState(resp)
	if err != nil {
		return nil, nil, 0, err
	}
	return t, m, resp.Header.Revision, nil
}

// decodeState decodes a transaction's first two answers: the table's get
// and the meta's.
func decodeState(resp *clientv3.TxnResponse) (*route.Table, *meta, error) {
	var t *route.Table
	if kvs := resp.Responses[0].GetResponseRange().Kvs; len(kvs) > 0 {
		var err error
		if t, err = decodeTable(kvs[0].Value); err != nil {
			return nil, nil, err
		}
	}
	m := newMeta()
	if kvs := resp.Responses[1].GetResponseRange().Kvs; len(kvs) > 0 {
		if err := json.Unmarshal(kvs[0].Value, m); err != nil {
			return nil, nil, fmt.Errorf("configserver: decode meta: %w", err)
		}
		if m.Nodes == nil {
			m.Nodes = map[string]*nodeMeta{}
		}
	}
	return t, m, nil
}

func decodeTable(data []byte) (*route.Table, error) {
	var t route.Table
	if err := json.Unmarshal(data, &t); err != nil {
		return nil, fmt.Errorf("configserver: decode table: %w", err)
	}
	if err := t.Validate(); err != nil {
		return nil, fmt.Errorf("configserver: stored table: %w", err)
	}
	return &t, nil
}

// save writes the table and/or the meta (nil: unchanged) in one
// transaction that only applies while f's leader key still exists with the
// revision we created it at. A leader that lost its key (lease expired,
// resigned, a new leader elected) gets errFenced and changes nothing.
func (s *store) save(ctx context.Context, f fence, t *route.Table, m *meta) error {
	var ops []clientv3.Op
	var table *tableBytes
	if t != nil {
		data, err := json.Marshal(t)
		if err != nil {
			return err
		}
		table = &tableBytes{t: t, data: data}
		ops = append(ops, clientv3.OpPut(s.tableKey(), string(data)))
	}
	if m != nil {
		data, err := json.Marshal(m)
		if err != nil {
			return err
		}
		ops = append(ops, clientv3.OpPut(s.metaKey(), string(data)))
	}
	if len(ops) == 0 {
		return nil
	}
	if table != nil {
		// Before the write: its watch event may come before the reply.
		// A write that failed yet applied is read back by the leader
		// (reloadState), and a fenced one never appears.
		s.saved.Store(table)
	}
	resp, err := s.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(f.key), "=", f.rev)).
		Then(ops...).
		Commit()
	if err != nil {
		return fmt.Errorf("configserver: save state: %w", err)
	}
	if !resp.Succeeded {
		return errFenced
	}
	return nil
}

// ownWrite reports whether data is the table this configserver last
// saved.
func (s *store) ownWrite(data []byte) bool {
	p := s.saved.Load()
	return p != nil && bytes.Equal(p.data, data)
}

// savedJSON returns t's encoding when t is the table last saved here.
func (s *store) savedJSON(t *route.Table) []byte {
	if p := s.saved.Load(); p != nil && p.t == t {
		return p.data
	}
	return nil
}

func clientv3CountOnly() []clientv3.OpOption { return []clientv3.OpOption{clientv3.WithCountOnly()} }

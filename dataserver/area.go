package dataserver

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/tairkv/tair/engines"
	"github.com/tairkv/tair/internal/errs"
	"github.com/tairkv/tair/internal/wire"
)

// areaTable is the tenant configuration the configserver sends in every
// heartbeat reply, with this node's flow counters.
type areaTable struct {
	cfg  map[uint16]wire.AreaConfig
	flow map[uint16]*flow
	// quota is what was pushed to the engine (SetQuota) per area: the
	// configured quotas while the quota hook is on, none otherwise.
	quota map[uint16]int64
}

// flow counts an area's requests and bytes in the current second.
type flow struct {
	sec   atomic.Int64
	ops   atomic.Int64
	bytes atomic.Int64
}

var areaMu sync.Mutex

// applyAreas installs the areas' configuration: quotas go to the engine
// while the quota hook is on (hooks.go); read-only and flow limits are
// checked per request.
func (s *Server) applyAreas(areas map[uint16]wire.AreaConfig) {
	areaMu.Lock()
	defer areaMu.Unlock()
	old := s.areas.Load()
	same := len(old.cfg) == len(areas)
	if same {
		for a, c := range areas {
			if o, ok := old.cfg[a]; !ok || o != c {
				same = false
				break
			}
		}
	}
	if same {
		return
	}
	nt := &areaTable{cfg: areas, flow: map[uint16]*flow{}, quota: old.quota}
	for a := range areas {
		if f := old.flow[a]; f != nil {
			nt.flow[a] = f
		} else {
			nt.flow[a] = &flow{}
		}
	}
	s.syncQuotasLocked(nt)
	s.areas.Store(nt)
	s.log.Info("area configuration applied", "areas", len(areas))
}

// checkArea enforces the area's read-only switch and flow limits.
func (s *Server) checkArea(area uint16, write bool, args [][]byte) error {
	at := s.areas.Load()
	c, ok := at.cfg[area]
	if !ok {
		return nil
	}
	if write && c.ReadOnly {
		return errs.ErrReadOnly
	}
	if c.OpsLimit <= 0 && c.BytesLimit <= 0 {
		return nil
	}
	f := at.flow[area]
	now := time.Now().Unix()
	if sec := f.sec.Load(); sec != now && f.sec.CompareAndSwap(sec, now) {
		f.ops.Store(0)
		f.bytes.Store(0)
	}
	n := int64(0)
	for _, a := range args {
		n += int64(len(a))
	}
	ops := f.ops.Add(1)
	by := f.bytes.Add(n)
	if (c.OpsLimit > 0 && ops > c.OpsLimit) || (c.BytesLimit > 0 && by > c.BytesLimit) {
		s.m.flowLimited.Inc()
		return errs.ErrFlowLimit
	}
	return nil
}

// typeName is the Redis TYPE name of a record.
func typeName(r *engines.Record) string {
	if r.Prefix != nil {
		// A pkey with its skeys: on persistent engines a hash is stored
		// so (TYPE says hash, exec's lookupAny); its record is no string.
		return "hash"
	}
	switch r.Entry.Type {
	case engines.TypeItems:
		return "string"
	case engines.TypeExHash:
		return "exhash"
	}
	return r.Entry.Type.String()
}

package dataserver

import (
	"strconv"
	"strings"
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
}

// flow counts an area's requests and bytes in the current second.
type flow struct {
	sec   atomic.Int64
	ops   atomic.Int64
	bytes atomic.Int64
}

var areaMu sync.Mutex

// applyAreas installs the areas' configuration: quotas go to the engine;
// read-only and flow limits are checked per request.
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
	nt := &areaTable{cfg: areas, flow: map[uint16]*flow{}}
	for a, c := range areas {
		if f := old.flow[a]; f != nil {
			nt.flow[a] = f
		} else {
			nt.flow[a] = &flow{}
		}
		if old.cfg[a].QuotaBytes != c.QuotaBytes {
			s.eng.SetQuota(a, c.QuotaBytes)
		}
	}
	for a, c := range old.cfg {
		if _, ok := areas[a]; !ok && c.QuotaBytes != 0 {
			s.eng.SetQuota(a, 0)
		}
	}
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

// # Hooks
//
// Hooks see every served command after it ran; the configserver's
// heartbeat reply names the ones switched on (wire.HeartbeatReply.Hooks,
// set with `tair ctl` "hooks-set"):
//
//	audit   log every successful write (area, command, argument count)
//	stats   count commands per area and kind (tair_dataserver_area_commands_total)
//
// Quota is not a hook: areas' byte quotas are always applied (engine
// SetQuota, from the heartbeat's AreaConfig).

// hook is one request hook.
type hook func(s *Server, env envelope, args [][]byte, write bool)

var hooks = map[string]hook{
	"audit": func(s *Server, env envelope, args [][]byte, write bool) {
		if write {
			s.log.Info("audit", "area", env.area, "cmd", strings.ToLower(string(args[0])), "args", len(args)-1)
		}
	},
	"stats": func(s *Server, env envelope, args [][]byte, write bool) {
		kind := "read"
		if write {
			kind = "write"
		}
		s.m.areaCommands.WithLabelValues(strconv.Itoa(int(env.area)), kind).Inc()
	},
}

// hookAfter runs the hooks switched on, in the order the configserver
// named them.
func (s *Server) hookAfter(env envelope, args [][]byte, write bool) {
	hp := s.hooks.Load()
	if hp == nil || len(*hp) == 0 {
		return
	}
	for _, name := range *hp {
		if h := hooks[name]; h != nil {
			h(s, env, args, write)
		}
	}
}

// typeName is the Redis TYPE name of a record.
func typeName(r *engines.Record) string {
	switch r.Entry.Type {
	case engines.TypeItems:
		return "string"
	case engines.TypeExHash:
		return "exhash"
	}
	return r.Entry.Type.String()
}

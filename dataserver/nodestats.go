package dataserver

import (
	"sort"
	"strconv"
	"time"

	"github.com/tairkv/tair/engines"
	"github.com/tairkv/tair/internal/route"
	"github.com/tairkv/tair/resp"
)

// nodeStats answers NODESTATS [KEYSPACE], the figures a proxy's INFO sums
// over the dataservers: a flat array of name, integer pairs.
//
//	keyspace_hits, keyspace_misses  reads that found / missed a key (engine stats)
//	expired_keys, evicted_keys      keys reclaimed on expiry / evicted
//	used_memory, maxmemory          the engine's accounted bytes and --memory-limit
//
// With KEYSPACE, for each area holding keys in the buckets this node
// masters (so that summing over the nodes counts each key once):
// db<area>_keys, db<area>_expires (those with a TTL) and db<area>_ttl_ms
// (their remaining TTLs summed, for avg_ttl). Hidden keys are left out,
// as DBSIZE leaves them out.
func (s *Server) nodeStats(out []byte, args [][]byte) []byte {
	keyspace := false
	switch {
	case len(args) == 2 && equalFold(args[1], "KEYSPACE"):
		keyspace = true
	case len(args) != 1:
		return resp.AppendError(out, "ERR syntax error")
	}
	var hits, misses, evicted, used, expired int64
	for _, st := range s.eng.AllStats() {
		hits += st.Hits
		misses += st.Misses
		evicted += st.Evictions
		used += st.Bytes
	}
	if ec, ok := s.eng.(interface{ ExpiredKeys() int64 }); ok {
		expired = ec.ExpiredKeys()
	}
	type kv struct {
		k string
		v int64
	}
	fields := []kv{{"keyspace_hits", hits}, {"keyspace_misses", misses}, {"expired_keys", expired},
		{"evicted_keys", evicted}, {"used_memory", used}, {"maxmemory", s.cfg.MemoryLimit}}
	if keyspace {
		type areaKeys struct{ keys, expires, ttl int64 }
		areas := map[uint16]*areaKeys{}
		now := time.Now().UnixMilli()
		if t := s.Table(); t != nil {
			for b := range route.BucketID(t.Buckets) {
				if !t.IsMaster(b, s.addr) {
					continue
				}
				_ = s.eng.ForEach(uint32(b), func(r *engines.Record) error {
					if r.Entry.Hidden {
						return nil
					}
					a := areas[r.Area]
					if a == nil {
						a = &areaKeys{}
						areas[r.Area] = a
					}
					a.keys++
					if at := r.Entry.ExpireAt; at != 0 {
						a.expires++
						if at > now {
							a.ttl += at - now
						}
					}
					return nil
				})
			}
		}
		ids := make([]int, 0, len(areas))
		for a := range areas {
			ids = append(ids, int(a))
		}
		sort.Ints(ids)
		for _, id := range ids {
			a, p := areas[uint16(id)], "db"+strconv.Itoa(id)
			fields = append(fields, kv{p + "_keys", a.keys}, kv{p + "_expires", a.expires}, kv{p + "_ttl_ms", a.ttl})
		}
	}
	out = resp.AppendArray(out, 2*len(fields))
	for _, f := range fields {
		out = resp.AppendBulkString(out, f.k)
		out = resp.AppendInt(out, f.v)
	}
	return out
}

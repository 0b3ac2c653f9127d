package dataserver

import (
	"sort"
	"strconv"

	"github.com/tairkv/tair/engines"
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
// (their remaining TTLs summed, for avg_ttl: exact, where Redis samples).
// Hidden keys are left out, as DBSIZE leaves them out. All three come from
// the engine's counters (engines.KeyCounts), without visiting a record.
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
		areas := map[uint16]engines.KeyCounts{}
		s.eng.CountKeys(s.masterBuckets(), func(area uint16, c engines.KeyCounts) {
			if c.Keys > 0 { // an area of hidden keys only is not listed
				areas[area] = c
			}
		})
		ids := make([]int, 0, len(areas))
		for a := range areas {
			ids = append(ids, int(a))
		}
		sort.Ints(ids)
		for _, id := range ids {
			a, p := areas[uint16(id)], "db"+strconv.Itoa(id)
			fields = append(fields, kv{p + "_keys", a.Keys}, kv{p + "_expires", a.Expires}, kv{p + "_ttl_ms", a.TTL})
		}
	}
	out = resp.AppendArray(out, 2*len(fields))
	for _, f := range fields {
		out = resp.AppendBulkString(out, f.k)
		out = resp.AppendInt(out, f.v)
	}
	return out
}

package proxy

import (
	"bytes"
	"math"
	"sort"
	"strconv"

	"github.com/tairkv/tair/internal/hll"
	"github.com/tairkv/tair/internal/redisnum"
	"github.com/tairkv/tair/internal/route"
	"github.com/tairkv/tair/internal/zsetop"
	"github.com/tairkv/tair/resp"
)

// Gathered reads: the multi-key reads that combine whole values (SUNION,
// SINTER, SDIFF, SINTERCARD, ZUNION, ZINTER, ZDIFF, ZINTERCARD, and
// PFCOUNT of several HyperLogLogs, read with GET) whose keys span
// buckets. Each distinct key's value is read from its bucket's
// master (SMEMBERS, or ZRANGE 0 -1 WITHSCORES with SMEMBERS for a key
// that turns out to be a set), always in RESP2, and the operation runs
// here with the dataserver's (Redis's) rules: the order of the type
// checks and the option errors, WEIGHTS, AGGREGATE, a NaN product or sum
// taken as 0, the reply in score then member order. Keys of one bucket
// never come here: the dataserver runs those in one command.
//
// Not atomic: each key is read at its own moment. The *STORE forms are
// writes and stay CROSSSLOT across buckets.

// gatherOp is a gathered command's operation.
type gatherOp uint8

const (
	gUnion gatherOp = iota
	gInter
	gDiff
)

type gatherSpec struct {
	op    gatherOp
	hll   bool // PFCOUNT: the union's cardinality of HyperLogLogs (GET)
	zset  bool // sorted-set sources (a set counts, scores 1)
	card  bool // *INTERCARD: the count, with LIMIT
	first int  // the first key's index
}

var gatherSpecs = map[string]gatherSpec{
	"sunion":     {op: gUnion, first: 1},
	"sinter":     {op: gInter, first: 1},
	"sdiff":      {op: gDiff, first: 1},
	"sintercard": {op: gInter, card: true, first: 2},
	"zunion":     {op: gUnion, zset: true, first: 2},
	"zinter":     {op: gInter, zset: true, first: 2},
	"zdiff":      {op: gDiff, zset: true, first: 2},
	"zintercard": {op: gInter, zset: true, card: true, first: 2},
	"pfcount":    {op: gUnion, hll: true, first: 1},
}

const mergeGather mergeKind = 100

const wrongTypeText = "WRONGTYPE Operation against a key holding the wrong kind of value"

// gather starts a gathered read of r, whose keys (their indexes) span
// buckets, and reports whether r is one; finish merges it.
func (ss *session) gather(r *request, keys []int, q uint32) bool {
	if r.spec == nil {
		return false
	}
	g, ok := gatherSpecs[r.spec.Name]
	if !ok {
		return false
	}
	if g.first == 2 {
		// The keys were found by a numkeys Atoi took ("+2", "02"),
		// which Redis's string2ll does not.
		if _, ok := redisnum.ParseInt(r.args[1]); !ok {
			if g.zset {
				r.setError("ERR value is not an integer or out of range")
			} else {
				r.setError("ERR numkeys should be greater than 0")
			}
			return true
		}
	}
	r.merge = mergeGather
	seen := make(map[string]struct{}, len(keys))
	for _, k := range keys {
		key := r.args[k]
		if _, dup := seen[string(key)]; dup {
			continue
		}
		seen[string(key)] = struct{}{}
		sub := ss.newReq()
		sub.bucket = route.BucketOf(key, q)
		sub.group = uint32(sub.bucket)
		sub.area, sub.proto = r.area, 2
		sub.start = r.start
		switch {
		case g.hll:
			sub.own = append(sub.own[:0], []byte("GET"), key)
		case g.zset:
			sub.own = append(sub.own[:0], []byte("ZRANGE"), key, []byte("0"), []byte("-1"), []byte("WITHSCORES"))
		default:
			sub.own = append(sub.own[:0], []byte("SMEMBERS"), key)
		}
		sub.args = sub.own
		r.subs = append(r.subs, sub)
	}
	for _, sub := range r.subs {
		ss.send(sub)
	}
	return true
}

// gatherSource is one key's value: its members and, for sorted sets,
// their scores.
type gatherSource struct {
	members []string
	scores  []float64
	found   bool
}

// mergeGathered computes r's reply from its parts' values.
func (ss *session) mergeGathered(r *request) {
	g := gatherSpecs[r.spec.Name]
	if g.hll {
		ss.mergePFCount(r)
		return
	}
	if g.zset {
		// A key that was not a sorted set may be a set: read it so.
		var again []*request
		for _, sub := range r.subs {
			if sub.err == nil && isWrongType(sub.reply) {
				sub.own = append(sub.own[:0], []byte("SMEMBERS"), sub.own[1])
				sub.args = sub.own
				ss.send(sub)
				again = append(again, sub)
			}
		}
		for _, sub := range again {
			ss.finish(sub)
		}
	}
	keys := r.spec.AppendKeyIndexes(nil, r.args)
	byKey := subsByKey(r)
	out := r.reply[:0]
	fail := func(msg string) { r.reply = resp.AppendError(out, msg) }

	// SINTERCARD parses LIMIT before it reads the keys.
	var limit int64
	if g.card && !g.zset {
		var ok bool
		if limit, ok = gatherLimit(r, keys, fail); !ok {
			return
		}
	}
	srcs := make([]gatherSource, len(keys))
	for i, k := range keys {
		sub, ok := ss.partReply(r, byKey, k)
		if !ok {
			return
		}
		src, ok := parseSource(sub.reply, sub.args[0][0] == 'Z')
		if !ok {
			fail("ERR bad reply from dataserver")
			return
		}
		srcs[i] = src
	}
	if !g.zset {
		res := setCombine(srcs, g.op, int(min(limit, math.MaxInt32)))
		if g.card {
			r.reply = resp.AppendInt(out, int64(len(res)))
			return
		}
		out = resp.AppendSet(out, len(res), r.proto)
		for _, m := range res {
			out = resp.AppendBulkString(out, m)
		}
		r.reply = out
		return
	}
	// The sorted-set commands read the sources (WRONGTYPE) before they
	// parse the options.
	n := len(keys)
	if g.card {
		limit, ok := gatherLimit(r, keys, fail)
		if !ok {
			return
		}
		cnt := int64(len(zCombine(srcs, make([]float64, n), 0, gInter)))
		if limit > 0 && cnt > limit {
			cnt = limit
		}
		r.reply = resp.AppendInt(out, cnt)
		return
	}
	weights := make([]float64, n)
	for i := range weights {
		weights[i] = 1
	}
	agg, withScores := 0, false
	args := r.args
	for j := keys[len(keys)-1] + 1; j < len(args); j++ {
		left := len(args) - j - 1
		a := args[j]
		switch {
		case g.op != gDiff && resp.EqualFold(a, "weights") && left >= n:
			for i := range weights {
				w, ok := redisnum.ParseFloat(args[j+1+i])
				if !ok {
					fail("ERR weight value is not a float")
					return
				}
				weights[i] = w
			}
			j += n
		case g.op != gDiff && resp.EqualFold(a, "aggregate") && left >= 1:
			switch {
			case resp.EqualFold(args[j+1], "sum"):
				agg = 0
			case resp.EqualFold(args[j+1], "min"):
				agg = 1
			case resp.EqualFold(args[j+1], "max"):
				agg = 2
			default:
				fail("ERR syntax error")
				return
			}
			j++
		case resp.EqualFold(a, "withscores"):
			withScores = true
		default:
			fail("ERR syntax error")
			return
		}
	}
	res := zCombine(srcs, weights, agg, g.op)
	sort.Slice(res, func(i, j int) bool {
		if res[i].s != res[j].s {
			return res[i].s < res[j].s
		}
		return res[i].m < res[j].m
	})
	switch {
	case !withScores:
		out = resp.AppendArray(out, len(res))
		for _, it := range res {
			out = resp.AppendBulkString(out, it.m)
		}
	case r.proto >= 3:
		out = resp.AppendArray(out, len(res))
		for _, it := range res {
			out = resp.AppendArray(out, 2)
			out = resp.AppendBulkString(out, it.m)
			out = resp.AppendDouble(out, it.s, 3)
		}
	default:
		out = resp.AppendArray(out, 2*len(res))
		for _, it := range res {
			out = resp.AppendBulkString(out, it.m)
			out = resp.AppendDouble(out, it.s, 2)
		}
	}
	r.reply = out
}

// mergePFCount is PFCOUNT of keys in several buckets: each key's value
// (GET), checked and merged in the keys' order as Redis's pfcountCommand
// does (the first key that is not a HyperLogLog, or is a corrupted one,
// answers its error), then the cardinality of the union. Nothing is
// cached, as Redis caches nothing for several keys.
func (ss *session) mergePFCount(r *request) {
	byKey := subsByKey(r)
	out := r.reply[:0]
	regs := new([hll.Registers]uint8)
	for _, k := range r.spec.AppendKeyIndexes(nil, r.args) {
		sub, ok := ss.partReply(r, byKey, k)
		if !ok {
			return
		}
		v, null, ok := parseBulk(sub.reply)
		switch {
		case !ok:
			r.reply = resp.AppendError(out, "ERR bad reply from dataserver")
			return
		case null:
			continue
		case !hll.Valid(v):
			r.reply = resp.AppendError(out, hll.ErrTextNotHLL)
			return
		case !hll.MergeInto(regs, v):
			r.reply = resp.AppendError(out, hll.ErrTextInvalid)
			return
		}
	}
	// As Redis's long long (a crafted value's 2^63 is negative).
	r.reply = resp.AppendInt(out, int64(hll.CountRegisters(regs)))
}

// subsByKey maps each distinct key of a gathered read to the part that
// read it.
func subsByKey(r *request) map[string]*request {
	byKey := make(map[string]*request, len(r.subs))
	for _, sub := range r.subs {
		byKey[string(sub.args[1])] = sub
	}
	return byKey
}

// partReply is the part of r that read its key at k; false when that
// part failed, its error then r's reply.
func (ss *session) partReply(r *request, byKey map[string]*request, k int) (*request, bool) {
	sub := byKey[string(r.args[k])]
	if sub.err != nil {
		ss.account(sub) // turns it into an error reply
	}
	if isError(sub.reply) {
		r.reply = append(r.reply[:0], sub.reply...)
		return sub, false
	}
	return sub, true
}

// isError reports whether a reply is an error (or missing).
func isError(reply []byte) bool {
	return len(reply) == 0 || reply[0] == '-' || reply[0] == '!'
}

// parseBulk reads a RESP2 bulk string reply: its bytes, or null.
func parseBulk(b []byte) (v []byte, null, ok bool) {
	n, p, ok := parseHeader(b, 0, '$')
	switch {
	case !ok:
		return nil, false, false
	case n == -1:
		return nil, true, true
	case n < 0 || p+n+2 > len(b):
		return nil, false, false
	}
	return b[p : p+n], false, true
}

// gatherLimit parses the "[LIMIT limit]" pairs after the keys of a
// SINTERCARD or ZINTERCARD (0: no limit).
func gatherLimit(r *request, keys []int, fail func(string)) (int64, bool) {
	var limit int64
	rest := r.args[keys[len(keys)-1]+1:]
	for i := 0; i < len(rest); i += 2 {
		if !resp.EqualFold(rest[i], "limit") || i+1 >= len(rest) {
			fail("ERR syntax error")
			return 0, false
		}
		v, ok := redisnum.ParseInt(rest[i+1])
		if !ok || v < 0 {
			fail("ERR LIMIT can't be negative")
			return 0, false
		}
		limit = v
	}
	return limit, true
}

func isWrongType(b []byte) bool {
	return bytes.HasPrefix(b, []byte("-WRONGTYPE"))
}

// parseSource reads an SMEMBERS or ZRANGE WITHSCORES reply in RESP2.
func parseSource(b []byte, scored bool) (gatherSource, bool) {
	var src gatherSource
	n, p, ok := parseHeader(b, 0, '*')
	if !ok || (scored && n%2 != 0) {
		return src, false
	}
	src.found = n > 0
	for i := 0; i < n; i++ {
		l, q, ok := parseHeader(b, p, '$')
		if !ok || l < 0 || q+l+2 > len(b) {
			return src, false
		}
		v := string(b[q : q+l])
		p = q + l + 2
		if scored && i%2 == 1 {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return src, false
			}
			src.scores = append(src.scores, f)
			continue
		}
		src.members = append(src.members, v)
	}
	if !scored {
		src.scores = make([]float64, len(src.members))
		for i := range src.scores {
			src.scores[i] = 1
		}
	}
	return src, true
}

// parseHeader reads "<kind><n>\r\n" at b[p:]: n and the offset after it.
func parseHeader(b []byte, p int, kind byte) (int, int, bool) {
	if p >= len(b) || b[p] != kind {
		return 0, 0, false
	}
	e := bytes.Index(b[p:], []byte("\r\n"))
	if e < 0 {
		return 0, 0, false
	}
	n, err := strconv.Atoi(string(b[p+1 : p+e]))
	if err != nil {
		return 0, 0, false
	}
	return n, p + e + 2, true
}

// setCombine is SUNION, SINTER (limit: stop there, 0 none) or SDIFF of
// the sources; every key has been type-checked, and a missing one makes
// SINTER empty.
func setCombine(srcs []gatherSource, op gatherOp, limit int) []string {
	sets := make([][]string, len(srcs))
	for i, s := range srcs {
		if op == gInter && !s.found {
			return nil
		}
		sets[i] = s.members
	}
	switch op {
	case gUnion:
		return zsetop.Union(sets)
	case gInter:
		return zsetop.Inter(sets, limit)
	default:
		return zsetop.Diff(sets)
	}
}

type gatherItem struct {
	m string
	s float64
}

// zCombine is ZUNION, ZINTER or ZDIFF of the sources as Redis 7.0's
// zunionInterDiffGenericCommand computes it: the union and the
// intersection take the sources from the smallest to the largest (a
// stable sort by length); a score times its weight is 0 when NaN, except
// that the intersection multiplies the later sources' scores unchecked
// (so MIN and MAX keep their value against a NaN, and SUM makes it 0);
// the difference keeps the first source's scores.
func zCombine(srcs []gatherSource, weights []float64, agg int, op gatherOp) []gatherItem {
	var res []gatherItem
	if op == gDiff {
		maps := scoreMaps(srcs)
	nextd:
		for j, m := range srcs[0].members {
			for i := 1; i < len(maps); i++ {
				if _, ok := maps[i][m]; ok {
					continue nextd
				}
			}
			res = append(res, gatherItem{m, srcs[0].scores[j]})
		}
		return res
	}
	sizes := make([]int, len(srcs))
	for i, src := range srcs {
		sizes[i] = len(src.members)
	}
	order := zsetop.BySize(sizes)
	if op == gUnion {
		acc := map[string]float64{}
		var seen []string
		for _, i := range order {
			s := srcs[i]
			for j, m := range s.members {
				v := zsetop.Weighted(s.scores[j], weights[i])
				if old, ok := acc[m]; ok {
					acc[m] = zsetop.Aggregate(agg, old, v)
				} else {
					acc[m] = v
					seen = append(seen, m)
				}
			}
		}
		for _, m := range seen {
			res = append(res, gatherItem{m, acc[m]})
		}
		return res
	}
	maps := scoreMaps(srcs)
	first := srcs[order[0]]
next:
	for j, m := range first.members {
		v := zsetop.Weighted(first.scores[j], weights[order[0]])
		for _, i := range order[1:] {
			s, ok := maps[i][m]
			if !ok {
				continue next
			}
			v = zsetop.Aggregate(agg, v, s*weights[i])
		}
		res = append(res, gatherItem{m, v})
	}
	return res
}

func scoreMaps(srcs []gatherSource) []map[string]float64 {
	maps := make([]map[string]float64, len(srcs))
	for i, s := range srcs {
		maps[i] = make(map[string]float64, len(s.members))
		for j, m := range s.members {
			maps[i][m] = s.scores[j]
		}
	}
	return maps
}

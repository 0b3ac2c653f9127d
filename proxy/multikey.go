package proxy

import (
	"strconv"

	"github.com/tairkv/tair/internal/route"
	"github.com/tairkv/tair/resp"
)

// mergeKind says how the replies of a split command's parts combine.
type mergeKind uint8

const (
	mergeNone  mergeKind = iota
	mergeArray           // MGET: one array in key order
	mergeSum             // DEL, UNLINK, EXISTS, TOUCH, TAIR.INVALID: the sum
	mergeOK              // MSET: OK when every part is OK
)

// split sends a MultiKey command whose keys span buckets as
// sub-commands (keys keep their relative order), remembering where each
// key's answer will be. Writes go one sub-command per bucket (a
// dataserver applies and replicates a write per bucket); reads go one per
// master node (a dataserver serves a read over several buckets it
// masters), and such a part is split again per bucket if its node turns
// out not to master them all.
func (ss *session) split(r *request, keys []int, q uint32) {
	var rt *routing
	if !r.write && !r.noGroup && !ss.srv.cfg.ReadFromSlave {
		rt = ss.srv.r.load()
	}
	ss.splitBy(r, keys, q, rt)
}

func (ss *session) splitBy(r *request, keys []int, q uint32, rt *routing) {
	switch r.spec.Name {
	case "mget":
		r.merge = mergeArray
	case "mset":
		r.merge = mergeOK
	default:
		r.merge = mergeSum
	}
	step := 1
	if r.spec.Step > 1 {
		step = r.spec.Step
	}
	var byBucket map[uint32]int
	if len(keys) > 16 {
		byBucket = make(map[uint32]int)
	}
	for _, k := range keys {
		b := route.BucketOf(r.args[k], q)
		// g is the group: the bucket, or for reads its master's index.
		g := uint32(b)
		if rt != nil {
			if mi := rt.masterIdx[b%route.BucketID(len(rt.masterIdx))]; mi >= 0 {
				g = 1<<31 | uint32(mi)
			}
		}
		si := -1
		if byBucket != nil {
			if i, ok := byBucket[g]; ok {
				si = i
			}
		} else {
			for i, sub := range r.subs {
				if sub.group == g {
					si = i
					break
				}
			}
		}
		if si < 0 {
			sub := ss.newReq()
			sub.bucket, sub.group = b, g
			sub.grouped = g != uint32(b)
			sub.spec = r.spec
			sub.area, sub.proto, sub.noTouch = r.area, r.proto, r.noTouch
			sub.write, sub.slaveOK = r.write, r.slaveOK && !sub.grouped
			sub.start = r.start
			sub.own = append(sub.own[:0], r.args[0])
			si = len(r.subs)
			r.subs = append(r.subs, sub)
			if byBucket != nil {
				byBucket[g] = si
			}
		}
		sub := r.subs[si]
		pos := (len(sub.own) - 1) / step
		r.keyAt = append(r.keyAt, uint64(si)<<32|uint64(pos))
		sub.own = append(sub.own, r.args[k:k+step]...)
	}
	for _, sub := range r.subs {
		sub.args = sub.own
		ss.send(sub)
	}
}

// resplit turns a part grouped by node into one part per bucket, when
// its node did not master every bucket.
func (ss *session) resplit(r *request) {
	q := uint32(route.DefaultBuckets)
	if rt := ss.srv.r.load(); rt != nil {
		q = rt.t.Buckets
	}
	r.grouped = false
	r.noGroup = true
	r.subs, r.keyAt = r.subs[:0], r.keyAt[:0]
	keys := ss.keyBuf[:0]
	for i := 1; i < len(r.args); i++ {
		keys = append(keys, i)
	}
	ss.keyBuf = keys
	// The arguments must outlive the new parts' own lists.
	args := append([][]byte(nil), r.args...)
	r.args = args
	ss.splitBy(r, append([]int(nil), keys...), q, nil)
}

// mergeReplies combines the parts' replies into r.reply. The first error
// of a part is the reply.
func (ss *session) mergeReplies(r *request) {
	if r.merge == mergeGather {
		ss.mergeGathered(r)
		return
	}
	for _, sub := range r.subs {
		if sub.err != nil {
			ss.account(sub) // turns it into an error reply
		}
		if len(sub.reply) == 0 || sub.reply[0] == '-' || sub.reply[0] == '!' {
			r.reply = append(r.reply[:0], sub.reply...)
			return
		}
	}
	switch r.merge {
	case mergeOK:
		r.reply = resp.AppendOK(r.reply[:0])
	case mergeSum:
		var sum int64
		for _, sub := range r.subs {
			n, ok := parseIntReply(sub.reply)
			if !ok {
				r.reply = append(r.reply[:0], sub.reply...)
				return
			}
			sum += n
		}
		r.reply = resp.AppendInt(r.reply[:0], sum)
	case mergeArray:
		// Element offsets of every part.
		offs := ss.scratchOffs[:0]
		base := make([]int, len(r.subs))
		for i, sub := range r.subs {
			base[i] = len(offs)
			b := sub.reply
			if b[0] != '*' {
				r.reply = append(r.reply[:0], b...)
				return
			}
			eol := 1
			for eol < len(b) && b[eol] != '\r' {
				eol++
			}
			n, err := strconv.Atoi(string(b[1:eol]))
			if err != nil {
				r.reply = resp.AppendError(r.reply[:0], "ERR bad reply from dataserver")
				return
			}
			p := eol + 2
			for j := 0; j < n; j++ {
				l, _, err := resp.ScanReply(b[p:], resp.Limits{})
				if err != nil {
					r.reply = resp.AppendError(r.reply[:0], "ERR bad reply from dataserver")
					return
				}
				offs = append(offs, p, p+l)
				p += l
			}
		}
		ss.scratchOffs = offs
		out := resp.AppendArray(r.reply[:0], len(r.keyAt))
		for _, ka := range r.keyAt {
			si, pos := int(ka>>32), int(uint32(ka))
			o := base[si] + 2*pos
			if o+1 >= len(offs) || (si+1 < len(base) && o >= base[si+1]) {
				out = resp.AppendNull(out, r.proto)
				continue
			}
			out = append(out, r.subs[si].reply[offs[o]:offs[o+1]]...)
		}
		r.reply = out
	}
}

func parseIntReply(b []byte) (int64, bool) {
	if len(b) < 3 || b[0] != ':' {
		return 0, false
	}
	e := len(b) - 2
	n, err := strconv.ParseInt(string(b[1:e]), 10, 64)
	return n, err == nil
}

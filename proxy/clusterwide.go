package proxy

import (
	"bytes"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/tairkv/tair/hotkey"
	"github.com/tairkv/tair/internal/errs"
	"github.com/tairkv/tair/internal/route"
	"github.com/tairkv/tair/resp"
)

// Commands over the whole cluster. They run as barriers: every earlier
// command of the client's pipeline is answered first.
//
// What they ask of the dataservers (inside the TAIR.X envelope, so the
// area and protocol come from it):
//
//	DBSIZE                      -> :n, keys of the area in the buckets the node masters
//	FLUSHDB [ASYNC|SYNC]        -> +OK, the area deleted on that node (sent to every node)
//	FLUSHALL [ASYNC|SYNC]       -> +OK, every area deleted on that node (sent to every node)
//	SCANBUCKET b cursor [MATCH p] [COUNT n] [TYPE t]
//	                            -> [next-cursor, [key ...]] of bucket b ("0" = bucket done);
//	                               sent to b's master, NOTMASTER when it is not
//	TAIR.STAT [area]            -> map keys/bytes/gets/puts/hits/misses/evictions of that node
//	TAIR.DELALL area            -> +OK, sent to every node

// part is one request of a fan-out.
func (ss *session) part(parent *request, args [][]byte) *request {
	sub := ss.newReq()
	sub.area, sub.proto, sub.noTouch = parent.area, parent.proto, parent.noTouch
	sub.own = append(sub.own[:0], args...)
	sub.args = sub.own
	sub.start = parent.start
	return sub
}

// sendTo sends r to node n itself (not routed by bucket).
func (ss *session) sendTo(r *request, n *node) {
	r.wg.Add(1)
	rt := ss.srv.r.load()
	if rt == nil {
		r.fail(errNoTable)
		return
	}
	r.node = n
	r.wire = wrap(r.wire[:0], rt, false, r)
	bc, err := n.conn(ss.connIdx)
	if err != nil {
		r.fail(err)
		return
	}
	r.written = false
	if !bc.push(r) {
		r.fail(bc.cause())
	}
}

// fanOut sends args to each node and waits for every reply. A failed
// node's reply is its error.
func (ss *session) fanOut(r *request, nodes []*node, args [][]byte, write bool) []*request {
	parts := make([]*request, 0, len(nodes))
	for _, n := range nodes {
		p := ss.part(r, args)
		p.write = write
		ss.sendTo(p, n)
		parts = append(parts, p)
	}
	for _, p := range parts {
		p.wg.Wait()
		if p.err != nil {
			p.reply = resp.AppendErr(p.reply[:0], clusterDown(p.err))
			p.err = nil
		}
	}
	return parts
}

// masters returns the distinct masters of the current table.
func (ss *session) masters() ([]*node, bool) {
	rt := ss.srv.r.load()
	if rt == nil {
		return nil, false
	}
	seen := map[*node]bool{}
	var out []*node
	for _, cp := range rt.copies {
		if len(cp) == 0 || cp[0] == nil {
			return nil, false
		}
		if !seen[cp[0]] {
			seen[cp[0]] = true
			out = append(out, cp[0])
		}
	}
	return out, true
}

func cmdDBSize(ss *session, r *request) {
	for attempt := 0; ; attempt++ {
		ver := ss.srv.r.version()
		masters, ok := ss.masters()
		if !ok {
			r.setErr(errSomeBucketNoMaster)
			return
		}
		parts := ss.fanOut(r, masters, [][]byte{[]byte("DBSIZE")}, false)
		var sum int64
		retry := false
		for _, p := range parts {
			n, ok := parseIntReply(p.reply)
			if !ok {
				if attempt < 5 && (isNotMaster(p.reply) || errs.ReplyCode(p.reply) == errs.ServerCanNotWork) {
					retry = true
					break
				}
				r.raw(p.reply)
				return
			}
			sum += n
		}
		// A table change during the count could count a bucket twice or
		// never: count again.
		if !retry && ss.srv.r.version() == ver {
			r.integer(sum)
			return
		}
		if attempt >= 5 {
			r.integer(sum)
			return
		}
		ss.backoff(r, retryNoMaster, attempt+1)
	}
}

func cmdFlush(ss *session, r *request) {
	if len(r.args) > 2 || len(r.args) == 2 && !strings.EqualFold(string(r.args[1]), "async") && !strings.EqualFold(string(r.args[1]), "sync") {
		r.setError("ERR syntax error")
		return
	}
	ss.broadcast(r, r.args[:1])
}

func cmdTairDelAll(ss *session, r *request) {
	if len(r.args) != 2 {
		r.setError("ERR wrong number of arguments for 'tair.delall' command")
		return
	}
	ss.broadcast(r, r.args)
}

// broadcast sends the write args to every node: OK, or the first
// node's error.
func (ss *session) broadcast(r *request, args [][]byte) {
	rt := ss.srv.r.load()
	if rt == nil {
		r.setErr(errNoTable)
		return
	}
	parts := ss.fanOut(r, rt.nodes, args, true)
	for _, p := range parts {
		if len(p.reply) == 0 || p.reply[0] == '-' {
			r.raw(p.reply)
			return
		}
	}
	r.ok()
}

// TAIR.STAT [area]: the nodes' counters summed; keys is the exact count
// (DBSIZE over the masters) and bytes is divided by the copy count, as
// every copy holds the bytes.
func cmdTairStat(ss *session, r *request) {
	rt := ss.srv.r.load()
	if rt == nil {
		r.setErr(errNoTable)
		return
	}
	parts := ss.fanOut(r, rt.nodes, r.args, false)
	names := []string{"keys", "bytes", "gets", "puts", "hits", "misses", "evictions"}
	sums := map[string]int64{}
	for _, p := range parts {
		if len(p.reply) == 0 || p.reply[0] == '-' {
			r.raw(p.reply)
			return
		}
		fields, err := flatFields(p.reply)
		if err != nil {
			r.setError("ERR bad TAIR.STAT reply from dataserver")
			return
		}
		for i := 0; i+1 < len(fields); i += 2 {
			n, _ := strconv.ParseInt(string(fields[i+1]), 10, 64)
			sums[string(fields[i])] += n
		}
	}
	copies := int64(rt.t.Copies)
	if copies > 1 {
		sums["bytes"] /= copies
	}
	// keys: exactly, from the masters.
	area := r.area
	if len(r.args) == 2 {
		a, err := strconv.Atoi(string(r.args[1]))
		if err == nil {
			area = a
		}
	}
	if masters, ok := ss.masters(); ok {
		q := ss.part(r, nil)
		q.area = area
		parts := ss.fanOut(q, masters, [][]byte{[]byte("DBSIZE")}, false)
		var n int64
		for _, p := range parts {
			v, _ := parseIntReply(p.reply)
			n += v
		}
		sums["keys"] = n
	}
	b := resp.AppendMap(r.reply[:0], len(names), r.proto)
	for _, n := range names {
		b = resp.AppendBulkString(b, n)
		b = resp.AppendInt(b, sums[n])
	}
	r.raw(b)
}

// hotSample is how many routed commands one hot-key sample stands for.
const hotSample = 8

// TAIR.HOTKEYS [area]: the keys this proxy saw hot in the last window
// (hotkey.Detector), as a flat array key, rate (requests/s), ... hottest
// first; the area defaults to the session's.
func cmdTairHotkeys(ss *session, r *request) {
	area := ss.area
	if len(r.args) > 2 {
		r.setError("ERR wrong number of arguments for 'tair.hotkeys' command")
		return
	}
	if len(r.args) == 2 {
		n, err := strconv.Atoi(string(r.args[1]))
		if err != nil || n < 0 || n > route.MaxArea {
			r.setError("ERR area must be an integer between 0 and 1023")
			return
		}
		area = n
	}
	var hot []hotkey.Hot
	for _, h := range ss.srv.hot.Hot() {
		if int(h.Area) == area {
			hot = append(hot, h)
		}
	}
	b := resp.AppendArray(r.reply[:0], 2*len(hot))
	for _, h := range hot {
		b = resp.AppendBulkString(b, h.Key.Key)
		b = resp.AppendInt(b, int64(h.Rate))
	}
	r.raw(b)
}

// anyNode sends a keyless data command to one dataserver (the first
// master).
func (ss *session) anyNode(r *request) {
	masters, ok := ss.masters()
	if !ok || len(masters) == 0 {
		r.setErr(errNoDataserver)
		return
	}
	parts := ss.fanOut(r, masters[:1], r.args, false)
	r.raw(parts[0].reply)
}

// rawElements splits an aggregate reply (array, set, map: its flattened
// elements) into the raw bytes of each element.
func rawElements(b []byte) ([][]byte, error) {
	if len(b) < 4 {
		return nil, resp.ErrProtocol
	}
	switch b[0] {
	case '*', '~', '%', '>':
	default:
		return nil, resp.ErrProtocol
	}
	eol := bytes.Index(b, []byte("\r\n"))
	n, err := strconv.Atoi(string(b[1:eol]))
	if err != nil {
		return nil, err
	}
	if b[0] == '%' {
		n *= 2
	}
	p := eol + 2
	out := make([][]byte, 0, max(n, 0))
	for i := 0; i < n; i++ {
		l, _, err := resp.ScanReply(b[p:], resp.Limits{})
		if err != nil {
			return nil, err
		}
		out = append(out, b[p:p+l])
		p += l
	}
	return out, nil
}

// flatFields returns the scalar payloads of a flat aggregate's elements
// (bulk strings, simple strings and integers as text).
func flatFields(b []byte) ([][]byte, error) {
	es, err := rawElements(b)
	if err != nil {
		return nil, err
	}
	out := make([][]byte, len(es))
	for i, e := range es {
		v, ok := scalar(e)
		if !ok {
			return nil, resp.ErrProtocol
		}
		out[i] = v
	}
	return out, nil
}

// scalar returns the payload of a bulk/simple/integer/double reply.
func scalar(e []byte) ([]byte, bool) {
	if len(e) < 3 {
		return nil, false
	}
	switch e[0] {
	case '$', '=':
		i := bytes.Index(e, []byte("\r\n"))
		if i < 0 || e[1] == '-' {
			return nil, e[1] == '-'
		}
		v := e[i+2 : len(e)-2]
		if e[0] == '=' && len(v) >= 4 {
			v = v[4:]
		}
		return v, true
	case '+', ':', ',', '(':
		return e[1 : len(e)-2], true
	case '_':
		return nil, true
	}
	return nil, false
}

// SCAN cursor [MATCH p] [COUNT n] [TYPE t]. The cursor names a bucket and
// a position in it (cursor = pos*Q + bucket), not a node, so it survives
// table changes. Buckets are asked in windows of 16 in parallel; a call
// returns once COUNT keys are collected or 128 buckets were visited.
func cmdScan(ss *session, r *request) {
	rt := ss.srv.r.load()
	if rt == nil {
		r.setErr(errNoTable)
		return
	}
	q := uint64(rt.t.Buckets)
	cur, err := strconv.ParseUint(string(r.args[1]), 10, 64)
	if err != nil {
		r.setError("ERR invalid cursor")
		return
	}
	count := 10
	var opts [][]byte
	for i := 2; i < len(r.args); i += 2 {
		if i+1 >= len(r.args) {
			r.setError("ERR syntax error")
			return
		}
		switch strings.ToLower(string(r.args[i])) {
		case "match", "type":
			opts = append(opts, r.args[i], r.args[i+1])
		case "count":
			n, err := strconv.Atoi(string(r.args[i+1]))
			if err != nil {
				r.setError("ERR value is not an integer or out of range")
				return
			}
			if n < 1 {
				r.setError("ERR syntax error")
				return
			}
			count = n
		default:
			r.setError("ERR syntax error")
			return
		}
	}
	bucket, pos := cur%q, cur/q
	var keys [][]byte
	visited := 0
	for bucket < q && len(keys) < count && visited < 128 {
		w := uint64(16)
		if bucket+w > q {
			w = q - bucket
		}
		parts := make([]*request, 0, w)
		for i := uint64(0); i < w; i++ {
			p0 := uint64(0)
			if i == 0 {
				p0 = pos
			}
			parts = append(parts, ss.sendScanBucket(r, route.BucketID(bucket+i), p0, opts))
		}
		for i, p := range parts {
			ss.finish(p)
			ss.account(p)
			next, ks, err := scanReply(p.reply)
			if err != nil {
				r.raw(p.reply)
				if len(p.reply) == 0 || p.reply[0] != '-' {
					r.setError("ERR bad SCANBUCKET reply from dataserver")
				}
				return
			}
			keys = append(keys, ks...)
			visited++
			if next != 0 {
				// The bucket has more: stop here, resume in it.
				bucket, pos = bucket+uint64(i), next
				goto done
			}
		}
		bucket += w
		pos = 0
	}
done:
	next := uint64(0)
	if bucket < q {
		next = pos*q + bucket
	}
	b := resp.AppendArray(r.reply[:0], 2)
	b = resp.AppendBulk(b, strconv.AppendUint(nil, next, 10))
	b = resp.AppendArray(b, len(keys))
	for _, k := range keys {
		b = resp.AppendBulk(b, k)
	}
	r.raw(b)
}

// scanReply parses [cursor, [keys]]; the keys are copies.
func scanReply(b []byte) (uint64, [][]byte, error) {
	es, err := rawElements(b)
	if err != nil || len(es) != 2 {
		return 0, nil, resp.ErrProtocol
	}
	c, ok := scalar(es[0])
	if !ok {
		return 0, nil, resp.ErrProtocol
	}
	next, err := strconv.ParseUint(string(c), 10, 64)
	if err != nil {
		return 0, nil, err
	}
	ks, err := flatFields(es[1])
	if err != nil {
		return 0, nil, err
	}
	for i := range ks {
		ks[i] = append([]byte(nil), ks[i]...)
	}
	return next, ks, nil
}

// sendScanBucket sends SCANBUCKET b pos opts... as a part of r, to any
// copy of the bucket (a scan may read from a slave).
func (ss *session) sendScanBucket(r *request, b route.BucketID, pos uint64, opts [][]byte) *request {
	args := [][]byte{[]byte("SCANBUCKET"), strconv.AppendUint(nil, uint64(b), 10), strconv.AppendUint(nil, pos, 10)}
	p := ss.part(r, append(args, opts...))
	p.bucket = b
	p.slaveOK = true
	ss.send(p)
	return p
}

// walkBuckets asks SCANBUCKET of every bucket from start (wrapping), in
// windows, calling f with each bucket's keys until f returns false.
func (ss *session) walkBuckets(r *request, start uint32, opts [][]byte, f func(keys [][]byte) bool) []byte {
	rt := ss.srv.r.load()
	if rt == nil {
		return resp.AppendErr(nil, errNoTable)
	}
	q := rt.t.Buckets
	for done := uint32(0); done < q; {
		w := uint32(32)
		if done+w > q {
			w = q - done
		}
		parts := make([]*request, 0, w)
		for i := uint32(0); i < w; i++ {
			parts = append(parts, ss.sendScanBucket(r, route.BucketID((start+done+i)%q), 0, opts))
		}
		stop := false
		for _, p := range parts {
			ss.finish(p)
			ss.account(p)
			if stop {
				continue
			}
			_, ks, err := scanReply(p.reply)
			if err != nil {
				if len(p.reply) > 0 && p.reply[0] == '-' {
					return p.reply
				}
				return resp.AppendError(nil, "ERR bad SCANBUCKET reply from dataserver")
			}
			if !f(ks) {
				stop = true
			}
		}
		if stop {
			return nil
		}
		done += w
	}
	return nil
}

func cmdKeys(ss *session, r *request) {
	var keys [][]byte
	opts := [][]byte{[]byte("MATCH"), r.args[1]}
	if errReply := ss.walkBuckets(r, 0, opts, func(ks [][]byte) bool {
		keys = append(keys, ks...)
		return true
	}); errReply != nil {
		r.raw(errReply)
		return
	}
	b := resp.AppendArray(r.reply[:0], len(keys))
	for _, k := range keys {
		b = resp.AppendBulk(b, k)
	}
	r.raw(b)
}

func cmdRandomKey(ss *session, r *request) {
	rt := ss.srv.r.load()
	if rt == nil {
		r.setErr(errNoTable)
		return
	}
	var key []byte
	if errReply := ss.walkBuckets(r, uint32(rand.IntN(int(rt.t.Buckets))), nil, func(ks [][]byte) bool {
		if len(ks) == 0 {
			return true
		}
		key = ks[rand.IntN(len(ks))]
		return false
	}); errReply != nil {
		r.raw(errReply)
		return
	}
	if key == nil {
		r.null()
		return
	}
	r.bulk(key)
}

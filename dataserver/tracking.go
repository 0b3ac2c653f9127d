package dataserver

import (
	"bytes"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/panjf2000/gnet/v2"

	"github.com/tairkv/tair/dataserver/exec"
	"github.com/tairkv/tair/engines"
	"github.com/tairkv/tair/internal/command"
	"github.com/tairkv/tair/internal/envelope"
	"github.com/tairkv/tair/internal/route"
	"github.com/tairkv/tair/resp"
)

// # Tracking: invalidations pushed to the proxies' hot-key caches
//
// Redis's CLIENT TRACKING (default mode, with REDIRECT), for proxies. A
// proxy keeps one connection to each dataserver that says TAIR.TRACKING
// <id> and then only listens (a sink). A GET that fills the proxy's cache
// carries its id in the envelope (envelope.Header.Track); the master
// remembers (area, key) → the ids that read it (register, before the
// read, so that a write racing the read is pushed for). When the key
// changes here as its master (any write, script, transaction, FLUSHDB,
// FLUSHALL, a keyless write of its area, its expiry, an eviction, its
// bucket moving away), each id is sent
//
//	*3 $10 invalidate <area> <key>
//
// on its sink, and the registration is forgotten (one-shot: the proxy's
// next fill registers again). A change not tied to keys sends
// `*1 invalidate-all`. The write's reply waits until its pushes are on
// their sinks' sockets (pending.pushed). The table holds at most
// Config.TrackingMaxKeys keys; past that, registrations are dropped by
// pushing their invalidation, as Redis's tracking_table_max_keys.

// pushWaitMax bounds how long a write's reply waits for its pushes to be
// written (a sink's loop that is stuck does not stall writes).
const pushWaitMax = time.Second

type trackKey struct {
	area uint16
	key  string
}

type trackEntry struct {
	bucket route.BucketID
	ids    []uint64
	timer  *time.Timer // the key's expiry, when it has one
}

type tracker struct {
	max    int
	count  atomic.Int64 // keys tracked: writes look here first
	pushes atomic.Int64 // invalidation messages sent
	evicts atomic.Int64 // registrations dropped to stay under max

	mu        sync.Mutex
	keys      map[trackKey]*trackEntry
	sinks     map[uint64]gnet.Conn
	evictions int64 // the engine's eviction count last seen (evictLoop)
}

func newTracker(max int) *tracker {
	if max < 1 {
		max = 1
	}
	return &tracker{max: max, keys: map[trackKey]*trackEntry{}, sinks: map[uint64]gnet.Conn{}}
}

// addSink makes c the connection id's invalidations go to.
func (t *tracker) addSink(id uint64, c gnet.Conn) {
	t.mu.Lock()
	t.sinks[id] = c
	t.mu.Unlock()
}

// removeSink forgets c (closed). Registrations for id stay until they
// fire; the proxy dropped its cache when the connection went.
func (t *tracker) removeSink(id uint64, c gnet.Conn) {
	t.mu.Lock()
	if t.sinks[id] == c {
		delete(t.sinks, id)
	}
	t.mu.Unlock()
}

// register remembers that tracker id reads key of bucket b; it reports
// false when id has no sink (the proxy must not cache, and soon learns
// that its connection is gone).
func (t *tracker) register(id uint64, area uint16, key []byte, b route.BucketID) bool {
	t.mu.Lock()
	if _, ok := t.sinks[id]; !ok {
		t.mu.Unlock()
		return false
	}
	k := trackKey{area, string(key)}
	e := t.keys[k]
	if e == nil {
		e = &trackEntry{bucket: b}
		t.keys[k] = e
		t.count.Add(1)
	}
	for _, have := range e.ids {
		if have == id {
			t.mu.Unlock()
			return true
		}
	}
	e.ids = append(e.ids, id)
	var out pushOut
	for len(t.keys) > t.max {
		dropped := false
		for vk, ve := range t.keys {
			if vk == k {
				continue
			}
			t.dropLocked(vk, ve, &out)
			t.evicts.Add(1)
			dropped = true
			break
		}
		if !dropped {
			break
		}
	}
	t.mu.Unlock()
	out.send(t)
	return true
}

// expireAt has the registration of key push its invalidation at the
// key's expiry, in d.
func (t *tracker) expireAt(area uint16, key []byte, d time.Duration) {
	k := trackKey{area, string(key)}
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.keys[k]
	if e == nil || e.timer != nil {
		return
	}
	e.timer = time.AfterFunc(d, func() {
		var out pushOut
		t.mu.Lock()
		if t.keys[k] == e {
			t.dropLocked(k, e, &out)
		}
		t.mu.Unlock()
		out.send(t)
	})
}

// dropLocked forgets k and queues its invalidation for each tracker.
func (t *tracker) dropLocked(k trackKey, e *trackEntry, out *pushOut) {
	delete(t.keys, k)
	t.count.Add(-1)
	if e.timer != nil {
		e.timer.Stop()
	}
	for _, id := range e.ids {
		if c := t.sinks[id]; c != nil {
			out.add(c, k)
		}
	}
}

// keysChanged pushes the invalidations of the keys the propagated
// commands prop wrote in area; the returned channel (nil: nothing sent)
// closes once they are written.
func (t *tracker) keysChanged(area uint16, prop [][][]byte) chan struct{} {
	var out pushOut
	var kb [8]int
	t.mu.Lock()
	for _, cmd := range prop {
		if len(cmd) == 0 || exec.IsVersions(cmd) {
			continue // the versions of the keys of the commands after it
		}
		spec := command.Lookup(cmd[0])
		var keys []int
		if spec != nil {
			keys = spec.AppendKeyIndexes(kb[:0], cmd)
		}
		if len(keys) == 0 {
			// A write whose keys are not known: all of the area.
			t.areaLocked(area, &out)
			continue
		}
		for _, i := range keys {
			k := trackKey{area, string(cmd[i])}
			if e := t.keys[k]; e != nil {
				t.dropLocked(k, e, &out)
			}
		}
	}
	t.mu.Unlock()
	return out.send(t)
}

func (t *tracker) areaLocked(area uint16, out *pushOut) {
	for k, e := range t.keys {
		if k.area == area {
			t.dropLocked(k, e, out)
		}
	}
}

// areaChanged pushes the invalidation of every tracked key of area
// (FLUSHDB, TAIR.DELALL and other keyless writes).
func (t *tracker) areaChanged(area uint16) chan struct{} {
	if t.count.Load() == 0 {
		return nil
	}
	var out pushOut
	t.mu.Lock()
	t.areaLocked(area, &out)
	t.mu.Unlock()
	return out.send(t)
}

// allChanged forgets every registration and tells every sink to drop
// everything it cached of this node (FLUSHALL, evictions).
func (t *tracker) allChanged() chan struct{} {
	var out pushOut
	t.mu.Lock()
	for k, e := range t.keys {
		delete(t.keys, k)
		if e.timer != nil {
			e.timer.Stop()
		}
	}
	t.count.Store(0)
	for _, c := range t.sinks {
		out.addAll(c)
	}
	t.mu.Unlock()
	return out.send(t)
}

// bucketsLost pushes the invalidations of the keys of the buckets this
// node no longer masters: their next writes happen elsewhere.
func (t *tracker) bucketsLost(lost map[route.BucketID]bool) {
	if t.count.Load() == 0 || len(lost) == 0 {
		return
	}
	var out pushOut
	t.mu.Lock()
	for k, e := range t.keys {
		if lost[e.bucket] {
			t.dropLocked(k, e, &out)
		}
	}
	t.mu.Unlock()
	out.send(t)
}

// pushOut gathers invalidation messages per sink.
type pushOut struct {
	conns []gnet.Conn
	bufs  [][]byte
	n     int64
}

func (o *pushOut) buf(c gnet.Conn) *[]byte {
	for i, have := range o.conns {
		if have == c {
			return &o.bufs[i]
		}
	}
	o.conns = append(o.conns, c)
	o.bufs = append(o.bufs, nil)
	return &o.bufs[len(o.bufs)-1]
}

func (o *pushOut) add(c gnet.Conn, k trackKey) {
	b := o.buf(c)
	var num [8]byte
	*b = append(*b, "*3\r\n$10\r\ninvalidate\r\n"...)
	*b = resp.AppendBulk(*b, strconv.AppendUint(num[:0], uint64(k.area), 10))
	*b = resp.AppendBulkString(*b, k.key)
	o.n++
}

func (o *pushOut) addAll(c gnet.Conn) {
	b := o.buf(c)
	*b = append(*b, "*1\r\n$14\r\ninvalidate-all\r\n"...)
	o.n++
}

// send writes the gathered messages on their sinks' loops; the channel
// closes once every one is written (or failed: the sink closed, and
// its proxy drops its cache).
func (o *pushOut) send(t *tracker) chan struct{} {
	if len(o.conns) == 0 {
		return nil
	}
	t.pushes.Add(o.n)
	done := make(chan struct{})
	var left atomic.Int32
	left.Store(int32(len(o.conns)))
	cb := func(gnet.Conn, error) error {
		if left.Add(-1) == 0 {
			close(done)
		}
		return nil
	}
	for i, c := range o.conns {
		if err := c.AsyncWrite(o.bufs[i], cb); err != nil {
			_ = cb(nil, err)
		}
	}
	return done
}

// awaitPushes waits (bounded) for the pushes a reply's write made.
func awaitPushes(chs []chan struct{}) {
	var timer *time.Timer
	for _, ch := range chs {
		select {
		case <-ch:
			continue
		default:
		}
		if timer == nil {
			timer = time.NewTimer(pushWaitMax)
			defer timer.Stop()
		}
		select {
		case <-ch:
		case <-timer.C:
			return
		}
	}
}

// pushesPending reports whether any of chs is still open.
func pushesPending(chs []chan struct{}) bool {
	for _, ch := range chs {
		select {
		case <-ch:
		default:
			return true
		}
	}
	return false
}

// trackingCommand serves TAIR.TRACKING <id> on the loop: the connection
// becomes id's sink.
func (dc *dsConn) trackingCommand(args [][]byte) {
	var id uint64
	ok := len(args) == 2
	if ok {
		id, ok = parseTrackID(args[1])
	}
	if !ok {
		_, _ = dc.c.Write(resp.AppendError(nil, "ERR usage: TAIR.TRACKING <id>"))
		return
	}
	if dc.trackID != 0 && dc.trackID != id {
		dc.s.track.removeSink(dc.trackID, dc.c)
	}
	dc.trackID = id
	dc.s.track.addSink(id, dc.c)
	_, _ = dc.c.Write(resp.AppendOK(nil))
}

func parseTrackID(b []byte) (uint64, bool) {
	if len(b) == 0 || len(b) > 19 || bytes.IndexFunc(b, func(r rune) bool { return r < '0' || r > '9' }) >= 0 {
		return 0, false
	}
	id, err := strconv.ParseUint(string(b), 10, 64)
	return id, err == nil && id != 0
}

// trackRead registers a cache fill's key before its read runs, with the
// key's expiry. Only a master's plain reads (TAIR.X GET) register.
func (s *Server) trackRead(env envelope.Header, b route.BucketID, key []byte) {
	if env.Kind != envelope.Master || !s.track.register(env.Track, env.Area, key, b) {
		return
	}
	// The key's expiry, read as a probe (no access, no hit or miss
	// counted): its registration pushes then too.
	e, err := s.eng.Get(engines.Key{Bucket: uint32(b), Area: env.Area, Key: key, NoStats: true, NoTouch: true})
	if err == nil && e.ExpireAt > 0 {
		s.track.expireAt(env.Area, key, time.Until(time.UnixMilli(e.ExpireAt)))
	}
}

// trackTable pushes for the buckets the new routing no longer makes
// this node the master of.
func (s *Server) trackTable(old, nrt *routing) {
	if old == nil || s.track.count.Load() == 0 {
		return
	}
	me := s.addr
	var lost map[route.BucketID]bool
	for b := route.BucketID(0); int(b) < len(old.t.Serving); b++ {
		if old.t.IsMaster(b, me) && (nrt == nil || !nrt.t.IsMaster(b, me)) {
			if lost == nil {
				lost = map[route.BucketID]bool{}
			}
			lost[b] = true
		}
	}
	s.track.bucketsLost(lost)
}

// evictLoop watches the engine's eviction count: evictions happen in the
// engine, which names no key, so any eviction drops every registration
// (a node evicting all the time tracks nothing for long, which is the
// price of not serving stale values). An engine without the count
// (engines.Engine does not require it) is not watched.
func (s *Server) evictLoop(stop <-chan struct{}) {
	ec, ok := s.eng.(interface{ Evictions() int64 })
	if !ok {
		return
	}
	tk := time.NewTicker(20 * time.Millisecond)
	defer tk.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tk.C:
		}
		n := ec.Evictions()
		s.track.mu.Lock()
		changed := n != s.track.evictions
		s.track.evictions = n
		s.track.mu.Unlock()
		if changed && s.track.count.Load() > 0 {
			s.track.allChanged()
		}
	}
}

func appendPush(chs []chan struct{}, ch chan struct{}) []chan struct{} {
	if ch == nil {
		return chs
	}
	return append(chs, ch)
}

// TrackingStats are the tracking table's figures: keys tracked for
// proxies' hot-key caches, invalidations pushed, registrations evicted
// to stay under TrackingMaxKeys.
func (s *Server) TrackingStats() (keys, pushes, evictions int64) {
	return s.track.count.Load(), s.track.pushes.Load(), s.track.evicts.Load()
}

// isTracking reports whether the command name b is TAIR.TRACKING.
func isTracking(b []byte) bool {
	return len(b) == len("TAIR.TRACKING") && equalFold(b, "TAIR.TRACKING")
}

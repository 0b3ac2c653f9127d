package dataserver

import (
	"cmp"
	"errors"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/tairkv/tair/dataserver/exec"
	"github.com/tairkv/tair/engines"
	"github.com/tairkv/tair/internal/command"
	"github.com/tairkv/tair/internal/errs"
	"github.com/tairkv/tair/internal/route"
)

// # A move's walk of its bucket
//
// A move no longer copies its bucket under the bucket's lock in one go.
// It attaches its stream to the bucket first (a short hold: "begin", then
// every later write of the bucket follows on the stream), lists the
// bucket's keys without the lock (engines.BucketKeys), sorts them, and
// sends them in slices, each slice read and pushed under one short hold of
// the lock, so that on the stream a slice's records sit exactly where they
// were read among the bucket's writes. A record replaces its key on the
// destination whole, so a key sent is right from there on, and the writes
// that follow it keep it right.
//
// The writes that ran before their key was sent are what needs care: the
// destination applied them to a key it did not hold yet, or held only in
// part. A key is "sent" once the walk passed it (it is at or before the
// last name sent, in the walk's order) and no write has made it dirty
// since. Every write the stream carries during the walk (noteLocked) names
// its keys (command.Lookup): if any of them is not sent, all of them are
// marked dirty, since the destination may have applied the write to a
// state other than the master's (a single-key write to an unsent key; a
// multi-key write such as SMOVE or SDIFFSTORE that read an unsent key). A
// dirty key is sent again once the walk is through, from its state then:
// its record, or a tombstone when it no longer exists (an already expired
// record, which the destination's store reclaims as it would any expired
// key), in rounds until none is dirty; the last round holds the lock
// throughout, so it always ends. A write naming no key it can find
// taints the walk: the attempt starts over.
//
// Why that suffices: take any key K at the end of the walk that is not
// dirty. Every write to K since the attach came after the walk passed K
// (else it would be dirty). If the walk sent K, its record reflects every
// write before it and the later writes keep it right. If the walk passed
// K without sending it, K was not stored when the list was taken or when
// its slice read it, and nothing wrote K from the attach until then, so K
// was absent from the attach on, which is the destination's state after
// "begin"; the writes after keep it right.
//
// The walk is a name at a time: a name is a key of an area, in both its
// namespaces (the plain record and the pkey of the same name), read and
// sent together.

// walkName is one key of a bucket as a move walks it.
type walkName struct {
	area uint16
	key  string
}

func cmpWalkName(a, b walkName) int {
	if c := cmp.Compare(a.area, b.area); c != 0 {
		return c
	}
	return cmp.Compare(a.key, b.key)
}

// bucketWalk is a move's walk of its bucket: the names listed, how far it
// got, and the names written before the walk could count them as sent.
// Guarded by the bucket's lock.
type bucketWalk struct {
	names []walkName // sorted, distinct
	pos   int        // names[:pos] were sent
	done  bool       // every listed name was sent: only dirty names are not
	// active: writes are noted; cleared once the walk is through.
	active  bool
	dirty   map[walkName]struct{}
	tainted bool
	keyBuf  []int
	noted   *atomic.Int64 // Server.walkWrites
}

func newBucketWalk(noted *atomic.Int64) *bucketWalk {
	return &bucketWalk{active: true, dirty: map[walkName]struct{}{}, noted: noted}
}

// sentLocked reports whether the destination holds n as the master does.
func (w *bucketWalk) sentLocked(n walkName) bool {
	if _, d := w.dirty[n]; d {
		return false
	}
	if w.done {
		return true
	}
	return w.pos > 0 && cmpWalkName(n, w.names[w.pos-1]) <= 0
}

// noteLocked notes the commands of one write of area that the stream
// carries (see above).
func (w *bucketWalk) noteLocked(area uint16, cmds [][][]byte) {
	if w == nil || !w.active {
		return
	}
	w.noted.Add(1)
	for _, c := range cmds {
		if len(c) == 0 || exec.IsVersions(c) {
			continue
		}
		spec := command.Lookup(c[0])
		var idx []int
		if spec != nil {
			idx = spec.AppendKeyIndexes(w.keyBuf[:0], c)
			w.keyBuf = idx
		}
		if len(idx) == 0 {
			w.tainted = true
			continue
		}
		all := false
		for _, i := range idx {
			if !w.sentLocked(walkName{area, string(c[i])}) {
				all = true
				break
			}
		}
		if !all {
			continue
		}
		for _, i := range idx {
			n := walkName{area, string(c[i])}
			w.dirty[n] = struct{}{}
		}
	}
}

// listBucketNames lists bucket b's names, sorted and distinct.
func (s *Server) listBucketNames(b route.BucketID) ([]walkName, error) {
	var names []walkName
	err := engines.BucketKeys(s.eng, uint32(b), func(area uint16, key []byte, _ bool) error {
		names = append(names, walkName{area, string(key)})
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(names, cmpWalkName)
	return slices.CompactFunc(names, func(a, b walkName) bool { return cmpWalkName(a, b) == 0 }), nil
}

// tombstone is what a name absent on the master is sent as: a record
// that expired long ago, which replaces whatever the destination holds
// under it and reads as missing until its store reclaims it.
var tombstoneEntry = engines.Entry{Type: engines.TypeString, Version: 1, ExpireAt: 1}

// chunker encodes records into kindRecords chunks pushed onto a stream.
type chunker struct {
	st    *stream
	b     route.BucketID
	chunk []byte
	in    int // records in chunk
	recs  int // records pushed in all
	bytes int // bytes encoded since reset
}

const chunkRoom = 16

func (c *chunker) add(r *engines.Record) error {
	if c.chunk == nil {
		c.chunk = make([]byte, chunkRoom, chunkRoom+chunkBytes+chunkBytes/8)
	}
	before := len(c.chunk)
	var err error
	if c.chunk, err = engines.AppendChunkRecord(c.chunk, r); err != nil {
		return err
	}
	c.bytes += len(c.chunk) - before
	c.in++
	c.recs++
	if len(c.chunk)-chunkRoom >= chunkBytes {
		c.flush()
	}
	return nil
}

// flush pushes the chunk (the caller holds the bucket's lock).
func (c *chunker) flush() {
	if c.in == 0 {
		return
	}
	var hb [chunkRoom]byte
	h := append(strconv.AppendInt(append(hb[:0], '$'), int64(len(c.chunk)-chunkRoom), 10), '\r', '\n')
	start := chunkRoom - len(h)
	copy(c.chunk[start:], h)
	c.chunk = append(c.chunk, '\r', '\n')
	c.st.push(c.b, 0, kindRecords, payload{data: c.chunk[start:], nargs: 1, recs: c.in})
	c.chunk, c.in = nil, 0
}

// sendNameLocked reads name n of bucket b as it is now and adds it to c:
// its plain record and its pkey, whichever exist; a namespace that does
// not exist is sent as a tombstone when tomb says the destination may
// hold something there. The bucket's lock is held.
func (s *Server) sendNameLocked(c *chunker, b route.BucketID, n walkName, tomb bool) error {
	k := engines.Key{Bucket: uint32(b), Area: n.area, Key: []byte(n.key), NoStats: true, NoTouch: true}
	e, err := s.eng.Get(k)
	switch {
	case err == nil:
		if err := c.add(&engines.Record{Area: n.area, Key: k.Key, Entry: e}); err != nil {
			return err
		}
	case !errors.Is(err, errs.ErrNotFound):
		return err
	case tomb:
		if err := c.add(&engines.Record{Area: n.area, Key: k.Key, Entry: tombstoneEntry}); err != nil {
			return err
		}
	}
	kvs, err := s.eng.PrefixRange(k, engines.RangeOptions{})
	if err != nil && !errors.Is(err, errs.ErrNotFound) {
		return err
	}
	switch {
	case len(kvs) > 0:
		return c.add(&engines.Record{Area: n.area, Key: k.Key, Prefix: kvs})
	case tomb:
		return c.add(&engines.Record{Area: n.area, Key: k.Key, Prefix: []engines.KV{{Key: []byte{}, Entry: tombstoneEntry}}})
	}
	return nil
}

// Slices of a walk: about this many bytes of records, or names, under one
// hold of the bucket's lock (a few milliseconds of encoding at most,
// unless one key alone is bigger).
const (
	walkSliceBytes = 4 * chunkBytes
	// walkRounds of dirty names are sent with the lock taken per slice;
	// the next round holds it throughout.
	walkRounds = 4
)

// walkWindow bounds the items queued on the move's stream before the
// walk reads the next slice: the stream's own pace sets the rate (a
// variable for the tests).
var walkWindow = 32

// walkSliceNames bounds the names of one slice (a variable for the tests).
var walkSliceNames = 1024

// dirtySorted returns w's dirty names, sorted.
func (w *bucketWalk) dirtySorted() []walkName {
	out := make([]walkName, 0, len(w.dirty))
	for n := range w.dirty {
		out = append(out, n)
	}
	slices.SortFunc(out, cmpWalkName)
	return out
}

// walkBucket sends the bucket's keys onto st (see above) and returns the
// number of records sent. The stream is attached, with w.
func (m *migration) walkBucket(st *stream, w *bucketWalk) (int, error) {
	s, b := m.s, m.move.Bucket
	bk := s.bucket(b)
	names, err := s.listBucketNames(b)
	if err != nil {
		return 0, err
	}
	bk.lock()
	w.names = names
	bk.unlock()
	c := &chunker{st: st, b: b}
	window := func() error {
		return m.await(st, func() bool { return st.pending() <= walkWindow }, time.Time{}, false)
	}
	// The listed names, a slice at a time.
	for pos := 0; pos < len(names); {
		if err := window(); err != nil {
			return c.recs, err
		}
		s.bulkMu.Lock()
		bk.lock()
		if bk.mig != m || m.walk != w {
			bk.unlock()
			s.bulkMu.Unlock()
			return c.recs, errMigrationStopped
		}
		c.bytes = 0
		start := pos
		for pos < len(names) && pos-start < walkSliceNames && c.bytes < walkSliceBytes {
			n := names[pos]
			_, d := w.dirty[n]
			if err := s.sendNameLocked(c, b, n, d); err != nil {
				bk.unlock()
				s.bulkMu.Unlock()
				return c.recs, err
			}
			delete(w.dirty, n)
			pos++
		}
		c.flush()
		w.pos = pos
		bk.unlock()
		s.walkSlices.Add(1)
		s.bulkMu.Unlock()
	}
	// The dirty names, in rounds; the last holds the lock throughout.
	for round := 0; ; round++ {
		if err := window(); err != nil {
			return c.recs, err
		}
		final := round >= walkRounds
		s.bulkMu.Lock()
		bk.lock()
		if bk.mig != m || m.walk != w {
			bk.unlock()
			s.bulkMu.Unlock()
			return c.recs, errMigrationStopped
		}
		w.done = true
		if w.tainted {
			bk.unlock()
			s.bulkMu.Unlock()
			return c.recs, errors.New("a write of unknown keys ran during the walk")
		}
		if len(w.dirty) == 0 {
			w.active = false
			bk.unlock()
			s.bulkMu.Unlock()
			return c.recs, nil
		}
		todo := w.dirtySorted()
		for i := 0; i < len(todo); {
			c.bytes = 0
			for start := i; i < len(todo) && (final || i-start < walkSliceNames && c.bytes < walkSliceBytes); i++ {
				n := todo[i]
				if _, d := w.dirty[n]; !d {
					continue
				}
				if err := s.sendNameLocked(c, b, n, true); err != nil {
					bk.unlock()
					s.bulkMu.Unlock()
					return c.recs, err
				}
				delete(w.dirty, n)
			}
			c.flush()
			s.walkSlices.Add(1)
			if final || i == len(todo) {
				break
			}
			bk.unlock()
			s.bulkMu.Unlock()
			if err := window(); err != nil {
				return c.recs, err
			}
			s.bulkMu.Lock()
			bk.lock()
			if bk.mig != m || m.walk != w {
				bk.unlock()
				s.bulkMu.Unlock()
				return c.recs, errMigrationStopped
			}
		}
		if final {
			// Nothing wrote meanwhile: the walk is through.
			w.active = false
			w.dirty = nil
		}
		bk.unlock()
		s.bulkMu.Unlock()
		if final {
			return c.recs, nil
		}
	}
}

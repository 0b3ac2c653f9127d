package dataserver

import (
	"cmp"
	"errors"
	"iter"
	"math"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/tairkv/tair/dataserver/exec"
	"github.com/tairkv/tair/engines"
	"github.com/tairkv/tair/engines/ds"
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
//
// # A resumed walk
//
// When the attempt resumes the copy the destination holds (migresume.go),
// "begin" leaves that copy in place, whatever it is: the state the
// argument above starts from ("absent from the attach on, which is the
// destination's state after begin") no longer holds, and the slices send
// digests, which the destination compares with its own records. What
// changes:
//
//   - A slice's names that are dirty are sent whole, record or tombstone,
//     as in a plain walk (the digest item lists them as such and the
//     destination leaves them be); the others are digested, and a name
//     the source does not hold is not listed. The item covers the walk
//     names (lo, hi]: the last name of the slice before (-inf for the
//     first) to its own last (+inf for the last slice, so that the names
//     past the source's last are covered too).
//   - The destination deletes each name of its own list (taken at
//     "begin", sorted) in the item's interval that the item does not
//     list, and reports the listed names whose digest differs from its
//     own or that it lacks ("needs").
//   - pos passes a slice's names only once the destination's report on
//     its digest was read and its needs made dirty (confirmDigestsLocked),
//     and done waits for the last report. So a write between the slice
//     and the report makes its keys dirty, as a write to a name not yet
//     walked does: until the report is read, the source cannot know the
//     destination's copy of the name is right, and a write that read it
//     there (SMOVE from a name the destination holds stale into one it
//     holds right) could make another name wrong.
//
// Why that suffices: take a name K that is not dirty at the end. If the
// last write that made it dirty was followed by sending its record
// (whole in a slice, or in a dirty round), the record replaced it whole
// there, and nothing wrote K from then until pos passed it (else dirty
// again): the writes after keep it right, as before. Otherwise no write
// named K from the attach until K was confirmed, so at the destination
// no item touched K between "begin" and K's digest item but that item,
// and the source's K did not change either:
//
//   - K listed and held at the slice: its digest was compared with the
//     destination's K as "begin" left it. Equal (the same recordHash the
//     final checksum sums, expiry, version and hidden bit included), both
//     sides hold the same record at that stream point, which is "a record
//     replaces its key whole" without the record; different or lacking,
//     the report made K dirty, a contradiction; a report that was lost
//     (the items acknowledged by a reconnect's hello) made every name of
//     the item dirty, a contradiction again; and an item the destination
//     refused fails the attempt.
//   - K not held at the source at the slice (listed, or never listed:
//     absent from the attach on): the item does not list it. If the
//     destination held K at "begin", K is in its list and the item
//     deletes it; if not, nothing has written it since. Either way it is
//     absent on both sides at that stream point. Names the destination
//     came to hold after "begin" (through writes of the stream) are not
//     in its list, but those writes made their names dirty at the source,
//     which sends them again, record or tombstone.
//
// Digests are a hash: two records that differ and digest alike would
// also pass the final checksum, which sums the same hashes. And the
// checksum still runs (a master's move): a copy that came out wrong
// anyway starts the move over, copying from zero (migration.fromZero),
// so that it cannot come out wrong the same way again.

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
	// inflight: the big key being sent in pieces (see below).
	inflight *pieceState
	keyBuf   []int
	noted    *atomic.Int64 // Server.walkWrites
	// resume: the walk resumes the destination's copy (migresume.go):
	// its slices go as digests, and pos passes a slice's names only once
	// the destination's report on its digest was read (digests are the
	// ones not read yet, in stream order).
	resume  bool
	digests []sentDigest
}

func newBucketWalk(noted *atomic.Int64, resume bool) *bucketWalk {
	return &bucketWalk{active: true, dirty: map[walkName]struct{}{}, noted: noted, resume: resume}
}

// sentLocked reports whether the destination holds n as the master does.
func (w *bucketWalk) sentLocked(n walkName) bool {
	if _, d := w.dirty[n]; d {
		return false
	}
	if w.inflight != nil && w.inflight.name == n {
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
		if p := w.inflight; len(idx) == 1 && p != nil && p.name.area == area && p.name.key == string(c[idx[0]]) {
			if p.prefix || commutesWithPieces(p.typ, c[0]) {
				continue // a big key's pieces and this write commute
			}
			// The write acts on the partial copy by position: the
			// key goes again, replacing that copy.
			w.endPiecesLocked()
			w.dirty[p.name] = struct{}{}
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
	in    int    // records in chunk
	recs  int    // records pushed in all
	names int    // names sent whole (sendNameLocked)
	bytes int    // bytes encoded since reset
	last  *entry // the last chunk pushed
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
	c.last = c.st.push(c.b, 0, kindRecords, payload{data: c.chunk[start:], nargs: 1, recs: c.in})
	c.chunk, c.in = nil, 0
}

// sendNameLocked reads name n of bucket b as it is now and adds it to c:
// its plain record and its pkey, whichever exist; a namespace that does
// not exist is sent as a tombstone when tomb says the destination may
// hold something there. With pieces, a big key (see "Big keys in
// pieces") is sent in pieces (started: its first one, the rest to
// follow, continuePiecesLocked). The bucket's lock is held.
func (s *Server) sendNameLocked(c *chunker, w *bucketWalk, b route.BucketID, n walkName, tomb, pieces bool) (started bool, err error) {
	c.names++
	limit := 0
	if pieces {
		limit = pieceElems + 1 // more than a piece: the pkey goes in pieces
	}
	k, e, kvs, err := s.readNameLocked(b, n, limit)
	if err != nil {
		return false, err
	}
	switch {
	case e != nil:
		if pieces && s.bigPlain(e) {
			started = s.startPiecesLocked(w, n, e)
		}
		err = c.add(&engines.Record{Area: n.area, Key: k.Key, Entry: *e})
	case tomb:
		err = c.add(plainTombstone(n.area, k.Key))
	}
	if err == nil && len(kvs) > pieceElems && limit > 0 {
		if started {
			// The plain record goes in pieces already: the pkey goes
			// whole (a name holding both, big, in an in-memory engine).
			kvs, err = s.eng.PrefixRange(k, engines.RangeOptions{})
		} else {
			kvs = kvs[:pieceElems]
			w.inflight = &pieceState{name: n, prefix: true, after: slices.Clone(kvs[len(kvs)-1].Key)}
			s.walkPieces.Add(1)
			started = true
		}
	}
	if err == nil {
		switch {
		case len(kvs) > 0:
			err = c.add(&engines.Record{Area: n.area, Key: k.Key, Prefix: kvs})
		case tomb:
			err = c.add(pkeyTombstone(n.area, k.Key))
		}
	}
	if err != nil {
		if w != nil {
			w.endPiecesLocked()
		}
		return false, err
	}
	return started, nil
}

// bigPlain reports whether plain record e goes in pieces: an object of
// more than pieceElems elements, not hidden, in an in-memory engine (a
// persistent engine decodes its objects whole at every read).
func (s *Server) bigPlain(e *engines.Entry) bool {
	return e.Object != nil && !e.Hidden && e.Object.Len() > pieceElems && !s.eng.Persistent()
}

// readNameLocked reads name n of bucket b in both its namespaces: its
// plain record (nil when there is none) and its pkey's skeys (none when
// there is no pkey; the first limit of them when limit is not 0). k is
// the name's engine key. The bucket's lock is held.
func (s *Server) readNameLocked(b route.BucketID, n walkName, limit int) (k engines.Key, plain *engines.Entry, skeys []engines.KV, err error) {
	k = engines.Key{Bucket: uint32(b), Area: n.area, Key: []byte(n.key), NoStats: true, NoTouch: true}
	e, err := s.eng.Get(k)
	switch {
	case err == nil:
		plain = &e
	case !errors.Is(err, errs.ErrNotFound):
		return k, nil, nil, err
	}
	skeys, err = s.eng.PrefixRange(k, engines.RangeOptions{Limit: limit})
	if err != nil && !errors.Is(err, errs.ErrNotFound) {
		return k, nil, nil, err
	}
	return k, plain, skeys, nil
}

// plainTombstone and pkeyTombstone are the records that delete a name's
// plain record and its pkey where a copy is applied.
func plainTombstone(area uint16, key []byte) *engines.Record {
	return &engines.Record{Area: area, Key: key, Entry: tombstoneEntry}
}

func pkeyTombstone(area uint16, key []byte) *engines.Record {
	return &engines.Record{Area: area, Key: key, Prefix: []engines.KV{{Key: []byte{}, Entry: tombstoneEntry}}}
}

// # Big keys in pieces
//
// A hash, set, sorted set or list of more than pieceElems elements
// (in-memory engines, whose records hold the object itself) is not
// encoded in one hold of the bucket's lock: its first piece is a record
// of the key holding its first pieceElems elements (version, expiry and
// flags as they are), which replaces the key on the destination; each
// further piece, in a hold of its own, adds the next pieceElems elements
// with HSET, SADD, ZADD or RPUSH under the key's current version (a
// versions entry, so the destination's version stays the master's).
//
// Hashes, sets and sorted sets: a piece carries its elements as they are
// when it is sent (current values and scores; an element gone by then is
// skipped). A write to the key between its pieces reaches the destination
// in order and acts there element by element, as it did on the master:
// on an element already sent, it leaves it as the master's; on one not
// yet sent, whatever it leaves is replaced by that element's piece, which
// reads the master's element then (or skips it if the master has none);
// an element the write added is the write's on both sides, and if a later
// piece carries it too, it carries the master's value then. A whole-key
// write (DEL, EXPIRE, RESTORE) acts on the whole partial key, and the
// pieces that follow only add the master's current elements. So such
// single-key writes pass (noteLocked, commutesWithPieces), except the
// ones that pick elements by position, which the partial copy does not
// have: ZPOPMIN, ZPOPMAX, ZREMRANGEBYRANK (and the pops propagated as
// them). A list's every write is positional (an RPUSH would land before
// the elements not yet sent), and a list's pieces are its elements as
// they were at the first piece. Such a write stops the pieces and makes
// the key dirty: the stream still carries the write to the partial copy,
// and the key is sent again (whole, or in pieces in a round that is not
// the last), replacing that copy. A write naming the key and another
// makes both dirty, as any write naming a key not yet sent. If between
// pieces the key is gone, hidden, of another type or (for the kinds
// paused in a map iteration or a listing) another object, the rest is
// not sent and the key is dirty, sent again whole or as a tombstone.
//
// TairHashes (ds.ExHash) and streams go as merged records
// (engines.Record.Merge), which carry their elements exactly (a TairHash
// field's version and expiry, a stream entry's id): a TairHash's pieces
// are its fields, expired ones not yet purged included (a paused
// iteration of its map, as a hash's), and every single-key write passes
// between them, field by field; a stream's first piece is the stream
// with its groups, ids and node layout but only its first entries, the
// others follow in id order, and every write to it stops its pieces, as
// a list's.
//
// A pkey of more than pieceElems skeys (every engine: a persistent
// engine's hashes and TairHashes, any engine's Tair prefix records) goes
// the same way: its first pieceElems skeys as its record, which replaces
// the pkey, then the next ones in skey order, read as they are when each
// is sent (after the last skey sent), as merged records. A pkey is a set
// of records of their own that every write changes skey by skey or
// whole (DEL, a type change), never by position, so every single-key
// write passes, as a hash's do.

// pieceElems is the most elements of a big key sent in one piece (a
// variable for the tests). It is above Redis's listpack sizes (128), so
// a partial sorted set keeps its -0 scores as the master's does.
var pieceElems = 2_000

// pieceState is the big key a walk is sending in pieces.
type pieceState struct {
	name walkName
	typ  engines.ValueType
	obj  engines.Object // the object the pieces come from
	// A set or a list: its members or elements after the first piece's,
	// as they were then; members[:next] were sent.
	members []string
	next    int
	// A hash, a sorted set or a TairHash: the paused iteration of its
	// map.
	pull  func() (string, string, bool)
	pullZ func() (string, float64, bool)
	pullX func() (string, *ds.ExField, bool)
	stop  func()
	// A pkey (prefix) or a stream: the last skey or entry id sent.
	prefix  bool
	after   []byte
	afterID ds.StreamID
	// skeys is a pkey's piece size after the first (0: pieceElems),
	// halved while a piece takes longer than walkSliceTime to read and
	// send and doubled back while it takes less than half: a store read
	// of 2,000 skeys took 15-25 ms on a loaded ldb, and back-to-back
	// holds that long made an event loop's batch of writes wait for
	// several (120 ms).
	skeys int
}

// pieceSkeysMin is the least a pkey's piece shrinks to.
const pieceSkeysMin = 64

// nextPieceSkeys is the size of a pkey's next piece after one of limit
// skeys took d to read and send.
func nextPieceSkeys(limit int, d time.Duration) int {
	switch {
	case d > walkSliceTime:
		return max(limit/2, min(pieceSkeysMin, pieceElems))
	case d < walkSliceTime/2:
		return min(limit*2, pieceElems)
	}
	return limit
}

// startPiecesLocked makes e (of name n) its first piece and notes the
// rest in w; false when e is not of a kind sent in pieces. A hash or a
// sorted set is walked by a paused iteration of its map (iter.Pull2),
// resumed a piece a hold: Go's map iteration allows the map to change
// between its steps (an entry removed before it is reached is not
// produced, one added may or may not be), and both the steps and the
// changes run under the bucket's lock. So no hold lists a million
// fields. A set's members are listed (a copy of its member slice) at the
// first piece: its members move within that slice as others are removed.
// A list's elements are copied at the first piece too (a copy of string
// headers: milliseconds for a million).
func (s *Server) startPiecesLocked(w *bucketWalk, n walkName, e *engines.Entry) bool {
	p := &pieceState{name: n, typ: e.Type, obj: e.Object}
	switch o := e.Object.(type) {
	case *ds.Hash:
		p.pull, p.stop = iter.Pull2(iter.Seq2[string, string](o.Range))
		first := ds.NewHash()
		for first.Len() < pieceElems {
			f, v, ok := p.pull()
			if !ok {
				break
			}
			first.Set(f, v)
		}
		e.Object = first
	case *ds.ZSet:
		p.pullZ, p.stop = iter.Pull2(iter.Seq2[string, float64](o.RangeUnordered))
		first := ds.NewZSet()
		for first.Len() < pieceElems {
			m, sc, ok := p.pullZ()
			if !ok {
				break
			}
			first.SetSigned(m, sc) // the master's score, -0 included
		}
		e.Object = first
	case *ds.Set:
		members := o.Members()
		first := ds.NewSet()
		for _, m := range members[:pieceElems] {
			first.Add(m)
		}
		p.members = members[pieceElems:]
		e.Object = first
	case *ds.List:
		elems := o.Elements()
		first := ds.NewList()
		for _, v := range elems[:pieceElems] {
			first.PushBack(v)
		}
		p.members = elems[pieceElems:]
		e.Object = first
	case *ds.ExHash:
		p.pullX, p.stop = iter.Pull2(iter.Seq2[string, *ds.ExField](o.RangeAll))
		e.Object = p.exHashPiece(o)
	case *ds.Stream:
		first := o.PieceHead(pieceElems)
		p.afterID = first.Last().ID
		e.Object = first
	default:
		return false
	}
	w.inflight = p
	s.walkPieces.Add(1)
	return true
}

// exHashPiece is the next piece of TairHash o: up to pieceElems fields
// from the paused iteration, with o's AutoExpire.
func (p *pieceState) exHashPiece(o *ds.ExHash) *ds.ExHash {
	piece := ds.NewExHash()
	piece.AutoExpire = o.AutoExpire
	for piece.Len() < pieceElems {
		f, v, ok := p.pullX()
		if !ok {
			break
		}
		piece.Set(f, *v)
	}
	return piece
}

// commutesWithPieces reports whether a single-key write (verb) to a key
// of type typ being sent in pieces may pass: it acts on the partial copy
// element by element as on the master (see above).
func commutesWithPieces(typ engines.ValueType, verb []byte) bool {
	switch typ {
	case engines.TypeHash, engines.TypeSet, engines.TypeExHash:
		return true
	case engines.TypeZSet:
		spec := command.Lookup(verb)
		return spec != nil && !positionalZSetWrites[spec.Name]
	}
	return false
}

// positionalZSetWrites pick their elements by rank: on a partial copy
// they would pick others.
var positionalZSetWrites = map[string]bool{
	"zpopmin": true, "zpopmax": true, "zremrangebyrank": true,
	"zmpop": true, "bzpopmin": true, "bzpopmax": true, "bzmpop": true,
}

// endPiecesLocked forgets w's big key (the bucket's lock held).
func (w *bucketWalk) endPiecesLocked() {
	if p := w.inflight; p != nil && p.stop != nil {
		p.stop()
	}
	w.inflight = nil
}

var (
	verbHSET  = []byte("HSET")
	verbSADD  = []byte("SADD")
	verbZADD  = []byte("ZADD")
	verbRPUSH = []byte("RPUSH")
	replVer   = []byte("TAIR.REPLVER")
)

// continuePiecesLocked adds the next piece of w's big key to c, or
// pushes it onto c's stream (the bucket's lock held; c is empty).
func (s *Server) continuePiecesLocked(c *chunker, b route.BucketID, w *bucketWalk) error {
	p := w.inflight
	k := engines.Key{Bucket: uint32(b), Area: p.name.area, Key: []byte(p.name.key), NoStats: true, NoTouch: true}
	if p.prefix {
		return s.continuePkeyLocked(c, k, w)
	}
	st := c.st
	e, err := s.eng.Get(k)
	if err != nil && !errors.Is(err, errs.ErrNotFound) {
		return err
	}
	more := false
	var cmd [][]byte
	var merged engines.Object // a piece sent as a merged record
	if err == nil && !e.Hidden && e.Type == p.typ {
		switch o := e.Object.(type) {
		case *ds.ExHash:
			if o != p.obj {
				break
			}
			piece := p.exHashPiece(o)
			merged, more = piece, piece.Len() == pieceElems
		case *ds.Stream:
			if o != p.obj {
				break
			}
			piece, m := o.PieceAfter(p.afterID, pieceElems)
			if last := piece.Last(); last != nil {
				p.afterID = last.ID
			}
			merged, more = piece, m
		case *ds.Hash:
			if o != p.obj {
				break // another object now: its fields are not the iteration's
			}
			cmd = append(make([][]byte, 0, 2+2*pieceElems), verbHSET, k.Key)
			for len(cmd) < 2+2*pieceElems {
				f, v, ok := p.pull()
				if !ok {
					break
				}
				cmd = append(cmd, []byte(f), []byte(v))
			}
			more = len(cmd) == 2+2*pieceElems
		case *ds.ZSet:
			if o != p.obj {
				break
			}
			cmd = append(make([][]byte, 0, 2+2*pieceElems), verbZADD, k.Key)
			for len(cmd) < 2+2*pieceElems {
				m, sc, ok := p.pullZ()
				if !ok {
					break
				}
				cmd = append(cmd, pieceScore(sc), []byte(m))
			}
			more = len(cmd) == 2+2*pieceElems
		case *ds.Set:
			end := min(p.next+pieceElems, len(p.members))
			cmd = append(make([][]byte, 0, 2+end-p.next), verbSADD, k.Key)
			for _, m := range p.members[p.next:end] {
				if o.Has(m) {
					cmd = append(cmd, []byte(m))
				}
			}
			p.next = end
			more = end < len(p.members)
		case *ds.List:
			if o != p.obj {
				break // (a write to it stopped the pieces already)
			}
			end := min(p.next+pieceElems, len(p.members))
			cmd = append(make([][]byte, 0, 2+end-p.next), verbRPUSH, k.Key)
			for _, v := range p.members[p.next:end] {
				cmd = append(cmd, []byte(v))
			}
			p.next = end
			more = end < len(p.members)
		}
	}
	if merged != nil {
		if merged.Len() > 0 {
			rec := engines.Record{Area: p.name.area, Key: k.Key, Merge: true,
				Entry: engines.Entry{Type: e.Type, Object: merged, Version: e.Version, ExpireAt: e.ExpireAt, Flags: e.Flags}}
			if err := c.add(&rec); err != nil {
				return err
			}
		}
		if !more {
			w.endPiecesLocked()
		}
		return nil
	}
	if cmd == nil {
		// Gone, hidden or replaced: send it again, whole or as a
		// tombstone.
		w.endPiecesLocked()
		w.dirty[p.name] = struct{}{}
		return nil
	}
	if len(cmd) > 2 {
		ver := [][]byte{replVer, strconv.AppendInt(nil, e.Version, 10)}
		st.push(b, p.name.area, kindCmds, cmdsPayload([][][]byte{ver, cmd}))
	}
	if !more {
		w.endPiecesLocked()
	}
	return nil
}

// continuePkeyLocked adds the next skeys of w's big pkey (k), after the
// last one sent, to c as a merged record.
func (s *Server) continuePkeyLocked(c *chunker, k engines.Key, w *bucketWalk) error {
	p := w.inflight
	begun := time.Now()
	limit := cmp.Or(p.skeys, pieceElems)
	// The range starts at the last skey sent, inclusive.
	kvs, err := s.eng.PrefixRange(k, engines.RangeOptions{Start: p.after, Limit: limit + 2})
	if err != nil && !errors.Is(err, errs.ErrNotFound) {
		return err
	}
	if len(kvs) > 0 && string(kvs[0].Key) == string(p.after) {
		kvs = kvs[1:]
	}
	more := len(kvs) > limit
	if more {
		kvs = kvs[:limit]
	}
	if len(kvs) > 0 {
		p.after = slices.Clone(kvs[len(kvs)-1].Key)
		if err := c.add(&engines.Record{Area: p.name.area, Key: k.Key, Prefix: kvs, Merge: true}); err != nil {
			return err
		}
	}
	p.skeys = nextPieceSkeys(limit, time.Since(begun))
	if !more {
		w.endPiecesLocked()
	}
	return nil
}

// pieceScore is a score as ZADD parses it back to the same float64 (the
// shortest exact form; infinities as Redis spells them).
func pieceScore(f float64) []byte {
	switch {
	case math.IsInf(f, 1):
		return []byte("inf")
	case math.IsInf(f, -1):
		return []byte("-inf")
	}
	return strconv.AppendFloat(nil, f, 'g', -1, 64)
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

// walkSliceTime bounds the time of one slice, whatever its names: on ldb
// a name costs a read of the store (some 30 us), so 1,024 of them held
// the lock for 25-37 ms, and an event loop whose batch held writes to
// the bucket for four connections waited out four such holds in a row
// (140 ms) before it answered any of them.
const walkSliceTime = 5 * time.Millisecond

// sliceOpen reports whether a slice begun at start (names queue[start:]
// at begun) takes the name at qpos: its first always, the next ones while
// the slice's bounds of names, bytes and time hold.
func sliceOpen(c *chunker, start, qpos int, begun time.Time) bool {
	return qpos == start || qpos-start < walkSliceNames && c.bytes < walkSliceBytes && time.Since(begun) < walkSliceTime
}

// dirtySorted returns w's dirty names, sorted.
func (w *bucketWalk) dirtySorted() []walkName {
	out := make([]walkName, 0, len(w.dirty))
	for n := range w.dirty {
		out = append(out, n)
	}
	slices.SortFunc(out, cmpWalkName)
	return out
}

// walkCursor is where a walk is: the names it sends (the listed ones,
// then a round of dirty ones), how far it got, and the digest item a
// resumed walk waits for before its dirty rounds.
type walkCursor struct {
	queue  []walkName
	qpos   int
	listed bool
	round  int
	// tail: a resumed walk pushed its last digest (to +inf); wait: it
	// waits for that digest's report.
	tail bool
	wait *entry
}

// walkBucket sends the bucket's keys onto st (see above) and returns the
// number of records sent and of names digested (a resumed walk); m.sent
// counts the names sent whole. The stream is attached, with w.
//
// It runs in holds of the bucket's lock: first the listed names, a slice
// a hold, then rounds of the dirty names, the last of them in one hold.
// A big hash or set (in-memory engines) takes a hold a piece.
func (m *migration) walkBucket(st *stream, w *bucketWalk) (recs, digested int, err error) {
	s, b := m.s, m.move.Bucket
	bk := s.bucket(b)
	names, err := s.listBucketNames(b)
	if err != nil {
		return 0, 0, err
	}
	bk.lock()
	w.names = names
	bk.unlock()
	defer func() {
		bk.lock()
		w.endPiecesLocked() // a walk that failed may have one paused
		bk.unlock()
	}()
	c := &chunker{st: st, b: b}
	cur := &walkCursor{queue: names, listed: true}
	for {
		ready := func() bool { return st.pending() <= walkWindow }
		if e := cur.wait; e != nil {
			// Every digest's report is read before the dirty rounds.
			ready = func() bool { return e.fin.Load() }
		}
		if err := m.await(st, ready, time.Time{}, false); err != nil {
			return c.recs, digested, err
		}
		s.bulkMu.Lock()
		bk.lock()
		held := time.Now()
		done, n, err := m.walkHoldLocked(c, w, cur)
		d := time.Since(held)
		if int64(d) > s.walkMaxHold.Load() {
			s.walkMaxHold.Store(int64(d)) // the walks of one node: racy max, for the benchmark
		}
		if d > 20*time.Millisecond {
			m.log.Debug("long walk hold", "held", d, "at", held.Format("15:04:05.000"), "done", done, "names", cur.qpos, "queue", len(cur.queue), "listed", cur.listed)
		}
		bk.unlock()
		s.bulkMu.Unlock()
		digested += n
		m.sent.Store(int64(c.names))
		// The heartbeat's progress: what the destination acknowledged,
		// records and names digests covered (a resumed walk sends most
		// of its records in its dirty rounds, still in here).
		m.keys.Store(st.recsAcked.Load())
		s.walkSlices.Add(1)
		if err != nil || done {
			return c.recs, digested, err
		}
	}
}

// walkHoldLocked is one hold of walkBucket's (the bucket's lock held):
// the next piece of a big key, or the next slice of names; it returns
// whether the walk is through and the names it digested.
func (m *migration) walkHoldLocked(c *chunker, w *bucketWalk, cur *walkCursor) (bool, int, error) {
	s, b := m.s, m.move.Bucket
	if s.bucket(b).mig != m || m.walk != w {
		return false, 0, errMigrationStopped
	}
	if w.resume {
		if err := m.confirmDigestsLocked(w); err != nil {
			return false, 0, err
		}
	}
	cur.wait = nil
	final := !cur.listed && cur.round >= walkRounds
	if final {
		// Nothing writes during this hold: what is dirty now is all.
		cur.queue, cur.qpos = w.dirtySorted(), 0
	}
	c.bytes = 0
	digested := 0
	switch {
	case w.inflight != nil:
		if err := s.continuePiecesLocked(c, b, w); err != nil {
			return false, 0, err
		}
	case cur.listed && w.resume && !cur.tail:
		// (An empty list still sends one digest, from -inf to +inf.)
		n, err := m.digestSliceLocked(c, w, cur.queue, &cur.qpos)
		if err != nil {
			return false, 0, err
		}
		digested = n
		cur.tail = cur.qpos == len(cur.queue)
	default:
		begun := time.Now()
		for start := cur.qpos; cur.qpos < len(cur.queue) && (final || sliceOpen(c, start, cur.qpos, begun)); {
			n := cur.queue[cur.qpos]
			_, d := w.dirty[n]
			cur.qpos++
			if !cur.listed && !d {
				continue // sent again already
			}
			started, err := s.sendNameLocked(c, w, b, n, d || !cur.listed, !final)
			if err != nil {
				return false, 0, err
			}
			delete(w.dirty, n)
			if started {
				break // its next pieces take holds of their own
			}
		}
	}
	c.flush()
	if cur.listed && !w.resume {
		w.pos = cur.qpos
	}
	if w.inflight != nil || cur.qpos < len(cur.queue) {
		return false, digested, nil
	}
	// The listed names, or a round of dirty ones, are through.
	if cur.listed {
		if len(w.digests) > 0 {
			// A resumed walk's names are not all confirmed: the dirty
			// rounds (and w.done) wait for the last report.
			cur.wait = w.digests[len(w.digests)-1].e
			return false, digested, nil
		}
		cur.listed = false
		w.done = true
	} else {
		cur.round++
	}
	if w.tainted {
		return false, digested, errors.New("a write of unknown keys ran during the walk")
	}
	if final || len(w.dirty) == 0 {
		w.active, w.dirty = false, nil
		return true, digested, nil
	}
	cur.queue, cur.qpos = w.dirtySorted(), 0
	return false, digested, nil
}

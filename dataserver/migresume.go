package dataserver

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/tairkv/tair/engines"
	"github.com/tairkv/tair/internal/errs"
	"github.com/tairkv/tair/internal/redisnum"
	"github.com/tairkv/tair/internal/route"
	"github.com/tairkv/tair/resp"
)

// # Resuming a move
//
// A new attempt of a move (the destination or the source restarted, an
// attempt failed) used to begin with "begin", on which the destination
// dropped its partial copy, and send every record again. A persistent
// destination that restarted, and any destination whose source
// restarted, still holds most of the bucket; the new attempt resumes it
// instead when that pays (resumes):
//
//	TAIR.MIGHELD <bucket>   -> :<keys this node holds of the bucket>
//
// The attempt then begins with "begin keep": the destination keeps its
// copy and lists its names of the bucket, sorted as the walk sorts its
// own. Each slice of the walk goes as a digest item instead of records:
// it covers the walk names (lo, hi] (the first from -inf, the last to
// +inf) and lists, in order, every name of the slice the source holds,
// each with nameDigest of it, but a name the slice sends whole (a dirty
// one: its record or tombstone goes in the same hold) is listed marked
// so. The destination, applying the item in stream order
// (applyDigestLocked), deletes every name of its list in the interval
// that the item does not list, and reports the listed names whose digest
// differs from its own (or that it lacks) on the item's acknowledgement
// (+ACK ... <seq>:<indexes>, parseAck). The source marks them dirty as it
// reads the reports, under the bucket's lock, before it counts the
// slice's names as sent (confirmDigestsLocked); an item acknowledged
// without its report (on a reconnect's hello) makes all its names dirty,
// and one refused fails the attempt. Once every digest is confirmed, the walk's dirty rounds
// send them as any dirty name. migwalk.go's header says why the copy is
// then exact.

// resumeShare: an attempt resumes the destination's copy when it holds
// at least one key of the bucket per resumeShare keys of the source's.
// A digest costs the key and 9 bytes on the wire and a read on each
// side; a record the destination already holds, the whole record and a
// write there. Below an eighth, the digests of every name cost about
// what the few records saved would (at a few hundred bytes a record),
// and the needs would be most of the copy, sent in the walk's dirty
// rounds rather than its slices: a plain copy is as good and simpler.
const resumeShare = 8

// resumes reports whether an attempt resumes a destination that holds
// held keys of a bucket of which the source holds have.
func resumes(held, have int64) bool {
	return held > 0 && held*resumeShare >= have
}

// bucketKeys is the number of keys (hidden ones included) this node
// holds of bucket b, from the engine's counters.
func (s *Server) bucketKeys(b route.BucketID) int64 {
	var n int64
	s.eng.CountKeys([]uint32{uint32(b)}, func(_ uint16, c engines.KeyCounts) { n += c.Keys + c.Hidden })
	return n
}

// migHeldRequest serves TAIR.MIGHELD <bucket> -> :<keys held>.
func (s *Server) migHeldRequest(out []byte, args [][]byte) []byte {
	if len(args) != 2 {
		return resp.AppendError(out, "ERR wrong number of arguments for 'tair.migheld' command")
	}
	b, ok := redisnum.ParseUint(args[1])
	// A node that just started may have no table yet: what it holds is
	// known all the same.
	rt := s.rt.Load()
	if !ok || b > math.MaxUint32 || rt != nil && b >= uint64(rt.t.Buckets) {
		return resp.AppendError(out, "ERR bad bucket")
	}
	return resp.AppendInt(out, s.bucketKeys(route.BucketID(b)))
}

// destinationHeld asks the move's destination how many keys of the
// bucket it holds (an error from one of an earlier version, which
// knows no TAIR.MIGHELD: the attempt copies from zero). On a connection
// of its own: one an attempt ago, pooled, may lead to the process the
// destination was before it restarted, which is what attempts follow.
func (m *migration) destinationHeld() (int64, error) {
	c, err := dialPeer(m.move.To, time.Second)
	if err != nil {
		return 0, err
	}
	defer func() { _ = c.Close() }()
	raw, err := c.roundTrip(resp.AppendCommand(nil, []byte("TAIR.MIGHELD"),
		strconv.AppendUint(nil, uint64(m.move.Bucket), 10)), 5*time.Second)
	if err != nil {
		return 0, err
	}
	return replyInt(raw)
}

// resumeMode decides whether the attempt about to begin resumes the
// destination's copy.
func (m *migration) resumeMode() bool {
	held, err := m.destinationHeld()
	if err != nil {
		m.log.Info("the destination did not say what it holds: copying from zero", "err", err)
		return false
	}
	have := m.s.bucketKeys(m.move.Bucket)
	ok := resumes(held, have)
	if held > 0 {
		m.log.Info("the destination holds part of the bucket", "held", held, "source", have, "resume", ok)
	}
	return ok
}

// nameDigest digests name n of bucket b as it reads now (the bucket's
// lock held): the sum of recordHash over its plain record and its pkey's
// skeys, whichever exist; held is false when neither does. An expired
// record reads as missing (Get, PrefixRange) and a stored expiry is part
// of recordHash, so two copies agree on a name only if they agree on its
// expiry too. size is about the bytes read. With pieces, a name that
// would go in pieces (bigPlain, or a pkey of more than pieceElems skeys)
// is not digested: big says so.
func (s *Server) nameDigest(d *xxhash.Digest, b route.BucketID, n walkName, pieces bool) (sum uint64, held, big bool, size int, err error) {
	limit := 0
	if pieces {
		limit = pieceElems + 1
	}
	k, e, kvs, err := s.readNameLocked(b, n, limit)
	if err != nil {
		return 0, false, false, 0, err
	}
	if pieces && (len(kvs) > pieceElems || e != nil && s.bigPlain(e)) {
		return 0, true, true, 0, nil
	}
	if e != nil {
		held = true
		sum += recordHash(d, n.area, k.Key, nil, e)
		size += len(e.Value)
	}
	for i := range kvs {
		held = true
		sum += recordHash(d, n.area, k.Key, kvs[i].Key, &kvs[i].Entry)
		size += len(kvs[i].Key) + len(kvs[i].Entry.Value)
	}
	return sum, held, false, size + len(n.key), nil
}

// digestItem is a digest item's content (kindDigest).
type digestItem struct {
	lo, hi *walkName // the interval (lo, hi]; nil: -inf, +inf
	names  []digestName
}

// digestName is one name a digest item lists.
type digestName struct {
	name walkName
	sum  uint64
	// whole: sent whole in the same hold (its record or tombstone); the
	// destination leaves it be.
	whole bool
}

const (
	digestHasLo = 1 << iota
	digestHasHi
)

// encode appends the item, as the payload's one bulk string.
func (d *digestItem) payload() payload {
	var b []byte
	flags := byte(0)
	if d.lo != nil {
		flags |= digestHasLo
	}
	if d.hi != nil {
		flags |= digestHasHi
	}
	b = append(b, flags)
	for _, n := range []*walkName{d.lo, d.hi} {
		if n != nil {
			b = appendDigestName(b, *n)
		}
	}
	b = binary.AppendUvarint(b, uint64(len(d.names)))
	for _, dn := range d.names {
		b = appendDigestName(b, dn.name)
		if dn.whole {
			b = append(b, 1)
			continue
		}
		b = append(b, 0)
		b = binary.LittleEndian.AppendUint64(b, dn.sum)
	}
	return payload{data: resp.AppendBulk(make([]byte, 0, len(b)+16), b), nargs: 1}
}

func appendDigestName(b []byte, n walkName) []byte {
	b = binary.AppendUvarint(b, uint64(n.area))
	b = binary.AppendUvarint(b, uint64(len(n.key)))
	return append(b, n.key...)
}

var errBadDigest = errors.New("malformed digest item")

// decodeDigest decodes a digest item and checks that its names are in
// walk order within its interval.
func decodeDigest(b []byte) (*digestItem, error) {
	if len(b) < 1 {
		return nil, errBadDigest
	}
	flags := b[0]
	b = b[1:]
	d := &digestItem{}
	var err error
	if flags&digestHasLo != 0 {
		var n walkName
		if n, b, err = readDigestName(b); err != nil {
			return nil, err
		}
		d.lo = &n
	}
	if flags&digestHasHi != 0 {
		var n walkName
		if n, b, err = readDigestName(b); err != nil {
			return nil, err
		}
		d.hi = &n
	}
	count, w := binary.Uvarint(b)
	if w <= 0 || count > uint64(len(b)) {
		return nil, errBadDigest
	}
	b = b[w:]
	d.names = make([]digestName, 0, count)
	prev := d.lo
	for range count {
		var dn digestName
		if dn.name, b, err = readDigestName(b); err != nil {
			return nil, err
		}
		if len(b) < 1 {
			return nil, errBadDigest
		}
		dn.whole = b[0] == 1
		b = b[1:]
		if !dn.whole {
			if len(b) < 8 {
				return nil, errBadDigest
			}
			dn.sum = binary.LittleEndian.Uint64(b)
			b = b[8:]
		}
		if prev != nil && cmpWalkName(*prev, dn.name) >= 0 || d.hi != nil && cmpWalkName(dn.name, *d.hi) > 0 {
			return nil, errBadDigest
		}
		d.names = append(d.names, dn)
		prev = &d.names[len(d.names)-1].name
	}
	if len(b) != 0 {
		return nil, errBadDigest
	}
	return d, nil
}

func readDigestName(b []byte) (walkName, []byte, error) {
	area, w := binary.Uvarint(b)
	if w <= 0 || area > route.MaxArea {
		return walkName{}, nil, errBadDigest
	}
	b = b[w:]
	n, w := binary.Uvarint(b)
	if w <= 0 || n > uint64(len(b)-w) {
		return walkName{}, nil, errBadDigest
	}
	b = b[w:]
	return walkName{area: uint16(area), key: string(b[:n])}, b[n:], nil
}

// resumeCopy is what a destination keeps of an incoming copy that
// resumes the one it holds (guarded by the bucket's lock): its own
// names of the bucket at the "begin keep", sorted in walk order, and how
// far the digests got. The names it creates later are written through
// the stream, which makes them dirty at the source (migwalk.go): they
// need no place here.
type resumeCopy struct {
	session string
	names   []walkName
	next    int // names[:next] were at or before an applied digest's end
}

// beginResumeLocked starts an incoming copy that resumes this node's
// copy of bucket b (the bucket's lock held). The copy's records are
// indexed as they come, and what it keeps stays indexed as it was (the
// field expiry index of a persistent engine's data that predates the
// process is built when the node first masters the bucket): s.fx is
// left alone. A copy whose names cannot be listed is dropped as a plain
// begin drops it: every digest then reports every name.
func (s *Server) beginResumeLocked(bk *bucket, session string) {
	b := bk.id
	names, err := s.listBucketNames(b)
	if err != nil {
		s.log.Error("listing a bucket's names to resume an incoming copy: dropping it instead", "bucket", b, "err", err)
		if err := s.eng.DeleteBucket(uint32(b)); err != nil {
			s.log.Error("clearing bucket for an incoming migration", "bucket", b, "err", err)
		}
		s.fx.drop(uint32(b))
		s.fx.markScanned(uint32(b))
		names = nil
	}
	bk.resume = &resumeCopy{session: session, names: names}
}

// forgetResume drops what bk kept of a resumed incoming copy (its names
// may be many), once the move that sent it is no longer in the table.
func (s *Server) forgetResume(bk *bucket) {
	bk.lock()
	bk.resume = nil
	bk.unlock()
}

// applyDigestLocked applies digest item d of an incoming copy that
// resumes this node's copy of bucket b (the bucket's lock held): every
// name of r in d's interval that d does not list is deleted, and the
// indexes of d's names (not sent whole) whose digest here differs, or
// that this node lacks, are returned.
func (s *Server) applyDigestLocked(b route.BucketID, r *resumeCopy, d *digestItem) (needs []int) {
	for r.next < len(r.names) && d.lo != nil && cmpWalkName(r.names[r.next], *d.lo) <= 0 {
		r.next++ // at or before lo: an earlier digest's
	}
	j := 0
	for r.next < len(r.names) && (d.hi == nil || cmpWalkName(r.names[r.next], *d.hi) <= 0) {
		n := r.names[r.next]
		r.next++
		for j < len(d.names) && cmpWalkName(d.names[j].name, n) < 0 {
			j++
		}
		if j < len(d.names) && d.names[j].name == n {
			continue // listed: compared below
		}
		if err := s.dropNameLocked(b, n); err != nil {
			s.noteRestoreError(b, err)
		}
	}
	var h xxhash.Digest
	for i, dn := range d.names {
		if dn.whole {
			continue
		}
		sum, held, _, _, err := s.nameDigest(&h, b, dn.name, false)
		if err != nil || !held || sum != dn.sum {
			needs = append(needs, i)
		}
	}
	return needs
}

// dropNameLocked deletes name n of bucket b, in whichever namespace it
// exists here, as a copy deletes: with a tombstone record (migwalk.go).
func (s *Server) dropNameLocked(b route.BucketID, n walkName) error {
	k := engines.Key{Bucket: uint32(b), Area: n.area, Key: []byte(n.key), NoStats: true, NoTouch: true}
	_, err := s.eng.Get(k)
	switch {
	case err == nil:
		if err := s.restoreMigrated(b, plainTombstone(n.area, k.Key)); err != nil {
			return err
		}
	case !errors.Is(err, errs.ErrNotFound):
		return err
	}
	kvs, err := s.eng.PrefixRange(k, engines.RangeOptions{Limit: 1})
	if err != nil && !errors.Is(err, errs.ErrNotFound) {
		return err
	}
	if len(kvs) > 0 {
		return s.restoreMigrated(b, pkeyTombstone(n.area, k.Key))
	}
	return nil
}

// applyDigestItem applies digest item it of session (the bucket's lock
// held) and appends its report for the ACK to needs ("<seq>:<indexes>",
// none when every name matched). false: refused (no resumed copy of
// this session, or a malformed item): the source counts all its names
// as needed.
func (s *Server) applyDigestItem(bk *bucket, it item, session string, needs *[]string) bool {
	r := bk.resume
	if r == nil || r.session != session {
		s.log.Warn("a digest item without a resumed copy", "bucket", it.bucket)
		return false
	}
	d, err := decodeDigest(it.record)
	if err != nil {
		s.noteRestoreError(it.bucket, err)
		return false
	}
	if idx := s.applyDigestLocked(it.bucket, r, d); len(idx) > 0 {
		*needs = append(*needs, strconv.FormatUint(it.seq, 10)+":"+string(appendRanges(nil, idx)))
	}
	if d.hi == nil {
		bk.resume = nil // the last digest: the list is done with
	}
	return true
}

// appendRanges appends ascending indexes as "a-b,c,...".
func appendRanges(b []byte, idx []int) []byte {
	for i := 0; i < len(idx); {
		j := i
		for j+1 < len(idx) && idx[j+1] == idx[j]+1 {
			j++
		}
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(idx[i]), 10)
		if j > i {
			b = strconv.AppendInt(append(b, '-'), int64(idx[j]), 10)
		}
		i = j + 1
	}
	return b
}

// parseNeeds parses an ACK's reports, "<seq>:<ranges>;...", into the
// needed indexes by item.
func parseNeeds(f string) (map[uint64][]int, error) {
	out := map[uint64][]int{}
	for _, rep := range strings.Split(f, ";") {
		seqS, ranges, ok := strings.Cut(rep, ":")
		seq, err := strconv.ParseUint(seqS, 10, 64)
		if !ok || err != nil {
			return nil, fmt.Errorf("dataserver: bad digest report %q", rep)
		}
		var idx []int
		for _, r := range strings.Split(ranges, ",") {
			a, z, isRange := strings.Cut(r, "-")
			lo, err1 := strconv.Atoi(a)
			hi := lo
			var err2 error
			if isRange {
				hi, err2 = strconv.Atoi(z)
			}
			if err1 != nil || err2 != nil || lo < 0 || hi < lo || hi-lo > 1<<20 {
				return nil, fmt.Errorf("dataserver: bad digest report %q", rep)
			}
			for i := lo; i <= hi; i++ {
				idx = append(idx, i)
			}
		}
		out[seq] = idx
	}
	return out, nil
}

// digestReport is what the destination said of a digest item: the
// indexes of the names it needs. known is false when the item was
// acknowledged without it (a reconnect's hello).
type digestReport struct {
	needs []int
	known bool
}

// sentDigest is a digest item the walk pushed and has not confirmed.
type sentDigest struct {
	e     *entry
	names []walkName // as the item lists them
	count int        // of them, the ones digested (not sent whole)
	end   int        // the walk's position after the item's names
}

// confirmDigestsLocked reads the reports of the digest items the
// destination acknowledged, in order (the bucket's lock held): the
// names it needs become dirty, and then the item's names count as sent
// (w.pos). An item acknowledged without its report makes all its names
// dirty; one the destination refused (it deleted nothing) fails the
// attempt.
func (m *migration) confirmDigestsLocked(w *bucketWalk) error {
	for len(w.digests) > 0 {
		sd := w.digests[0]
		if !sd.e.fin.Load() {
			return nil
		}
		if sd.e.err != nil {
			return fmt.Errorf("the destination did not apply a digest: %w", sd.e.err)
		}
		if rep := sd.e.report; rep == nil || !rep.known {
			for _, n := range sd.names {
				w.dirty[n] = struct{}{}
			}
			m.needed.Add(int64(sd.count))
		} else {
			for _, i := range rep.needs {
				if i < len(sd.names) {
					w.dirty[sd.names[i]] = struct{}{}
				}
			}
			m.needed.Add(int64(len(rep.needs)))
			m.skipped.Add(int64(sd.count - len(rep.needs)))
			m.s.m.migSkipped.Add(float64(sd.count - len(rep.needs)))
		}
		w.pos = sd.end
		w.digests[0] = sentDigest{}
		w.digests = w.digests[1:]
	}
	return nil
}

// digestSliceLocked is a slice of a resumed walk (the bucket's lock
// held): the next listed names of queue from *qpos, as one digest item;
// a dirty name goes whole (its record, or a tombstone), listed as such.
// It returns the number of names digested.
func (m *migration) digestSliceLocked(c *chunker, w *bucketWalk, queue []walkName, qpos *int) (int, error) {
	s, b := m.s, m.move.Bucket
	start := *qpos
	d := &digestItem{}
	if start > 0 {
		d.lo = &queue[start-1]
	}
	var h xxhash.Digest
	count := 0
	begun := time.Now()
	for *qpos < len(queue) && sliceOpen(c, start, *qpos, begun) {
		n := queue[*qpos]
		*qpos++
		sum, held, big, size, err := s.nameDigest(&h, b, n, true)
		if err != nil {
			return 0, err
		}
		if _, dirty := w.dirty[n]; dirty || big {
			// A big key goes whole too (in pieces): its digest would
			// read all of it under one hold of the lock.
			started, err := s.sendNameLocked(c, w, b, n, true, true)
			if err != nil {
				return 0, err
			}
			delete(w.dirty, n)
			d.names = append(d.names, digestName{name: n, whole: true})
			if started {
				break // its next pieces take holds of their own
			}
			continue
		}
		c.bytes += size
		if held {
			d.names = append(d.names, digestName{name: n, sum: sum})
			count++
		}
	}
	if *qpos < len(queue) {
		d.hi = &queue[*qpos-1]
	}
	c.flush()
	p := d.payload()
	p.recs = count
	names := make([]walkName, len(d.names))
	for i := range d.names {
		names[i] = d.names[i].name
	}
	e := c.st.push(b, 0, kindDigest, p)
	w.digests = append(w.digests, sentDigest{e: e, names: names, count: count, end: *qpos})
	return count, nil
}

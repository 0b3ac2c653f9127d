package dataserver

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/tairkv/tair/engines"
	"github.com/tairkv/tair/engines/ds"
	"github.com/tairkv/tair/internal/redisnum"
	"github.com/tairkv/tair/internal/route"
	"github.com/tairkv/tair/resp"
)

// # A moved bucket's checksum
//
// Before a move reports Done, with the bucket frozen and every item of
// the move's stream applied by the destination, both sides digest the
// bucket (or snapshots taken then: "Verified off the freeze" below) and
// the attempt fails (and starts over) when they differ:
//
//	TAIR.MIGSUM <bucket> <cutoff-ms>   -> +<records> <sum, hex>
//
// The digest is a sum (mod 2^64) of one xxhash per record (a plain key,
// or one skey of a pkey) over its area, key, skey, type, version, expiry,
// hidden bit, flags and value, so it does not depend on the order the
// records are visited in. An object's value is digested by content: a
// hash's fields and a set's members summed (kept by the object as it
// changes, ds.Hash.ContentSum: reading it costs nothing), a list's
// elements and a sorted set's members in their order; a TairHash or a
// stream only by its length (their encodings depend on more than their content; the
// version, which every write changes, stands for the rest). Records
// expiring before cutoff (a few seconds after the source's clock) count
// on neither side: they may be reclaimed on one and not yet on the
// other. A destination whose clock is ahead of the source's by more than
// that (its records expire earlier) digests from a cutoff as far past
// its own clock and names it in its reply:
//
//	-> +<records> <sum, hex> <cutoff-ms it used>
//
// and the source digests again from it; without that, a skew past the
// margin failed every attempt of a bucket holding keys with a TTL, and
// the move started over for as long as the clocks stayed apart. Only a
// move whose source is the bucket's master verifies: a slave copy's
// writes keep coming while it moves.

// # Verified off the freeze (engines with snapshots)
//
// Digesting a big bucket of a persistent engine takes seconds (ldb reads
// every record: ~2.7 s for a million skeys), and under the freeze every
// write to the bucket waited that long. An engine that takes snapshots
// (engines.SnapshotOf: ldb) is verified at the freeze's point but not
// under it: with the bucket frozen and the stream drained, the source
// snapshots its engine and has the destination snapshot its own
//
//	TAIR.MIGSNAP <bucket>                 -> +<snapshot id>
//
// then lets writes through again, synchronously to the destination (as
// after Done), while both digest their snapshots
//
//	TAIR.MIGSUM <bucket> <cutoff-ms> <snapshot id>
//
// (the destination's snapshot is released after it is digested, or
// after migSnapTTL unclaimed). Equal digests say the copies were equal at
// that point; every write since went to both, in order, as it does to a
// slave. The bucket is frozen again only to drain those and report Done.

// migSnapTTL is how long a destination keeps a snapshot nobody digests.
const migSnapTTL = time.Minute

// migSnapsMax bounds the snapshots a destination keeps at once (each
// pins the engine's files until released): a node receives a handful
// of moves at a time.
const migSnapsMax = 64

var errTooManySnaps = errors.New("ERR too many snapshots open")

// migSnaps are a destination's snapshots for moves' checksums.
type migSnaps struct {
	mu   sync.Mutex
	next uint64
	m    map[uint64]engines.Snapshot
}

// add keeps snap for migSnapTTL and returns its id; it fails when
// migSnapsMax are kept already.
func (r *migSnaps) add(snap engines.Snapshot) (uint64, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.m) >= migSnapsMax {
		return 0, errTooManySnaps
	}
	if r.m == nil {
		r.m = map[uint64]engines.Snapshot{}
	}
	r.next++
	id := r.next
	r.m[id] = snap
	time.AfterFunc(migSnapTTL, func() {
		if snap := r.take(id); snap != nil {
			_ = snap.Close()
		}
	})
	return id, nil
}

// take removes snapshot id from r and returns it (nil when unknown).
func (r *migSnaps) take(id uint64) engines.Snapshot {
	r.mu.Lock()
	defer r.mu.Unlock()
	snap := r.m[id]
	delete(r.m, id)
	return snap
}

// migSnapRequest serves TAIR.MIGSNAP <bucket>.
func (s *Server) migSnapRequest(out []byte, args [][]byte) []byte {
	if len(args) != 2 {
		return resp.AppendError(out, "ERR wrong number of arguments for 'tair.migsnap' command")
	}
	b, ok := redisnum.ParseUint(args[1])
	if rt := s.rt.Load(); !ok || rt == nil || b >= uint64(rt.t.Buckets) {
		return resp.AppendError(out, "ERR bad bucket")
	}
	snap, ok, err := engines.SnapshotOf(s.eng)
	switch {
	case err != nil:
		return resp.AppendErr(out, err)
	case !ok:
		return resp.AppendError(out, "ERR this engine takes no snapshots")
	}
	id, err := s.migSnaps.add(snap)
	if err != nil {
		_ = snap.Close()
		return resp.AppendError(out, err.Error())
	}
	return resp.AppendStatus(out, strconv.FormatUint(id, 10))
}

// sumCutoffAhead is how far past the source's clock records must live
// to be digested.
const sumCutoffAhead = 5 * time.Second

// snapSumSlice is how long a paced digest reads before it rests as long.
const snapSumSlice = 5 * time.Millisecond

// bucketSum digests bucket b's records that live past cutoff (unix ms),
// read by forEach (the engine's, or a snapshot's). Paced, it rests as
// long as it read, a snapSumSlice at a time: a snapshot's digest runs while the node
// serves, writes to the moving bucket among them (synchronously to the
// destination, which digests too), and a digest of a million records
// taking a core for seconds made them wait.
func bucketSum(forEach func(uint32, func(*engines.Record) error) error, b route.BucketID, cutoff int64, paced bool) (n int64, sum uint64, err error) {
	var d xxhash.Digest
	one := func(area uint16, key, skey []byte, e *engines.Entry) {
		if e.ExpireAt != 0 && e.ExpireAt <= cutoff {
			return
		}
		n++
		sum += recordHash(&d, area, key, skey, e)
	}
	slice := time.Now()
	err = forEach(uint32(b), func(r *engines.Record) error {
		if paced {
			if took := time.Since(slice); took >= snapSumSlice {
				time.Sleep(took)
				slice = time.Now()
			}
		}
		if r.Prefix == nil {
			one(r.Area, r.Key, nil, &r.Entry)
			return nil
		}
		for i := range r.Prefix {
			one(r.Area, r.Key, r.Prefix[i].Key, &r.Prefix[i].Entry)
		}
		return nil
	})
	return n, sum, err
}

// recordHash is one record's hash in a bucket's digest (see above): a
// plain key (skey nil) or one skey of a pkey. A resumed move compares
// names by the same hashes (migresume.go), so that "equal" means one
// thing to both. d is scratch.
func recordHash(d *xxhash.Digest, area uint16, key, skey []byte, e *engines.Entry) uint64 {
	var buf [8]byte
	put := func(v uint64) {
		binary.LittleEndian.PutUint64(buf[:], v)
		_, _ = d.Write(buf[:])
	}
	d.Reset()
	put(uint64(area))
	put(uint64(len(key)))
	_, _ = d.Write(key)
	put(uint64(len(skey)))
	_, _ = d.Write(skey)
	hidden := uint64(0)
	if e.Hidden {
		hidden = 1
	}
	put(uint64(e.Type)<<8 | hidden)
	put(uint64(e.Version))
	put(uint64(e.ExpireAt))
	put(uint64(e.Flags))
	if e.Object == nil {
		put(uint64(len(e.Value)))
		_, _ = d.Write(e.Value)
	} else {
		put(objectSum(e.Object))
	}
	return d.Sum64()
}

// objectSum digests an object's content (see above).
func objectSum(o engines.Object) uint64 {
	switch o := o.(type) {
	case *ds.Hash:
		return o.ContentSum()
	case *ds.Set:
		return o.ContentSum()
	case *ds.List, *ds.ZSet:
		b, err := o.MarshalBinary()
		if err != nil {
			return 0
		}
		return xxhash.Sum64(b)
	}
	return uint64(o.Len())
}

// migSumRequest serves TAIR.MIGSUM <bucket> <cutoff-ms> [<snapshot id>].
func (s *Server) migSumRequest(out []byte, args [][]byte) []byte {
	if len(args) != 3 && len(args) != 4 {
		return resp.AppendError(out, "ERR wrong number of arguments for 'tair.migsum' command")
	}
	b, ok1 := redisnum.ParseUint(args[1])
	cutoff, ok2 := redisnum.ParseInt(args[2])
	rt := s.rt.Load()
	if !ok1 || !ok2 || rt == nil || b >= uint64(rt.t.Buckets) {
		return resp.AppendError(out, "ERR bad bucket or cutoff")
	}
	forEach := s.eng.ForEach
	if len(args) == 4 {
		id, ok := redisnum.ParseUint(args[3])
		var snap engines.Snapshot
		if ok {
			snap = s.migSnaps.take(id)
		}
		if snap == nil {
			return resp.AppendError(out, "ERR no such snapshot")
		}
		defer snap.Close()
		forEach = snap.ForEach
	}
	// A clock a few ms ahead (the request's own trip) changes nothing:
	// what this node reclaimed expired before the source's cutoff less
	// the margin. Only one ahead by half the margin or more digests from
	// its own cutoff (and the source digests a second time).
	used := cutoff
	if own := s.clock().Add(sumCutoffAhead).UnixMilli(); own-cutoff >= sumCutoffAhead.Milliseconds()/2 {
		used = own
	}
	n, sum, err := bucketSum(forEach, route.BucketID(b), used, len(args) == 4)
	if err != nil {
		return resp.AppendErr(out, err)
	}
	if used != cutoff {
		return resp.AppendStatus(out, fmt.Sprintf("%d %x %d", n, sum, used))
	}
	return resp.AppendStatus(out, fmt.Sprintf("%d %x", n, sum))
}

// clock is the engine's clock (Config.Now), which decides what expired.
func (s *Server) clock() time.Time {
	if s.cfg.Now != nil {
		return s.cfg.Now()
	}
	return time.Now()
}

// errCopyDiffers: the checksums of a move's two copies differ.
var errCopyDiffers = errors.New("the moved copy differs")

// verifyMove compares the digest of forEach's bucket (this engine's,
// frozen, or a snapshot's) with the destination's, of its engine or
// (snapID not nil) of that snapshot; the destination applied everything
// sent before the freeze (or the snapshots).
func (m *migration) verifyMove(forEach func(uint32, func(*engines.Record) error) error, snapID []byte) error {
	s, b := m.s, m.move.Bucket
	cutoff := s.clock().Add(sumCutoffAhead).UnixMilli()
	type reply struct {
		raw []byte
		err error
	}
	ch := make(chan reply, 1)
	go func() {
		cmd := [][]byte{[]byte("TAIR.MIGSUM"), strconv.AppendUint(nil, uint64(b), 10), strconv.AppendInt(nil, cutoff, 10)}
		timeout := 10 * time.Second // the bucket is frozen meanwhile
		if snapID != nil {
			cmd, timeout = append(cmd, snapID), time.Minute
		}
		raw, err := s.pool.roundTrip(m.move.To, resp.AppendCommand(nil, cmd...), timeout)
		ch <- reply{raw, err}
	}()
	n, sum, err := bucketSum(forEach, b, cutoff, snapID != nil)
	r := <-ch
	if err != nil {
		return fmt.Errorf("checksum: %w", err)
	}
	if r.err != nil {
		return fmt.Errorf("checksum at the destination: %w", r.err)
	}
	got := strings.TrimSpace(string(r.raw))
	if strings.HasPrefix(got, "-") && strings.Contains(strings.ToLower(got), "unknown command") {
		// A destination of an earlier version: nothing to compare with.
		m.log.Warn("the destination computes no checksum: the move is not verified", "reply", got)
		return nil
	}
	if f := strings.Fields(got); len(f) == 3 {
		// The destination's clock is ahead: digest again from its cutoff.
		later, ok := redisnum.ParseInt([]byte(f[2]))
		if !ok || later < cutoff {
			return fmt.Errorf("checksum at the destination: bad reply %q", got)
		}
		if n, sum, err = bucketSum(forEach, b, later, snapID != nil); err != nil {
			return fmt.Errorf("checksum: %w", err)
		}
		m.log.Info("the destination's clock is ahead: checksummed from its cutoff", "ahead_ms", later-cutoff)
		got = f[0] + " " + f[1]
	}
	want := fmt.Sprintf("+%d %x", n, sum)
	if got != want {
		s.m.migSumMismatches.Inc()
		return fmt.Errorf("%w: the destination's checksum is %q, this node's %q", errCopyDiffers, got, want)
	}
	return nil
}

package dataserver

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
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
// bucket and the attempt fails (and starts over) when they differ:
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

// sumCutoffAhead is how far past the source's clock records must live
// to be digested.
const sumCutoffAhead = 5 * time.Second

// bucketSum digests bucket b's records that live past cutoff (unix ms).
func (s *Server) bucketSum(b route.BucketID, cutoff int64) (n int64, sum uint64, err error) {
	var d xxhash.Digest
	one := func(area uint16, key, skey []byte, e *engines.Entry) {
		if e.ExpireAt != 0 && e.ExpireAt <= cutoff {
			return
		}
		n++
		sum += recordHash(&d, area, key, skey, e)
	}
	err = s.eng.ForEach(uint32(b), func(r *engines.Record) error {
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

// migSumRequest serves TAIR.MIGSUM <bucket> <cutoff-ms>.
func (s *Server) migSumRequest(out []byte, args [][]byte) []byte {
	if len(args) != 3 {
		return resp.AppendError(out, "ERR wrong number of arguments for 'tair.migsum' command")
	}
	b, ok1 := redisnum.ParseUint(args[1])
	cutoff, ok2 := redisnum.ParseInt(args[2])
	rt := s.rt.Load()
	if !ok1 || !ok2 || rt == nil || b >= uint64(rt.t.Buckets) {
		return resp.AppendError(out, "ERR bad bucket or cutoff")
	}
	// A clock a few ms ahead (the request's own trip) changes nothing:
	// what this node reclaimed expired before the source's cutoff less
	// the margin. Only one ahead by half the margin or more digests from
	// its own cutoff (and the source digests a second time).
	used := cutoff
	if own := s.clock().Add(sumCutoffAhead).UnixMilli(); own-cutoff >= sumCutoffAhead.Milliseconds()/2 {
		used = own
	}
	n, sum, err := s.bucketSum(route.BucketID(b), used)
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

// verifyMove compares the bucket's digest here and at the destination;
// the bucket is frozen and the destination applied everything sent.
func (m *migration) verifyMove() error {
	s, b := m.s, m.move.Bucket
	cutoff := s.clock().Add(sumCutoffAhead).UnixMilli()
	type reply struct {
		raw []byte
		err error
	}
	ch := make(chan reply, 1)
	go func() {
		c, err := s.pool.get(m.move.To)
		if err != nil {
			ch <- reply{err: err}
			return
		}
		raw, err := c.roundTrip(resp.AppendCommand(nil, []byte("TAIR.MIGSUM"),
			strconv.AppendUint(nil, uint64(b), 10), strconv.AppendInt(nil, cutoff, 10)), 10*time.Second)
		if err != nil {
			_ = c.Close()
		} else {
			s.pool.put(m.move.To, c)
		}
		ch <- reply{raw, err}
	}()
	n, sum, err := s.bucketSum(b, cutoff)
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
		if n, sum, err = s.bucketSum(b, later); err != nil {
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

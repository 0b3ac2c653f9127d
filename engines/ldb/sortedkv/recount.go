package sortedkv

import (
	"bytes"

	"github.com/tairkv/tair/engines/generic"
	"github.com/tairkv/tair/internal/errs"
)

// Recount is what a walk over an area's stored keys finds, for tests and
// tools that check the counters against the data.
type Recount struct {
	// Keys and Bytes count the stored data as the counters do: plain keys
	// and pkeys with a stored skey (expired records included until they
	// are reclaimed), and the bytes of their encoded keys and values.
	Keys, Bytes int64
	// Plain counts the plain records' hidden bits and expiries as
	// CountKeys does (Stored unused).
	Plain generic.BucketKeys
	// Expiry is the number of expiry index entries.
	Expiry int64
	// PersistedKeys and PersistedBytes sum the area's counters records,
	// PersistedPlain their other fields.
	PersistedKeys, PersistedBytes int64
	PersistedPlain                generic.BucketKeys
}

// Recount walks every stored key of area, whatever the in-memory state
// says, in one backend scan of the whole store: a check, not a hot path.
// It takes no lock, so it is exact only when no write runs.
func (s *Store) Recount(area uint16) (Recount, error) {
	var rc Recount
	if area > generic.MaxArea {
		return rc, nil
	}
	if err := s.enter(); err != nil {
		return rc, err
	}
	defer s.leave()
	var lastPkey []byte // the previous skey's [bucket][area][kind][len][pkey]
	var ferr error
	err := s.be.Scan(nil, nil, false, func(k, v []byte) bool {
		if len(k) < headerLen || be16(k[4:]) != area {
			return true
		}
		switch k[bucketAreaLen] {
		case kindCounters:
			c, _ := DecodeCounts(v)
			rc.PersistedKeys += c.Keys
			rc.PersistedBytes += c.Bytes
			rc.PersistedPlain.Add(generic.BucketKeys{Hidden: c.Hidden, Expires: c.Expires, ExpireSum: c.ExpireSum})
		case kindExpiry:
			rc.Expiry++
		case kindPlain:
			r, err := decodeValue(v)
			if err != nil {
				ferr = err
				return false
			}
			rc.Keys++
			rc.Bytes += int64(len(k) + len(v))
			rc.Plain.AddPlain(r.hidden, r.expireAt, 1)
		case kindPrefix:
			d, err := parseDataKey(k)
			if err != nil {
				ferr = err
				return false
			}
			pfx := k[:len(k)-len(d.skey)]
			if !bytes.Equal(pfx, lastPkey) {
				rc.Keys++
				lastPkey = append(lastPkey[:0], pfx...)
			}
			rc.Bytes += int64(len(k) + len(v))
		}
		return true
	})
	if err == nil {
		err = ferr
	}
	if err != nil {
		return rc, errs.Wrap(errs.Unknown, err)
	}
	return rc, nil
}

package generic

import "github.com/tairkv/tair/engines"

// BucketKeys are the counters a store keeps for each (bucket, area), from
// which CountKeys answers without visiting records. They count stored
// records, expired ones included until they are reclaimed, so a store
// reclaims a bucket's expired records before it reports its counts.
type BucketKeys struct {
	// Stored are the plain keys and the pkeys (with at least one skey)
	// stored, hidden ones included: the store's Count counts the same.
	Stored int64
	// Hidden are the stored plain keys that are hidden.
	Hidden int64
	// Expires are the stored plain keys, not hidden, that have an expiry.
	Expires int64
	// ExpireSum is the sum of those keys' expiry times (unix ms). It may
	// wrap around: ExpireSum - Expires*now, computed with the same
	// wrapping, is still the exact sum of their remaining TTLs whenever
	// that sum fits an int64, and saves keeping a time per key.
	ExpireSum int64
}

// AddPlain adds n (1 or -1) times what a stored plain record with the
// given hidden bit and expiry adds to Hidden, Expires and ExpireSum; its
// Stored part the caller adds, as only it knows whether the key is new.
func (c *BucketKeys) AddPlain(hidden bool, expireAt int64, n int64) {
	switch {
	case hidden:
		c.Hidden += n
	case expireAt != 0:
		c.Expires += n
		c.ExpireSum += n * expireAt
	}
}

// Add adds d to c.
func (c *BucketKeys) Add(d BucketKeys) {
	c.Stored += d.Stored
	c.Hidden += d.Hidden
	c.Expires += d.Expires
	c.ExpireSum += d.ExpireSum
}

// IsZero reports whether c counts nothing.
func (c *BucketKeys) IsZero() bool { return *c == BucketKeys{} }

// KeyCounts turns c into what CountKeys reports at now (unix ms), once
// every record expired at now is reclaimed: every expiry left is at or
// after now.
func (c *BucketKeys) KeyCounts(now int64) engines.KeyCounts {
	return engines.KeyCounts{
		Keys:    c.Stored - c.Hidden,
		Hidden:  c.Hidden,
		Expires: c.Expires,
		TTL:     c.ExpireSum - c.Expires*now,
	}
}

// KeyTally sums BucketKeys by area, for a store's CountKeys.
type KeyTally map[uint16]*BucketKeys

// Add adds a (bucket, area)'s counters to area's sum.
func (t KeyTally) Add(area uint16, c BucketKeys) {
	s := t[area]
	if s == nil {
		s = &BucketKeys{}
		t[area] = s
	}
	s.Add(c)
}

// Report calls fn for every area that stores keys, with its counts at now.
func (t KeyTally) Report(now int64, fn func(area uint16, c engines.KeyCounts)) {
	for area, s := range t {
		if s.Stored != 0 {
			fn(area, s.KeyCounts(now))
		}
	}
}

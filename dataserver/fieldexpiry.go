package dataserver

import (
	"time"

	"github.com/tairkv/tair/dataserver/exec"
	"github.com/tairkv/tair/engines"
	"github.com/tairkv/tair/internal/route"
)

// # Active expiry of TairHash fields
//
// The TairHash module deletes expired fields in a periodic task, so that
// a field nobody touches again leaves EXHLEN and memory; a key whose last
// field goes is deleted. Here each node runs that task for the buckets it
// masters (fieldExpiryLoop): every fieldExpiryEvery it takes the keys
// whose earliest field expiry has passed from its index (fieldindex.go,
// kept up to date by exec after every TairHash write, on masters and
// slaves alike) and, under the bucket's lock, has exec remove their due
// fields (exec.Executor.ExpireFields) and appends the EXHDEL that does
// the same to the bucket's replication streams, as any write of the
// bucket: only the master decides, the slaves replay, so the copies
// agree. Nobody waits for the acknowledgement: a deletion of expired
// fields a slave missed is made again by the next write or by its next
// master.
//
// The work is bounded as Redis's activeExpireCycle bounds its own: at
// most fieldExpiryBudget of a round, a bucket's lock held for at most
// fieldExpiryKeysPerLock keys and fieldExpiryFieldsPerLock fields (a key
// with more due fields is taken again at once, in another hold), and
// each key costs its due fields only (ds.ExHash keeps its fields'
// expiries in a heap: about 3 µs a field in a hash of a million fields,
// BenchmarkExHashExpireDue on the 2-core test machine, so under a
// millisecond a hold).
//
// The index follows the data: a bucket's entries go when its copy is
// dropped or replaced by an incoming copy, whose records are indexed as
// they are restored; a persistent engine's data that predates the
// process is scanned once per bucket, when the node first masters it.
// A slave does not expire fields, but looks at its keys overdue by
// fieldExpirySlaveGrace (the master's EXHDEL should have come) and drops
// the ones that are gone, so that its index does not keep the keys its
// master deleted by other means (DEL, FLUSHDB, the key's own expiry).
const (
	fieldExpiryEvery         = 100 * time.Millisecond
	fieldExpiryBudget        = 10 * time.Millisecond
	fieldExpiryKeysPerLock   = 16
	fieldExpiryFieldsPerLock = 256
	fieldExpirySlaveGrace    = 2000 // ms
	fieldExpirySlaveRecheck  = 1000 // ms
)

// fieldExpiryCmd names the driver's writes in logs and panics.
var fieldExpiryCmd = [][]byte{[]byte("EXHDEL")}

// newExecutor is the executor for a table of q buckets, reporting its
// TairHash writes to the index.
func (s *Server) newExecutor(q uint32) *exec.Executor {
	return exec.New(s.eng, exec.Options{Buckets: q, FieldExpiry: func(k engines.Key, next int64) {
		s.fx.set(k.Bucket, k.Area, k.Key, next)
	}})
}

func (s *Server) fieldExpiryLoop(done <-chan struct{}) {
	everyUntil(done, fieldExpiryEvery, func(now time.Time) { s.expireFieldsRound(now) })
}

// expireFieldsRound is one round of the active expiry at now; it returns
// how many fields it removed.
func (s *Server) expireFieldsRound(now time.Time) int {
	rt := s.rt.Load()
	if rt == nil || rt.t == nil || s.closing.Load() {
		return 0
	}
	deadline := time.Now().Add(fieldExpiryBudget)
	s.scanForFieldExpiries(rt.t)
	nowMs := now.UnixMilli()
	due := s.fx.dueBuckets(nowMs)
	// Start where the last round stopped, so that a busy bucket does not
	// keep the others waiting.
	s.fxCursor++
	n := 0
	for i := range due {
		b := due[(i+s.fxCursor)%len(due)]
		id := route.BucketID(b)
		switch {
		case rt.t.IsMaster(id, s.addr):
			n += s.expireBucketFields(id, nowMs, deadline)
		case holds(rt.t, id, s.addr):
			s.recheckSlaveFields(b, nowMs)
		default:
			s.fx.drop(b) // its copy is about to be dropped
		}
		if !time.Now().Before(deadline) {
			break
		}
	}
	if n > 0 {
		s.fxExpired.Add(int64(n))
	}
	return n
}

// expireBucketFields expires the due fields of bucket b, a few keys per
// hold of its lock, until none is due or the round's deadline.
func (s *Server) expireBucketFields(b route.BucketID, nowMs int64, deadline time.Time) int {
	bk := s.bucket(b)
	if bk == nil {
		return 0
	}
	n := 0
	for time.Now().Before(deadline) {
		items := s.fx.take(uint32(b), nowMs, fieldExpiryKeysPerLock)
		if len(items) == 0 {
			break
		}
		got, stop := s.expireFieldsLocked(bk, items, nowMs)
		n += got
		if stop {
			break
		}
	}
	return n
}

// expireFieldsLocked expires the due fields of items under bk's lock and
// replicates their EXHDELs; stop reports that the bucket cannot be
// written now (frozen, in a cutover, no longer mastered here, lease
// lapsed): the items are looked at again in a later round.
func (s *Server) expireFieldsLocked(bk *bucket, items []dueItem, nowMs int64) (n int, stop bool) {
	var p pending // nobody waits for these writes' acknowledgement
	var res []byte
	bk.lock()
	defer s.unlockWrite(bk, nil, fieldExpiryCmd, &p, &res)
	b := uint32(bk.id)
	rt, err := s.writableLocked(bk)
	if err != nil || !s.leaseOK() {
		for _, it := range items {
			s.fx.recheck(b, it.k, it.at, nowMs+fieldExpiryEvery.Milliseconds())
		}
		return 0, true
	}
	x := s.x.Load()
	budget := fieldExpiryFieldsPerLock
	for i, it := range items {
		if budget <= 0 {
			// The hold's share is spent: the rest in the next hold.
			for _, it := range items[i:] {
				s.fx.recheck(b, it.k, it.at, it.at)
			}
			break
		}
		key := []byte(it.k.key)
		prop, next, err := x.ExpireFields(it.k.area, key, budget)
		if err != nil {
			s.log.Warn("expiring TairHash fields", "bucket", b, "err", err)
			s.fx.recheck(b, it.k, it.at, nowMs+1000)
			continue
		}
		s.fx.set(b, it.k.area, key, next)
		if prop != nil {
			n += len(prop) - 2
			budget -= len(prop) - 2
			s.replicateLocked(bk, rt, it.k.area, [][][]byte{prop}, &p)
		}
	}
	return n, false
}

// recheckSlaveFields looks at the keys of slave bucket b overdue by
// fieldExpirySlaveGrace: one that is gone (or keeps no field expiry)
// leaves the index, the others are looked at again later (their master
// expires them).
func (s *Server) recheckSlaveFields(b uint32, nowMs int64) {
	x := s.x.Load()
	for _, it := range s.fx.take(b, nowMs-fieldExpirySlaveGrace, fieldExpiryKeysPerLock) {
		if at := x.FieldExpiryOf(it.k.area, []byte(it.k.key)); at != 0 {
			s.fx.recheck(b, it.k, at, max(at, nowMs+fieldExpirySlaveRecheck))
		}
	}
}

// scanForFieldExpiries indexes, one bucket per round, the TairHash keys
// of the buckets this node masters whose data predates the process (a
// persistent engine's after a restart), which no write reported.
func (s *Server) scanForFieldExpiries(t *route.Table) {
	b, ok := s.fx.nextUnscanned(t, s.addr)
	if !ok {
		return
	}
	err := s.eng.ForEach(uint32(b), func(r *engines.Record) error {
		if at := exec.NextFieldExpiry(&r.Entry); at != 0 {
			// Read without the bucket's lock: a write since reported
			// an expiry at least as recent.
			s.fx.lower(uint32(b), r.Area, r.Key, at)
		}
		return nil
	})
	if err != nil {
		s.log.Warn("scanning a bucket for TairHash field expiries", "bucket", b, "err", err)
		return
	}
	s.fx.markScanned(uint32(b))
}

// restoredRecord indexes a record a migration or a resync restored.
func (s *Server) restoredRecord(b route.BucketID, r *engines.Record) {
	if at := exec.NextFieldExpiry(&r.Entry); at != 0 {
		s.fx.set(uint32(b), r.Area, r.Key, at)
	}
}

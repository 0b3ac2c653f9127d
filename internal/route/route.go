// Package route is the bucket table shared by the three roles: how a key maps
// to a bucket, and which dataservers hold each bucket. A *Table is immutable
// once published: readers load it from an atomic.Pointer and never lock.
package route

import (
	"bytes"
	"fmt"
	"sort"
	"strings"

	"github.com/cespare/xxhash/v2"
)

// DefaultBuckets is Q when none is configured (Tair's default).
const DefaultBuckets = 1023

// MaxArea is the largest area (namespace) number.
const MaxArea = 1023

// HashTag returns the part of key that is hashed: the content of the first
// non-empty {tag}, as in Redis Cluster, or the whole key.
func HashTag(key []byte) []byte {
	if s := bytes.IndexByte(key, '{'); s >= 0 {
		if e := bytes.IndexByte(key[s+1:], '}'); e > 0 {
			return key[s+1 : s+1+e]
		}
	}
	return key
}

// BucketID is a bucket's number, 0 <= b < Table.Buckets: the unit of
// placement, replication and migration. A type of its own keeps it apart
// from an area number (also a small integer) in signatures that take both.
type BucketID uint32

// Version is a bucket table's version. The configserver raises it with
// every table it commits, and every role serves the newest it has seen;
// a type of its own keeps it apart from an item's version (Tair's
// optimistic lock), which is also a uint64 and travels in the same
// requests.
type Version uint64

// BucketOf returns the bucket of key in a cluster of q buckets.
// For prefix commands key is the pkey.
func BucketOf(key []byte, q uint32) BucketID {
	if q == 0 {
		q = DefaultBuckets
	}
	return BucketID(xxhash.Sum64(HashTag(key)) % uint64(q))
}

// Move is one bucket copy moving from one dataserver to another.
type Move struct {
	Bucket BucketID `json:"bucket"`
	From   string   `json:"from"`
	To     string   `json:"to"`
}

// Table is the versioned bucket table (Tair's three tables in one value).
//
// Serving is what requests use: Serving[b][0] is bucket b's master and the
// rest its slaves; "" marks a lost copy. Destination is where the
// configserver wants each bucket once migrations end; Migrating lists the
// moves in progress, which the source dataservers carry out.
type Table struct {
	Version     Version    `json:"version"`
	Buckets     uint32     `json:"buckets"`
	Copies      int        `json:"copies"`
	Serving     [][]string `json:"serving"`
	Destination [][]string `json:"destination,omitempty"`
	Migrating   []Move     `json:"migrating,omitempty"`
	// Behind names, per master, the slaves of its buckets that may lack
	// writes it acknowledged: the master reported them unreachable past
	// its replication timeout, or they are away (down, kept in their rows
	// for a handoff window). A master acknowledges a write its slave has
	// not applied only once the table says that slave is behind, and a
	// slave behind its master is never promoted in its place.
	Behind map[string][]string `json:"behind,omitempty"`
	// BehindEpoch names, per pair marked behind ("master slave"), the
	// newest episode of the master's replication to the slave being
	// unreachable that the mark is known to cover (the master numbers
	// its episodes and reports them, wire.Heartbeat.UnreachableEpochs).
	// A master relies on a mark only for the episode it covers: a mark
	// set for an earlier episode may be cleared at any moment on a
	// heartbeat the master sent before the current episode began, which
	// would let the slave be promoted without the writes acknowledged
	// in between.
	BehindEpoch map[string]uint64 `json:"behind_epoch,omitempty"`
	// Incarnations names, per dataserver, the incarnation (process start)
	// the configserver had accounted for when it committed this table. A
	// dataserver serves from a table only when it names the node's own
	// incarnation: a node restarted without its data must not serve, as
	// master or slave, the rows a table built before its restart gives it
	// (an empty master answered reads with nil and would have overwritten
	// its slaves' keys with its writes), so it waits for the table that
	// stripped them. Nil (an older configserver): every table is served.
	Incarnations map[string]int64 `json:"incarnations,omitempty"`
}

// Accounts reports whether the table was built knowing node's
// incarnation inc (always, for a table without incarnations).
func (t *Table) Accounts(node string, inc int64) bool {
	if t.Incarnations == nil {
		return true
	}
	got, ok := t.Incarnations[node]
	return ok && got == inc
}

// Bucket returns the bucket of key in this table.
func (t *Table) Bucket(key []byte) BucketID { return BucketOf(key, t.Buckets) }

// Contains reports whether b is one of the table's buckets (a number
// from a peer or a client is checked before it indexes a row).
func (t *Table) Contains(b BucketID) bool { return uint32(b) < t.Buckets }

// Master returns bucket b's master address, or "" when it has none.
func (t *Table) Master(b BucketID) string {
	if t == nil || int(b) >= len(t.Serving) || len(t.Serving[b]) == 0 {
		return ""
	}
	return t.Serving[b][0]
}

// Slaves returns bucket b's slave addresses (lost copies left out).
func (t *Table) Slaves(b BucketID) []string {
	if t == nil || int(b) >= len(t.Serving) || len(t.Serving[b]) < 2 {
		return nil
	}
	out := make([]string, 0, len(t.Serving[b])-1)
	for _, s := range t.Serving[b][1:] {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// IsMaster reports whether node is bucket b's master.
func (t *Table) IsMaster(b BucketID, node string) bool {
	return node != "" && t.Master(b) == node
}

// IsSlave reports whether node holds a slave copy of bucket b.
func (t *Table) IsSlave(b BucketID, node string) bool {
	for _, s := range t.Slaves(b) {
		if s == node {
			return true
		}
	}
	return false
}

// MoveOf returns the move of bucket b in progress, if any.
func (t *Table) MoveOf(b BucketID) (Move, bool) {
	for _, m := range t.Migrating {
		if m.Bucket == b {
			return m, true
		}
	}
	return Move{}, false
}

// Nodes returns every dataserver named in the serving table, sorted.
func (t *Table) Nodes() []string {
	seen := map[string]bool{}
	for _, copies := range t.Serving {
		for _, n := range copies {
			if n != "" {
				seen[n] = true
			}
		}
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Clone returns a deep copy, for building the next version.
func (t *Table) Clone() *Table {
	c := *t
	c.Serving = cloneRows(t.Serving)
	c.Destination = cloneRows(t.Destination)
	c.Migrating = append([]Move(nil), t.Migrating...)
	if t.Behind != nil {
		c.Behind = make(map[string][]string, len(t.Behind))
		for m, ss := range t.Behind {
			c.Behind[m] = append([]string(nil), ss...)
		}
	}
	if t.BehindEpoch != nil {
		c.BehindEpoch = make(map[string]uint64, len(t.BehindEpoch))
		for k, v := range t.BehindEpoch {
			c.BehindEpoch[k] = v
		}
	}
	if t.Incarnations != nil {
		c.Incarnations = make(map[string]int64, len(t.Incarnations))
		for k, v := range t.Incarnations {
			c.Incarnations[k] = v
		}
	}
	return &c
}

func behindKey(master, slave string) string { return master + " " + slave }

// BehindCovers reports whether slave is marked behind master for
// unreachability episode epoch or a later one (see BehindEpoch).
func (t *Table) BehindCovers(master, slave string, epoch uint64) bool {
	return t.IsBehind(master, slave) && t.BehindEpoch[behindKey(master, slave)] >= epoch
}

// SetBehindEpoch records that the mark of slave behind master covers
// episode epoch (it only grows; the pair must be marked behind).
func (t *Table) SetBehindEpoch(master, slave string, epoch uint64) {
	if !t.IsBehind(master, slave) {
		return
	}
	k := behindKey(master, slave)
	if epoch <= t.BehindEpoch[k] {
		return
	}
	if t.BehindEpoch == nil {
		t.BehindEpoch = map[string]uint64{}
	}
	t.BehindEpoch[k] = epoch
}

// IsBehind reports whether slave may lack writes master acknowledged.
func (t *Table) IsBehind(master, slave string) bool {
	if t == nil {
		return false
	}
	for _, s := range t.Behind[master] {
		if s == slave {
			return true
		}
	}
	return false
}

// SetBehind marks (or, with behind false, clears) slave as behind master.
func (t *Table) SetBehind(master, slave string, behind bool) {
	if behind == t.IsBehind(master, slave) {
		return
	}
	if behind {
		if t.Behind == nil {
			t.Behind = map[string][]string{}
		}
		t.Behind[master] = append(t.Behind[master], slave)
		sort.Strings(t.Behind[master])
		return
	}
	delete(t.BehindEpoch, behindKey(master, slave))
	if len(t.BehindEpoch) == 0 {
		t.BehindEpoch = nil
	}
	out := t.Behind[master][:0:0]
	for _, s := range t.Behind[master] {
		if s != slave {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		delete(t.Behind, master)
		if len(t.Behind) == 0 {
			t.Behind = nil
		}
		return
	}
	t.Behind[master] = out
}

func cloneRows(rows [][]string) [][]string {
	if rows == nil {
		return nil
	}
	out := make([][]string, len(rows))
	for i, r := range rows {
		out[i] = append([]string(nil), r...)
	}
	return out
}

// Validate checks the table's shape.
func (t *Table) Validate() error {
	if t.Buckets == 0 || int(t.Buckets) != len(t.Serving) {
		return fmt.Errorf("route: table has %d rows for %d buckets", len(t.Serving), t.Buckets)
	}
	if t.Destination != nil && len(t.Destination) != len(t.Serving) {
		return fmt.Errorf("route: destination has %d rows for %d buckets", len(t.Destination), t.Buckets)
	}
	return nil
}

// String prints the table like Tair's cst_monitor: one line per bucket.
func (t *Table) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "table version %d, %d buckets, %d copies\n", t.Version, t.Buckets, t.Copies)
	fmt.Fprintf(&b, "%-7s %-22s %s\n", "bucket", "master", "slaves")
	for i, row := range t.Serving {
		m, s := "", ""
		if len(row) > 0 {
			m = row[0]
			s = strings.Join(row[1:], " ")
		}
		if m == "" {
			m = "-"
		}
		fmt.Fprintf(&b, "%-7d %-22s %s\n", i, m, s)
	}
	for _, mv := range t.Migrating {
		fmt.Fprintf(&b, "migrating bucket %d: %s -> %s\n", mv.Bucket, mv.From, mv.To)
	}
	return b.String()
}

package route

import (
	"bytes"
	"encoding/json"
	"math/rand"
	"testing"
)

// nextTable is a table after from with some rows, moves, marks and
// incarnations changed, as the configserver's next version would be.
func nextTable(rng *rand.Rand, from *Table) *Table {
	nodes := []string{"127.0.0.1:41001", "127.0.0.1:41002", "10.0.0.3:5191", "h4:1", ""}
	to := from.Clone()
	to.Version = from.Version + Version(1+rng.Intn(3))
	for i := rng.Intn(4); i > 0 && len(to.Serving) > 0; i-- {
		b := rng.Intn(len(to.Serving))
		row := []string{}
		for c := rng.Intn(4); c > 0; c-- {
			row = append(row, nodes[rng.Intn(len(nodes))])
		}
		to.Serving[b] = row
	}
	switch rng.Intn(4) {
	case 0:
		to.Destination = nil
	case 1:
		to.Destination = cloneRows(to.Serving)
	case 2:
		if len(to.Destination) > 0 {
			to.Destination[rng.Intn(len(to.Destination))] = []string{nodes[rng.Intn(len(nodes))]}
		}
	}
	if rng.Intn(2) == 0 {
		to.Migrating = append(to.Migrating, Move{Bucket: BucketID(rng.Intn(40)), From: nodes[0], To: nodes[1]})
	}
	if rng.Intn(3) == 0 {
		to.SetBehind(nodes[0], nodes[1], rng.Intn(2) == 0)
	}
	if rng.Intn(3) == 0 {
		to.Incarnations = map[string]int64{nodes[2]: rng.Int63()}
	}
	to.Copies = from.Copies + rng.Intn(2)
	return to
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// A delta sent as JSON and applied to the table it was taken against
// gives the new table exactly, as its full encoding would.
func TestDeltaApplyGivesTheTable(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	applied := 0
	for i := 0; i < 3000; i++ {
		from := randomTable(rng)
		if rng.Intn(4) > 0 && len(from.Serving) != int(from.Buckets) {
			from.Serving = make([][]string, from.Buckets)
			for b := range from.Serving {
				from.Serving[b] = []string{"a", "b"}
			}
		}
		from.Version %= 1 << 40
		to := nextTable(rng, from)
		var fromSent Table // what the receiver holds: the table as decoded
		if err := fromSent.UnmarshalJSON(mustJSON(t, from)); err != nil {
			t.Fatal(err)
		}
		d := Diff(&fromSent, to)
		if len(from.Serving) != int(from.Buckets) || from.Buckets == 0 {
			if d != nil {
				t.Fatalf("table %d: a delta of a table whose rows are not its buckets", i)
			}
			continue
		}
		if d == nil {
			t.Fatalf("table %d: no delta", i)
		}
		var got Delta
		if err := json.Unmarshal(mustJSON(t, d), &got); err != nil {
			t.Fatal(err)
		}
		nt, err := got.Apply(&fromSent)
		if err != nil {
			t.Fatalf("table %d: %v", i, err)
		}
		if want, have := mustJSON(t, emptyRowsNil(to)), mustJSON(t, emptyRowsNil(nt)); !bytes.Equal(want, have) {
			t.Fatalf("table %d: applied\n%s\nwant\n%s", i, have, want)
		}
		applied++
	}
	if applied < 1000 {
		t.Fatalf("only %d deltas applied", applied)
	}
}

// emptyRowsNil is t with its empty rows nil: a row without copies, as
// every user of a table reads it, whichever way it was decoded.
func emptyRowsNil(t *Table) *Table {
	c := t.Clone()
	for _, rows := range [][][]string{c.Serving, c.Destination} {
		for b, row := range rows {
			if len(row) == 0 {
				rows[b] = nil
			}
		}
	}
	return c
}

func TestDeltaRefusals(t *testing.T) {
	base := &Table{Version: 5, Buckets: 2, Copies: 2, Serving: [][]string{{"a", "b"}, {"b", "a"}}}
	next := base.Clone()
	next.Version = 6
	next.Serving[1] = []string{"a", "c"}
	if Diff(next, base) != nil {
		t.Fatal("a delta to an older table")
	}
	other := base.Clone()
	other.Buckets, other.Serving = 3, append(other.Serving, []string{"c"})
	other.Version = 7
	if Diff(base, other) != nil {
		t.Fatal("a delta across bucket counts")
	}
	d := Diff(base, next)
	if len(d.Serving) != 1 || d.Serving[0].Bucket != 1 {
		t.Fatalf("changed rows %+v, want bucket 1's alone", d.Serving)
	}
	if _, err := d.Apply(next); err == nil || err.Error() != "route: a delta from table version 5 applied to version 6" {
		t.Fatalf("applied to the wrong version: %v", err)
	}
	if _, err := d.Apply(nil); err == nil {
		t.Fatal("applied to no table")
	}
	bad := *d
	bad.Serving = []Row{{Bucket: 9, Nodes: []string{"x"}}}
	if _, err := bad.Apply(base); err == nil || err.Error() != "route: a delta's row for bucket 9 of 2" {
		t.Fatalf("a row out of range: %v", err)
	}
	grown := *d
	grown.DestinationLen = 2
	if _, err := grown.Apply(base); err == nil || err.Error() != "route: a delta without the row of bucket 0" {
		t.Fatalf("destination rows missing: %v", err)
	}
}

// defaultTable is a table of DefaultBuckets buckets and two copies over
// four nodes, as a cluster's.
func defaultTable() *Table {
	nodes := []string{"127.0.0.1:41001", "127.0.0.1:41002", "127.0.0.1:41003", "127.0.0.1:41004"}
	t := &Table{Version: 12345, Buckets: DefaultBuckets, Copies: 2}
	for q := 0; q < DefaultBuckets; q++ {
		t.Serving = append(t.Serving, []string{nodes[q%4], nodes[(q+1)%4]})
	}
	return t
}

// A failover of one bucket is a few dozen bytes against the whole
// table's tens of kilobytes.
func TestDeltaSize(t *testing.T) {
	from := defaultTable()
	to := from.Clone()
	to.Version++
	to.Serving[7] = []string{to.Serving[7][1]}
	full, delta := mustJSON(t, to), mustJSON(t, Diff(from, to))
	if len(delta) > 200 || len(full) < 20000 {
		t.Fatalf("delta %d bytes, full table %d: %s", len(delta), len(full), delta)
	}
}

// The cost of following a version by its delta against decoding the
// whole table (one row changed).
func BenchmarkTableFollow(b *testing.B) {
	from := defaultTable()
	to := from.Clone()
	to.Version++
	to.Serving[7] = []string{to.Serving[7][1]}
	full, _ := json.Marshal(to)
	delta, _ := json.Marshal(Diff(from, to))
	b.Run("full", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(full)))
		for i := 0; i < b.N; i++ {
			var t Table
			if err := t.UnmarshalJSON(full); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("delta", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(delta)))
		for i := 0; i < b.N; i++ {
			var d Delta
			if err := json.Unmarshal(delta, &d); err != nil {
				b.Fatal(err)
			}
			if _, err := d.Apply(from); err != nil {
				b.Fatal(err)
			}
		}
	})
}

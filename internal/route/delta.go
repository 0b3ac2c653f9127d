package route

import (
	"fmt"
	"slices"
)

// Delta is a table sent as its changes since an earlier version that
// the receiver holds: the rows of Serving and Destination that differ,
// and the small parts (moves, behind marks, incarnations) whole. A
// failover or a finished move changes a few rows of a thousand, so a
// node or proxy that follows every version fetches and decodes those
// rows instead of the whole table each time.
type Delta struct {
	From    Version `json:"from"`
	Version Version `json:"version"`
	Buckets uint32  `json:"buckets"`
	Copies  int     `json:"copies"`
	Serving []Row   `json:"serving,omitempty"`
	// Destination: the rows that differ; DestinationLen is the new
	// table's number of rows (0: it has none).
	Destination    []Row               `json:"destination,omitempty"`
	DestinationLen int                 `json:"destination_len,omitempty"`
	Migrating      []Move              `json:"migrating,omitempty"`
	Behind         map[string][]string `json:"behind,omitempty"`
	BehindEpoch    map[string]uint64   `json:"behind_epoch,omitempty"`
	Incarnations   map[string]int64    `json:"incarnations,omitempty"`
}

// Row is one bucket's row of a Delta.
type Row struct {
	Bucket BucketID `json:"b"`
	Nodes  []string `json:"n"`
}

// Diff is to as changes since from, or nil when to cannot be given that
// way (another bucket count, none, or not newer).
func Diff(from, to *Table) *Delta {
	if from == nil || to == nil || from.Buckets != to.Buckets || to.Buckets == 0 || to.Version <= from.Version ||
		len(from.Serving) != int(from.Buckets) || len(to.Serving) != int(to.Buckets) {
		return nil
	}
	d := &Delta{
		From: from.Version, Version: to.Version, Buckets: to.Buckets, Copies: to.Copies,
		Serving:        changedRows(from.Serving, to.Serving),
		Destination:    changedRows(from.Destination, to.Destination),
		DestinationLen: len(to.Destination),
		Migrating:      to.Migrating,
		Behind:         to.Behind,
		BehindEpoch:    to.BehindEpoch,
		Incarnations:   to.Incarnations,
	}
	return d
}

// changedRows lists the rows of to that differ from from's (every row of
// to when from has fewer).
func changedRows(from, to [][]string) []Row {
	var out []Row
	for b, row := range to {
		if b < len(from) && slices.Equal(from[b], row) {
			continue
		}
		out = append(out, Row{Bucket: BucketID(b), Nodes: row})
	}
	return out
}

// Apply builds the table d describes from base, the version it was taken
// against. Rows that did not change are shared with base: tables are
// never changed once built (Clone makes the next version's).
func (d *Delta) Apply(base *Table) (*Table, error) {
	if base == nil || base.Version != d.From {
		var have Version
		if base != nil {
			have = base.Version
		}
		return nil, fmt.Errorf("route: a delta from table version %d applied to version %d", d.From, have)
	}
	if base.Buckets != d.Buckets || uint32(len(base.Serving)) != d.Buckets {
		return nil, fmt.Errorf("route: a delta of %d buckets applied to a table of %d", d.Buckets, base.Buckets)
	}
	t := &Table{
		Version: d.Version, Buckets: d.Buckets, Copies: d.Copies,
		Migrating: d.Migrating, Behind: d.Behind, BehindEpoch: d.BehindEpoch, Incarnations: d.Incarnations,
	}
	var err error
	if t.Serving, err = applyRows(base.Serving, d.Serving, len(base.Serving)); err != nil {
		return nil, err
	}
	if d.DestinationLen > 0 {
		if t.Destination, err = applyRows(base.Destination, d.Destination, d.DestinationLen); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// applyRows is base's rows resized to n with changed's put in; a row
// beyond base's that changed does not give is an error.
func applyRows(base [][]string, changed []Row, n int) ([][]string, error) {
	out := make([][]string, n)
	copy(out, base)
	given := len(base)
	for _, r := range changed {
		if int(r.Bucket) >= n {
			return nil, fmt.Errorf("route: a delta's row for bucket %d of %d", r.Bucket, n)
		}
		out[r.Bucket] = r.Nodes
	}
	if given < n {
		set := make([]bool, n)
		for _, r := range changed {
			set[r.Bucket] = true
		}
		for b := given; b < n; b++ {
			if !set[b] {
				return nil, fmt.Errorf("route: a delta without the row of bucket %d", b)
			}
		}
	}
	return out, nil
}

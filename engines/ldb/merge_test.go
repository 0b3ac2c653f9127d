package ldb

import (
	"testing"

	"github.com/tairkv/tair/engines/ldb/sortedkv"
)

// TestCountersMerger: operands add up field by field; a merge of the first
// release's records alone stays in their form (sortedkv's Open completes
// those, and must still see them as such after a compaction merged them),
// and one with a complete operand is complete.
func TestCountersMerger(t *testing.T) {
	merge := func(ops ...[]byte) []byte {
		t.Helper()
		m, err := countersMerger.Merge(nil, ops[0])
		if err != nil {
			t.Fatal(err)
		}
		for _, op := range ops[1:] {
			if err := m.MergeNewer(op); err != nil {
				t.Fatal(err)
			}
		}
		out, _, err := m.Finish(true)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	legacy := merge(sortedkv.EncodeLegacyCounters(2, 20), sortedkv.EncodeLegacyCounters(1, 10))
	if c, complete := sortedkv.DecodeCounts(legacy); complete || c != (sortedkv.Counts{Keys: 3, Bytes: 30}) {
		t.Fatalf("legacy operands merged to %+v (complete %v)", c, complete)
	}
	full := merge(sortedkv.Counts{Keys: 5, Bytes: 50, Hidden: 1, Expires: 2, ExpireSum: 7}.Encode(),
		sortedkv.Counts{Keys: -1, Bytes: -10, Hidden: -1, Expires: 1, ExpireSum: -3}.Encode())
	if c, complete := sortedkv.DecodeCounts(full); !complete || c != (sortedkv.Counts{Keys: 4, Bytes: 40, Expires: 3, ExpireSum: 4}) {
		t.Fatalf("operands merged to %+v (complete %v)", c, complete)
	}
}

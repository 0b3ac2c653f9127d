package ldb

import (
	"fmt"
	"testing"

	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/vfs"

	"github.com/tairkv/tair/engines"
)

// TestBlockCacheKeepsBlocksBesideMemtables reads flushed keys twice while
// a full-size memtable is charged to the block cache: the second pass
// must find its blocks cached. With the cache sized for blocks alone,
// the memtables' reservation left it no room and every read went to the
// file again (found in a profile: half of an ldb SET's CPU re-reading
// and decompressing filter, index and data blocks).
func TestBlockCacheKeepsBlocksBesideMemtables(t *testing.T) {
	sizes := pebbleSizes{blockCache: 1 << 20, memTable: 1 << 20}
	st, err := openPebble(engines.Options{Sync: engines.SyncNone}, vfs.NewMem(), sizes)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	const n = 30000 // ~3 MB: the memtables grow to full size and rotate
	key := func(i int) []byte { return []byte(fmt.Sprintf("key:%08d", i)) }
	val := make([]byte, 80)
	for i := 0; i < n; i++ {
		if err := st.db.Set(key(i), val, pebble.NoSync); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.db.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := st.db.Metrics().MemTable.Size; got < uint64(sizes.memTable) {
		t.Fatalf("memtable reservation %d, want the full %d (the test needs it charged)", got, sizes.memTable)
	}
	read := func() {
		for i := 0; i < n/6; i += 5 { // ~0.5 MB of blocks: fits the 1 MB
			if _, ok, err := st.Get(key(i)); err != nil || !ok {
				t.Fatalf("Get(%s) = %v, %v", key(i), ok, err)
			}
		}
	}
	read()
	before := st.db.Metrics().BlockCache
	read()
	after := st.db.Metrics().BlockCache
	hits, misses := after.Hits-before.Hits, after.Misses-before.Misses
	if misses != 0 || hits == 0 {
		t.Fatalf("second pass over cached keys: %d block cache hits, %d misses (cache holds %d blocks, %d bytes); want no misses",
			hits, misses, after.Count, after.Size)
	}
}

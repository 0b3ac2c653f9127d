package ldb_test

import (
	"testing"
	"time"

	"github.com/cockroachdb/pebble/vfs"

	"github.com/tairkv/tair/engines"
	"github.com/tairkv/tair/engines/enginetest"
	"github.com/tairkv/tair/engines/ldb"
	"github.com/tairkv/tair/engines/ldb/sortedkv/storetest"
)

// openMem opens an ldb engine on pebble's in-memory filesystem: the suite
// exercises semantics, not the disk, and runs much faster this way.
func openMem(t *testing.T, o engines.Options) engines.Engine {
	// A memory filesystem has nothing to fsync; SyncNone skips the WAL
	// sync wait the other policies would add to every write.
	o.Sync = engines.SyncNone
	e, err := ldb.OpenFS(o, vfs.NewMem())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	return e
}

func TestConformance(t *testing.T) { enginetest.Run(t, openMem) }

func TestRegistered(t *testing.T) {
	e, err := engines.Open(ldb.Name, engines.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if e.Name() != "ldb" || !e.Persistent() {
		t.Fatalf("Name %q Persistent %v", e.Name(), e.Persistent())
	}
}

func openDisk(dir string, sync engines.SyncPolicy, now func() time.Time) (engines.Engine, error) {
	return ldb.Open(engines.Options{Dir: dir, Sync: sync, Now: now})
}

// TestHelperProcess is the crash test's writer child; see storetest.Child.
func TestHelperProcess(t *testing.T) { storetest.Child(t, openDisk) }

func TestCrashSyncAlways(t *testing.T) { storetest.RunCrash(t, openDisk, engines.SyncAlways, 2000) }
func TestCrashSyncGroup(t *testing.T)  { storetest.RunCrash(t, openDisk, engines.SyncGroup, 2000) }

func TestReopen(t *testing.T) { storetest.RunReopen(t, openDisk) }

// TestSweep: the background sweep reclaims expired data that is never read.
func TestSweep(t *testing.T) {
	storetest.RunSweep(t, func(o engines.Options) (engines.Engine, error) { return ldb.Open(o) })
}

func TestModel(t *testing.T) { enginetest.RunModel(t, openMem, 20000) }

func BenchmarkLDB(b *testing.B) { storetest.RunBenchmarks(b, openDisk) }

func TestQuota(t *testing.T) { storetest.RunQuota(t, openDisk) }

// TestPersistence runs the shared restart check on disk (t.TempDir()).
func TestPersistence(t *testing.T) {
	enginetest.RunPersistence(t, func(t *testing.T, o engines.Options) engines.Engine {
		e, err := ldb.Open(o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = e.Close() })
		return e
	})
}

// TestModelFastSweep runs the model with the background sweep every
// millisecond, racing the operations: a Count must never see a reclaim
// committed but not yet counted, nor miss an expiry a write just added.
func TestModelFastSweep(t *testing.T) {
	enginetest.RunModel(t, func(t *testing.T, o engines.Options) engines.Engine {
		o.SweepInterval = time.Millisecond
		return openMem(t, o)
	}, 8000)
}

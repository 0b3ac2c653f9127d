package kdb_test

import (
	"testing"
	"time"

	"github.com/tairkv/tair/engines"
	"github.com/tairkv/tair/engines/enginetest"
	"github.com/tairkv/tair/engines/kdb"
	"github.com/tairkv/tair/engines/ldb/sortedkv/storetest"
)

// open opens kdb in a fresh directory. SyncNone keeps the suite off fsync
// (it tests semantics; the crash tests below test durability).
func open(t *testing.T, o engines.Options) engines.Engine {
	o.Dir = t.TempDir()
	o.Sync = engines.SyncNone
	e, err := kdb.Open(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	return e
}

func TestConformance(t *testing.T) { enginetest.Run(t, open) }

func TestRegistered(t *testing.T) {
	e, err := engines.Open(kdb.Name, engines.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if e.Name() != "kdb" || !e.Persistent() {
		t.Fatalf("Name %q Persistent %v", e.Name(), e.Persistent())
	}
}

func openDisk(dir string, sync engines.SyncPolicy, now func() time.Time) (engines.Engine, error) {
	return kdb.Open(engines.Options{Dir: dir, Sync: sync, Now: now})
}

// TestHelperProcess is the crash test's writer child; see storetest.Child.
func TestHelperProcess(t *testing.T) { storetest.Child(t, openDisk) }

func TestCrashSyncAlways(t *testing.T) { storetest.RunCrash(t, openDisk, engines.SyncAlways, 1000) }
func TestCrashSyncGroup(t *testing.T)  { storetest.RunCrash(t, openDisk, engines.SyncGroup, 1000) }

// TestCrashSyncNone: bbolt writes a NoSync transaction's pages to the OS
// before the commit returns, so a killed process (unlike a lost machine)
// loses nothing acknowledged even without fsync. (ldb's SyncNone does lose
// writes here: pebble buffers the WAL in the process.)
func TestCrashSyncNone(t *testing.T) { storetest.RunCrash(t, openDisk, engines.SyncNone, 3000) }

func TestReopen(t *testing.T) { storetest.RunReopen(t, openDisk) }

// TestSweep: the background sweep reclaims expired data that is never read.
func TestSweep(t *testing.T) {
	storetest.RunSweep(t, func(o engines.Options) (engines.Engine, error) { return kdb.Open(o) })
}

func TestModel(t *testing.T) { enginetest.RunModel(t, open, 20000) }

func BenchmarkKDB(b *testing.B) { storetest.RunBenchmarks(b, openDisk) }

func TestQuota(t *testing.T) { storetest.RunQuota(t, openDisk) }

// TestPersistence runs the shared restart check.
func TestPersistence(t *testing.T) {
	enginetest.RunPersistence(t, func(t *testing.T, o engines.Options) engines.Engine {
		e, err := kdb.Open(o)
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
		return open(t, o)
	}, 8000)
}

package kdb_test

import (
	"testing"

	"github.com/tairkv/tair/engines"
	"github.com/tairkv/tair/engines/enginetest"
	"github.com/tairkv/tair/engines/kdb"
	"github.com/tairkv/tair/engines/ldb/sortedkv/storetest"
)

func open(o engines.Options) (engines.Engine, error) { return kdb.Open(o) }

// engine is kdb under the shared suites. Fast opens it in a fresh
// directory with SyncNone, which keeps the semantic suites off fsync
// (the crash tests test durability).
var engine = storetest.Engine{
	Open: open,
	Fast: func(t *testing.T, o engines.Options) engines.Engine {
		o.Dir = t.TempDir()
		o.Sync = engines.SyncNone
		return enginetest.MustOpen(open)(t, o)
	},
	CrashAcks: 1000,
}

func TestSuites(t *testing.T) { storetest.Run(t, engine) }

func TestRegistered(t *testing.T) {
	enginetest.CheckRegistered(t, kdb.Name, engines.Options{Dir: t.TempDir()}, true)
}

// TestHelperProcess is the crash test's writer child; see storetest.Child.
func TestHelperProcess(t *testing.T) { storetest.Child(t, engine.Disk) }

// TestCrashSyncNone: bbolt writes a NoSync transaction's pages to the OS
// before the commit returns, so a killed process (unlike a lost machine)
// loses nothing acknowledged even without fsync. (ldb's SyncNone does lose
// writes here: pebble buffers the WAL in the process.)
func TestCrashSyncNone(t *testing.T) { storetest.RunCrash(t, engine.Disk, engines.SyncNone, 3000) }

func BenchmarkKDB(b *testing.B) { storetest.RunBenchmarks(b, engine.Disk) }

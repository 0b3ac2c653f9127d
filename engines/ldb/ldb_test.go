package ldb_test

import (
	"testing"

	"github.com/cockroachdb/pebble/vfs"

	"github.com/tairkv/tair/engines"
	"github.com/tairkv/tair/engines/enginetest"
	"github.com/tairkv/tair/engines/ldb"
	"github.com/tairkv/tair/engines/ldb/sortedkv/storetest"
)

// engine is ldb under the shared suites. Fast opens it on pebble's
// in-memory filesystem: the semantic suites exercise what it answers, not
// the disk, and run much faster this way.
var engine = storetest.Engine{
	Open: func(o engines.Options) (engines.Engine, error) { return ldb.Open(o) },
	Fast: func(t *testing.T, o engines.Options) engines.Engine {
		// A memory filesystem has nothing to fsync; SyncNone skips the
		// WAL sync wait the other policies would add to every write.
		o.Sync = engines.SyncNone
		return enginetest.MustOpen(func(o engines.Options) (engines.Engine, error) {
			return ldb.OpenFS(o, vfs.NewMem())
		})(t, o)
	},
	CrashAcks: 2000,
}

func TestSuites(t *testing.T) { storetest.Run(t, engine) }

func TestRegistered(t *testing.T) {
	enginetest.CheckRegistered(t, ldb.Name, engines.Options{Dir: t.TempDir()}, true)
}

// TestHelperProcess is the crash test's writer child; see storetest.Child.
func TestHelperProcess(t *testing.T) { storetest.Child(t, engine.Disk) }

func BenchmarkLDB(b *testing.B) { storetest.RunBenchmarks(b, engine.Disk) }

package storetest

import (
	"testing"
	"time"

	"github.com/tairkv/tair/engines"
	"github.com/tairkv/tair/engines/enginetest"
)

// Engine is a sortedkv engine (ldb, kdb) under the shared suites.
type Engine struct {
	// Open opens the engine on disk with o.
	Open OpenOptionsFunc
	// Fast opens it for the semantic suites (the conformance suite and
	// the model), which test what it answers, not the disk: without
	// fsync, or on no disk at all.
	Fast enginetest.OpenFunc
	// CrashAcks is how many acknowledged writes the crash tests under
	// SyncAlways and SyncGroup wait for before the kill.
	CrashAcks int
}

// Disk is e.Open as the crash, reopen and quota tests call it.
func (e Engine) Disk(dir string, sync engines.SyncPolicy, now func() time.Time) (engines.Engine, error) {
	return e.Open(engines.Options{Dir: dir, Sync: sync, Now: now})
}

// Run runs every suite a sortedkv engine shares, one subtest each. The
// engine's test package still declares TestHelperProcess (the crash
// child RunCrash starts by that name): see Child.
func Run(t *testing.T, e Engine) {
	t.Run("Conformance", func(t *testing.T) { enginetest.Run(t, e.Fast) })
	t.Run("Model", func(t *testing.T) { enginetest.RunModel(t, e.Fast, 20000) })
	// the model with the background sweep every millisecond, racing the
	// operations: a Count must never see a reclaim committed but not yet
	// counted, nor miss an expiry a write just added.
	t.Run("ModelFastSweep", func(t *testing.T) {
		enginetest.RunModel(t, func(t *testing.T, o engines.Options) engines.Engine {
			o.SweepInterval = time.Millisecond
			return e.Fast(t, o)
		}, 8000)
	})
	t.Run("CrashSyncAlways", func(t *testing.T) { RunCrash(t, e.Disk, engines.SyncAlways, e.CrashAcks) })
	t.Run("CrashSyncGroup", func(t *testing.T) { RunCrash(t, e.Disk, engines.SyncGroup, e.CrashAcks) })
	t.Run("Reopen", func(t *testing.T) { RunReopen(t, e.Disk) })
	// the background sweep reclaims expired data that is never read
	t.Run("Sweep", func(t *testing.T) { RunSweep(t, e.Open) })
	t.Run("Quota", func(t *testing.T) { RunQuota(t, e.Disk) })
	// the shared restart check, on disk (t.TempDir())
	t.Run("Persistence", func(t *testing.T) { enginetest.RunPersistence(t, enginetest.MustOpen(e.Open)) })
}

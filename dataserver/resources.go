package dataserver

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tairkv/tair/internal/wire"
)

// diskEvery is how often the data directory's size is measured again (a
// walk over its files); the heartbeats in between report the last one.
const diskEvery = 5 * time.Second

// diskSample is a data directory's last measured size.
type diskSample struct {
	at   time.Time
	used int64
}

// diskSamples caches diskSample per data directory.
var diskSamples sync.Map // string → diskSample

// resources is the heartbeat's report of the node's memory and disk.
func (s *Server) resources(now time.Time) *wire.NodeResources {
	r := &wire.NodeResources{MemoryLimit: s.cfg.MemoryLimit, RSSBytes: processRSS()}
	for _, st := range s.eng.AllStats() {
		r.EngineBytes += st.Bytes
	}
	if dir := s.cfg.Dir; dir != "" && s.eng.Persistent() {
		r.DataDir = dir
		smp, ok := diskSamples.Load(dir)
		if !ok || now.Sub(smp.(diskSample).at) >= diskEvery {
			smp = diskSample{at: now, used: dirDiskUsage(dir)}
			diskSamples.Store(dir, smp)
		}
		r.DiskUsedBytes = smp.(diskSample).used
		var fsst unix.Statfs_t
		if unix.Statfs(dir, &fsst) == nil {
			r.DiskFreeBytes = int64(fsst.Bavail) * fsst.Bsize
			r.DiskTotalBytes = int64(fsst.Blocks) * fsst.Bsize
		}
	}
	return r
}

// dirDiskUsage is the bytes dir's files take on disk (allocated blocks,
// as du counts them; their sizes where blocks are not known).
func dirDiskUsage(dir string) int64 {
	var total int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // a file removed under the walk (compaction)
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			total += st.Blocks * 512
		} else if !d.IsDir() {
			total += info.Size()
		}
		return nil
	})
	return total
}

// processRSS is the process's resident memory from /proc/self/statm (0
// where there is none).
func processRSS() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := bytes.Fields(b)
	if len(f) < 2 {
		return 0
	}
	pages, err := strconv.ParseInt(string(f[1]), 10, 64)
	if err != nil {
		return 0
	}
	return pages * int64(os.Getpagesize())
}

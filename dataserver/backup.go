package dataserver

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/tairkv/tair/engines"
	"github.com/tairkv/tair/internal/route"
)

// GET /v1/backup?table=V&buckets=B1,B2,... on the HTTP address streams
// the records of buckets this node is master of under table version V,
// for `tair ctl backup`. A persistent engine's records come from one
// checkpoint (engines.Checkpointer), so every bucket of the answer is of
// the same instant, and writes go on meanwhile; an in-memory engine's
// are read live, bucket by bucket.
//
// The body (application/octet-stream):
//
//	body  := "TAIRBACKUP1\n" frame* end
//	frame := bucket:uvarint len:uvarint chunk    (engines.AppendChunkRecord's)
//	end   := 0xffffffff:uvarint records:uvarint
//
// A bucket's chunks come in order, a bucket without records has none;
// the end frame tells a complete answer from a cut one. Refusals are
// 409 (another table version, a bucket mastered elsewhere: the caller
// reads the table again) and 400 (a malformed request).

// BackupMagic begins a backup stream.
const BackupMagic = "TAIRBACKUP1\n"

// BackupEnd is the bucket number of the end frame.
const BackupEnd = 1<<32 - 1

func (s *Server) handleBackup(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	v, err := strconv.ParseUint(q.Get("table"), 10, 64)
	if err != nil {
		http.Error(w, "backup: table=VERSION is required", http.StatusBadRequest)
		return
	}
	ver := route.Version(v)
	var buckets []route.BucketID
	for _, f := range strings.Split(q.Get("buckets"), ",") {
		if f == "" {
			continue
		}
		b, err := strconv.ParseUint(f, 10, 32)
		if err != nil {
			http.Error(w, "backup: buckets=B1,B2,... takes bucket numbers", http.StatusBadRequest)
			return
		}
		buckets = append(buckets, route.BucketID(b))
	}
	if err := s.backupOwns(ver, buckets); err != nil {
		http.Error(w, err.Error(), http.StatusConflict)
		return
	}
	src, done, err := s.backupSource()
	if err != nil {
		http.Error(w, "backup: "+err.Error(), http.StatusInternalServerError)
		return
	}
	defer done()
	// Checked again: the checkpoint is of an instant when this node was
	// the buckets' master under ver.
	if err := s.backupOwns(ver, buckets); err != nil {
		http.Error(w, err.Error(), http.StatusConflict)
		return
	}
	start := time.Now()
	w.Header().Set("Content-Type", "application/octet-stream")
	bw := bufio.NewWriterSize(w, 64<<10)
	records, err := writeBackup(bw, src, buckets)
	if err == nil {
		err = bw.Flush()
	}
	if err != nil {
		// The answer has begun: the missing end frame tells the caller.
		s.log.Warn("backup cut short", "buckets", len(buckets), "err", err)
		return
	}
	s.log.Info("backup sent", "buckets", len(buckets), "records", records, "table", ver,
		"took", time.Since(start).Round(time.Millisecond))
}

// backupOwns refuses a backup whose table version is not this node's, or
// whose buckets that table does not make this node master of.
func (s *Server) backupOwns(ver route.Version, buckets []route.BucketID) error {
	t := s.Table()
	if t == nil || t.Version != ver {
		have := route.Version(0)
		if t != nil {
			have = t.Version
		}
		return fmt.Errorf("backup: stale: this node serves table %d, not %d", have, ver)
	}
	for _, b := range buckets {
		if !t.Contains(b) || !t.IsMaster(b, s.addr) {
			return fmt.Errorf("backup: stale: bucket %d's master is %q under table %d, not this node", b, t.Master(b), ver)
		}
	}
	return nil
}

// backupSource is the engine a backup reads: a checkpoint of this one,
// opened beside its directory (the same filesystem, so pebble links its
// files instead of copying them), or this one for an engine that takes
// none. done closes and removes the checkpoint.
func (s *Server) backupSource() (src engines.Engine, done func(), err error) {
	cp, ok := s.eng.(engines.Checkpointer)
	if !ok || s.cfg.Dir == "" {
		return s.eng, func() {}, nil
	}
	tmp, err := os.MkdirTemp(filepath.Dir(s.cfg.Dir), filepath.Base(s.cfg.Dir)+".backup-")
	if err != nil {
		return nil, nil, err
	}
	dir := filepath.Join(tmp, "checkpoint")
	if err := cp.Checkpoint(dir); err != nil {
		_ = os.RemoveAll(tmp)
		if errors.Is(err, engines.ErrNoCheckpoint) {
			return s.eng, func() {}, nil
		}
		return nil, nil, err
	}
	src, err = engines.Open(s.eng.Name(), engines.Options{Dir: dir, Sync: engines.SyncNone,
		MaxKeySize: s.cfg.MaxKeySize, MaxValueSize: s.cfg.MaxValueSize})
	if err != nil {
		_ = os.RemoveAll(tmp)
		return nil, nil, fmt.Errorf("open checkpoint: %w", err)
	}
	return src, func() {
		_ = src.Close()
		_ = os.RemoveAll(tmp)
	}, nil
}

// writeBackup writes the body for buckets of src and returns how many
// records it held. A bucket is read whole before it is written, so that
// a slow reader never holds an in-memory engine's bucket.
func writeBackup(w *bufio.Writer, src engines.Engine, buckets []route.BucketID) (int, error) {
	if _, err := w.WriteString(BackupMagic); err != nil {
		return 0, err
	}
	var hdr []byte
	frame := func(b uint64, chunk []byte) error {
		hdr = binary.AppendUvarint(hdr[:0], b)
		hdr = binary.AppendUvarint(hdr, uint64(len(chunk)))
		if _, err := w.Write(hdr); err != nil {
			return err
		}
		_, err := w.Write(chunk)
		return err
	}
	records := 0
	var chunks [][]byte
	for _, b := range buckets {
		chunks = chunks[:0]
		var chunk []byte
		err := src.ForEach(uint32(b), func(r *engines.Record) error {
			var err error
			if chunk, err = engines.AppendChunkRecord(chunk, r); err != nil {
				return err
			}
			records++
			if len(chunk) >= chunkBytes {
				chunks, chunk = append(chunks, chunk), nil
			}
			return nil
		})
		if err != nil {
			return records, fmt.Errorf("bucket %d: %w", b, err)
		}
		if len(chunk) > 0 {
			chunks = append(chunks, chunk)
		}
		for _, c := range chunks {
			if err := frame(uint64(b), c); err != nil {
				return records, err
			}
		}
	}
	hdr = binary.AppendUvarint(hdr[:0], BackupEnd)
	hdr = binary.AppendUvarint(hdr, uint64(records))
	_, err := w.Write(hdr)
	return records, err
}

// ReadBackup reads a backup body (handleBackup's), calling fn with each
// frame's bucket and chunk (read engines.NewChunkReader over it; it is
// reused once fn returns), and returns the record count of its end frame;
// a body without one is an error (the answer was cut).
func ReadBackup(r *bufio.Reader, fn func(b route.BucketID, chunk []byte) error) (records uint64, err error) {
	magic := make([]byte, len(BackupMagic))
	if _, err := io.ReadFull(r, magic); err != nil || string(magic) != BackupMagic {
		return 0, fmt.Errorf("backup: not a backup stream (%v)", err)
	}
	var chunk []byte
	for {
		b, err := binary.ReadUvarint(r)
		if err != nil {
			return 0, fmt.Errorf("backup: cut short: %w", err)
		}
		n, err := binary.ReadUvarint(r)
		if err != nil {
			return 0, fmt.Errorf("backup: cut short: %w", err)
		}
		if b == BackupEnd {
			return n, nil
		}
		if b > BackupEnd || n > 1<<30 {
			return 0, fmt.Errorf("backup: malformed frame (bucket %d, %d bytes)", b, n)
		}
		if uint64(cap(chunk)) < n {
			chunk = make([]byte, n)
		}
		chunk = chunk[:n]
		if _, err := io.ReadFull(r, chunk); err != nil {
			return 0, fmt.Errorf("backup: cut short: %w", err)
		}
		if err := fn(route.BucketID(b), chunk); err != nil {
			return 0, err
		}
	}
}

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"

	"github.com/tairkv/tair/dataserver"
	"github.com/tairkv/tair/engines"
	"github.com/tairkv/tair/internal/route"
	"github.com/tairkv/tair/internal/wire"
)

// A backup is a directory:
//
//	manifest.json   backupManifest, written last: a directory without
//	                one is a backup that did not finish
//	buckets/B       bucket B's records as its master held them, as one
//	                chunk (engines.AppendChunkRecord's length-prefixed
//	                records: the node's chunks of the bucket, concatenated)
//
// `tair ctl backup` reads every bucket from its master's HTTP address
// (GET /v1/backup, dataserver/backup.go), all of one table version: a
// node's buckets come from one checkpoint of its engine (ldb, kdb), so
// they are of one instant, while writes go on. Nodes are read one after
// another, so two nodes' buckets are of instants a few seconds apart, as
// with any backup of a sharded store taken without stopping it.
// `tair ctl restore` writes every record through a proxy
// (TAIR.RESTOREREC, in the record's area), so the new cluster may have
// any number of nodes and buckets; its engines must keep hashes as the
// backup's did (persistent engines, or in-memory ones).

// backupManifest describes a backup.
type backupManifest struct {
	Format       int           `json:"format"`
	Created      time.Time     `json:"created"`
	TableVersion route.Version `json:"table_version"`
	Buckets      uint32        `json:"buckets"`
	Copies       int           `json:"copies"`
	Engine       string        `json:"engine"`
	Records      uint64        `json:"records"`
	Bytes        int64         `json:"bytes"`
	// Nodes are the masters the buckets were read from.
	Nodes []backupNode `json:"nodes"`
}

type backupNode struct {
	Addr    string           `json:"addr"`
	Buckets []route.BucketID `json:"buckets"`
	Records uint64           `json:"records"`
}

const backupFormat = 1

func backupCmd(e *ctlEnv) *cobra.Command {
	var attempts int
	cmd := &cobra.Command{
		Use:   "backup DIR",
		Short: "copy every bucket's records, as of one table version, into DIR (a new directory), without stopping writes",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := args[0]
			if err := os.Mkdir(dir, 0o755); err != nil {
				return fmt.Errorf("backup: %w (give a new directory)", err)
			}
			var m *backupManifest
			var err error
			for try := 1; ; try++ {
				m, err = e.backupOnce(cmd, dir)
				if err == nil || !errors.Is(err, errTableMoved) || try >= attempts {
					break
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "backup: %v; starting again\n", err)
				if err := os.RemoveAll(filepath.Join(dir, "buckets")); err != nil {
					return err
				}
			}
			if err != nil {
				return err
			}
			b, err := json.MarshalIndent(m, "", "  ")
			if err != nil {
				return err
			}
			if err := writeFileSynced(filepath.Join(dir, "manifest.json"), append(b, '\n')); err != nil {
				return err
			}
			return e.print(cmd, m, func(w io.Writer) error {
				_, err := fmt.Fprintf(w, "backup of table %d: %d records, %d bytes, %d buckets from %d nodes in %s\n",
					m.TableVersion, m.Records, m.Bytes, m.Buckets, len(m.Nodes), dir)
				return err
			})
		},
	}
	cmd.Flags().IntVar(&attempts, "attempts", 5, "how many times to start again when the table changes during the backup (a failover, a migration)")
	return cmd
}

// errTableMoved: a node answered that the table is no longer the one the
// backup started from.
var errTableMoved = errors.New("the bucket table changed")

// backupOnce reads every bucket into dir/buckets under the current table.
func (e *ctlEnv) backupOnce(cmd *cobra.Command, dir string) (*backupManifest, error) {
	c, cancel := e.ctx(cmd.Context())
	t, err := e.client().Table(c, 0, 0)
	if err != nil {
		cancel()
		return nil, err
	}
	var nodes []wire.NodeStatus
	err = e.client().Get(c, "/v1/nodes", &nodes)
	cancel()
	if err != nil {
		return nil, err
	}
	status := map[string]wire.NodeStatus{}
	for _, n := range nodes {
		status[n.Addr] = n
	}
	m := &backupManifest{Format: backupFormat, Created: time.Now().UTC(), TableVersion: t.Version,
		Buckets: t.Buckets, Copies: t.Copies}
	byMaster := map[string][]route.BucketID{}
	for b := range route.BucketID(t.Buckets) {
		master := t.Master(b)
		if master == "" {
			return nil, fmt.Errorf("backup: bucket %d has no master under table %d (a node is down): nothing written", b, t.Version)
		}
		byMaster[master] = append(byMaster[master], b)
	}
	if err := os.MkdirAll(filepath.Join(dir, "buckets"), 0o755); err != nil {
		return nil, err
	}
	for _, addr := range slices.Sorted(maps.Keys(byMaster)) {
		st := status[addr]
		if st.HTTP == "" {
			return nil, fmt.Errorf("backup: the configserver knows no HTTP address of %s", addr)
		}
		switch {
		case m.Engine == "":
			m.Engine = st.Engine
		case hashLayout(st.Engine) != hashLayout(m.Engine):
			return nil, fmt.Errorf("backup: %s runs %s, %s runs %s: one cluster, two kinds of engine", m.Nodes[0].Addr, m.Engine, addr, st.Engine)
		}
		node := backupNode{Addr: addr, Buckets: byMaster[addr]}
		start := time.Now()
		n, size, err := fetchBackup(cmd.Context(), st.HTTP, t.Version, node.Buckets, filepath.Join(dir, "buckets"))
		if err != nil {
			return nil, fmt.Errorf("backup of %s: %w", addr, err)
		}
		node.Records = n
		m.Records += n
		m.Bytes += size
		m.Nodes = append(m.Nodes, node)
		fmt.Fprintf(cmd.ErrOrStderr(), "backup: %s: %d buckets, %d records, %d bytes in %s\n",
			addr, len(node.Buckets), n, size, time.Since(start).Round(time.Millisecond))
	}
	return m, nil
}

// fetchBackup reads buckets from one master into a file each in dir, and
// returns the records and bytes it wrote.
func fetchBackup(ctx context.Context, httpAddr string, ver route.Version, buckets []route.BucketID, dir string) (uint64, int64, error) {
	ids := make([]string, len(buckets))
	for i, b := range buckets {
		ids[i] = strconv.FormatUint(uint64(b), 10)
	}
	u := fmt.Sprintf("http://%s/v1/backup?table=%d&buckets=%s", httpAddr, ver, url.QueryEscape(strings.Join(ids, ",")))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		err := fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(msg)))
		if resp.StatusCode == http.StatusConflict {
			err = fmt.Errorf("%w: %v", errTableMoved, err)
		}
		return 0, 0, err
	}
	// Each bucket's file is created when its first chunk comes (a bucket
	// without records has an empty one) and closed when the next begins;
	// a node sends a bucket's chunks together.
	var f *os.File
	var w *bufio.Writer
	var cur route.BucketID
	var size int64
	closeFile := func() error {
		if f == nil {
			return nil
		}
		err := w.Flush()
		if err == nil {
			err = f.Sync()
		}
		return errors.Join(err, f.Close())
	}
	files := map[route.BucketID]bool{}
	records, err := dataserver.ReadBackup(bufio.NewReaderSize(resp.Body, 64<<10), func(b route.BucketID, chunk []byte) error {
		if f == nil || b != cur {
			if files[b] {
				return fmt.Errorf("bucket %d's chunks came apart", b)
			}
			if err := closeFile(); err != nil {
				return err
			}
			var err error
			if f, err = os.Create(filepath.Join(dir, strconv.FormatUint(uint64(b), 10))); err != nil {
				return err
			}
			w, files[b], cur = bufio.NewWriterSize(f, 64<<10), true, b
		}
		_, err := w.Write(chunk)
		size += int64(len(chunk))
		return err
	})
	if err := errors.Join(err, closeFile()); err != nil {
		return 0, 0, err
	}
	for _, b := range buckets {
		if !files[b] {
			if err := writeFileSynced(filepath.Join(dir, strconv.FormatUint(uint64(b), 10)), nil); err != nil {
				return 0, 0, err
			}
		}
	}
	return records, size, nil
}

func restoreCmd(e *ctlEnv) *cobra.Command {
	var pipeline int
	cmd := &cobra.Command{
		Use:   "restore DIR",
		Short: "write every record of the backup in DIR into the cluster, through its proxy (values, types, versions and expiries as backed up)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := args[0]
			b, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
			if err != nil {
				return fmt.Errorf("restore: %w (a backup that did not finish has no manifest)", err)
			}
			var m backupManifest
			if err := json.Unmarshal(b, &m); err != nil {
				return fmt.Errorf("restore: manifest.json: %w", err)
			}
			if m.Format != backupFormat {
				return fmt.Errorf("restore: backup format %d, this tair reads %d", m.Format, backupFormat)
			}
			if err := e.restoreFits(cmd, &m); err != nil {
				return err
			}
			r := &restorer{e: e, ctx: cmd.Context(), depth: max(pipeline, 1), conns: map[uint16]*redis.Client{},
				pending: map[uint16]redis.Pipeliner{}, progress: cmd.ErrOrStderr(), total: m.Records}
			defer r.close()
			start := time.Now()
			for bk := range route.BucketID(m.Buckets) {
				if err := r.file(filepath.Join(dir, "buckets", strconv.FormatUint(uint64(bk), 10))); err != nil {
					return fmt.Errorf("restore: bucket %d: %w", bk, err)
				}
			}
			if err := r.flushAll(); err != nil {
				return err
			}
			if r.done != m.Records {
				return fmt.Errorf("restore: wrote %d records, the manifest counts %d", r.done, m.Records)
			}
			took := time.Since(start).Seconds()
			return e.print(cmd, map[string]any{"records": r.done, "table_version": m.TableVersion, "seconds": took}, func(w io.Writer) error {
				_, err := fmt.Fprintf(w, "restored %d records of the backup of table %d in %.1f s\n", r.done, m.TableVersion, took)
				return err
			})
		},
	}
	cmd.Flags().IntVar(&pipeline, "pipeline", 256, "records in flight per area")
	return cmd
}

// restoreFits checks that the cluster's engines keep hashes as the
// backup's did: a persistent engine keeps a hash as prefix records, an
// in-memory one as one object, and a record of one kind reads as
// nothing on the other.
func (e *ctlEnv) restoreFits(cmd *cobra.Command, m *backupManifest) error {
	var nodes []wire.NodeStatus
	if err := e.getJSON(cmd, "/v1/nodes", &nodes); err != nil {
		return err
	}
	want := hashLayout(m.Engine)
	for _, n := range nodes {
		if n.Alive && hashLayout(n.Engine) != want {
			return fmt.Errorf("restore: the backup is of %s, %s runs %s: restore into a cluster of %s", m.Engine, n.Addr, n.Engine, want)
		}
	}
	return nil
}

// hashLayout names how an engine keeps a hash: the persistent engines as
// prefix records, the in-memory ones as one object. Records move only
// between engines of one layout; an engine this does not know is its
// own.
func hashLayout(engine string) string {
	switch engine {
	case "ldb", "kdb":
		return "persistent engines (ldb, kdb)"
	case "rdb", "mdb":
		return "in-memory engines (rdb, mdb)"
	}
	return "engine " + engine
}

// restorer writes records through the proxy, pipelined per area.
type restorer struct {
	e        *ctlEnv
	ctx      context.Context
	depth    int
	conns    map[uint16]*redis.Client
	pending  map[uint16]redis.Pipeliner
	done     uint64
	total    uint64
	progress io.Writer
	last     time.Time
}

// file writes the records of one bucket's file.
func (r *restorer) file(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	cr := engines.NewChunkReader(data)
	for {
		rec, err := cr.Next()
		if err != nil || rec == nil {
			return err
		}
		if err := r.add(rec); err != nil {
			return err
		}
	}
}

func (r *restorer) add(rec *engines.Record) error {
	payload, err := engines.AppendRecord(nil, rec)
	if err != nil {
		return err
	}
	p := r.pending[rec.Area]
	if p == nil {
		c := r.conns[rec.Area]
		if c == nil {
			c = r.e.redis(int(rec.Area))
			r.conns[rec.Area] = c
		}
		p = c.Pipeline()
		r.pending[rec.Area] = p
	}
	p.Do(r.ctx, "TAIR.RESTOREREC", string(rec.Key), payload)
	if p.Len() >= r.depth {
		return r.flush(rec.Area)
	}
	return nil
}

func (r *restorer) flush(area uint16) error {
	p := r.pending[area]
	if p == nil || p.Len() == 0 {
		return nil
	}
	n := p.Len()
	cmds, err := p.Exec(r.ctx)
	for _, c := range cmds {
		if c.Err() != nil {
			return fmt.Errorf("restore: area %d: %v: %w", area, c.Args()[1], c.Err())
		}
	}
	if err != nil {
		return fmt.Errorf("restore: area %d: %w", area, err)
	}
	r.done += uint64(n)
	if time.Since(r.last) >= time.Second {
		r.last = time.Now()
		fmt.Fprintf(r.progress, "restore: %d of %d records\n", r.done, r.total)
	}
	return nil
}

func (r *restorer) flushAll() error {
	for _, a := range slices.Sorted(maps.Keys(r.pending)) {
		if err := r.flush(a); err != nil {
			return err
		}
	}
	return nil
}

func (r *restorer) close() {
	for _, c := range r.conns {
		_ = c.Close()
	}
}

// writeFileSynced writes data to path and syncs it.
func writeFileSynced(path string, data []byte) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	return errors.Join(err, f.Close())
}

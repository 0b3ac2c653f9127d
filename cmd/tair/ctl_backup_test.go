package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tairkv/tair/cluster"
	"github.com/tairkv/tair/engines"
	"github.com/tairkv/tair/engines/ds"
	"github.com/tairkv/tair/internal/route"
	"github.com/tairkv/tair/internal/testcluster"
)

// Write, back up, write more, restore into a new cluster (other nodes,
// other buckets): the new cluster holds exactly the records of the
// backup, versions and expiries included, and nothing written after it.
// Each engine kind: ldb (pebble checkpoint), kdb (bbolt copy), rdb (read
// live).
func TestCtlBackupRestore(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two clusters per engine")
	}
	for _, engine := range []string{"ldb", "kdb", "rdb"} {
		t.Run(engine, func(t *testing.T) {
			src := testcluster.New(t, testcluster.Options{Options: cluster.Options{
				DataServers: 3, Copies: 2, Buckets: 64, Engine: engine}})
			srcCS, srcProxy := strings.Join(src.ConfigServerAddrs(), ","), src.Proxies[0].Addr()
			ctx := context.Background()
			writeBackupData(t, ctx, srcProxy, 0)
			writeBackupData(t, ctx, srcProxy, 5)
			want := clusterRecords(t, src.Cluster)
			const busyArea = 9
			if len(want) < 400 {
				t.Fatalf("the source holds %d records, want at least 400", len(want))
			}

			// Writes go on during the backup (in area 9, left out of the
			// comparison: the backup takes some of them, at its instant).
			busy := redis.NewClient(&redis.Options{Addr: srcProxy, DB: busyArea})
			defer busy.Close()
			stop, acked, failed := make(chan struct{}), make(chan int), make(chan error, 1)
			go func() {
				n := 0
				defer func() { acked <- n }()
				for {
					select {
					case <-stop:
						return
					default:
					}
					if err := busy.Set(ctx, fmt.Sprintf("busy:%d", n%500), n, 0).Err(); err != nil {
						failed <- err
						return
					}
					n++
				}
			}()
			dir := filepath.Join(t.TempDir(), "backup")
			out := ctl(t, srcCS, "--proxy", srcProxy, "backup", dir)
			close(stop)
			if n := <-acked; n == 0 {
				t.Fatal("no write acknowledged while the backup ran")
			}
			select {
			case err := <-failed:
				t.Fatalf("a write during the backup: %v", err)
			default:
			}
			wantContains(t, out, "64 buckets from 3 nodes")
			if _, err := ctlErr(srcCS, "backup", dir); err == nil {
				t.Fatal("a backup into an existing directory: no error")
			}

			// Written after the backup: none of it may come back.
			c := redis.NewClient(&redis.Options{Addr: srcProxy})
			defer c.Close()
			for _, cmd := range [][]any{{"SET", "str:0", "after"}, {"DEL", "str:1"}, {"SET", "new", "after"},
				{"HSET", "hash", "f1", "after"}, {"RPUSH", "list", "after"}} {
				if err := c.Do(ctx, cmd...).Err(); err != nil {
					t.Fatal(cmd, err)
				}
			}

			dst := testcluster.New(t, testcluster.Options{Options: cluster.Options{
				DataServers: 2, Copies: 2, Buckets: 16, Engine: engine}})
			dstCS, dstProxy := strings.Join(dst.ConfigServerAddrs(), ","), dst.Proxies[0].Addr()
			out = ctl(t, dstCS, "--proxy", dstProxy, "restore", dir)
			wantContains(t, out, "restored ")
			got := clusterRecords(t, dst.Cluster)
			for k := range got {
				if strings.HasPrefix(k, fmt.Sprint(busyArea)+"/") {
					delete(got, k)
				}
			}
			diffRecords(t, want, got)

			// The restored records are served, through the new proxy.
			d := redis.NewClient(&redis.Options{Addr: dstProxy, DB: 5})
			defer d.Close()
			if v, err := d.Get(ctx, "str:0").Result(); err != nil || v != "value-0" {
				t.Fatalf("GET str:0 in area 5 after the restore: %q, %v", v, err)
			}
			if ttl, err := d.PTTL(ctx, "ttl:3").Result(); err != nil || ttl <= 0 || ttl > time.Hour {
				t.Fatalf("PTTL ttl:3 after the restore: %v, %v", ttl, err)
			}
		})
	}
}

// A restore refuses a cluster whose engines keep hashes otherwise, and a
// directory without a manifest (a backup that did not finish).
func TestCtlRestoreRefuses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two clusters")
	}
	src := testcluster.New(t, testcluster.Options{Options: cluster.Options{DataServers: 1, Copies: 1, Buckets: 8, Engine: "ldb"}})
	writeBackupData(t, context.Background(), src.Proxies[0].Addr(), 0)
	srcCS := strings.Join(src.ConfigServerAddrs(), ",")
	dir := filepath.Join(t.TempDir(), "backup")
	var m backupManifest
	decodeJSON(t, ctl(t, srcCS, "backup", dir, "--json"), &m)
	if m.Format != backupFormat || m.TableVersion == 0 || m.Buckets != 8 || m.Engine != "ldb" || m.Records < 400 ||
		len(m.Nodes) != 1 || len(m.Nodes[0].Buckets) != 8 || m.Nodes[0].Records != m.Records {
		t.Fatalf("backup --json: %+v", m)
	}
	// Restored over its own cluster: every record written once more.
	var r struct {
		Records      uint64        `json:"records"`
		TableVersion route.Version `json:"table_version"`
		Seconds      float64       `json:"seconds"`
	}
	decodeJSON(t, ctl(t, srcCS, "--proxy", src.Proxies[0].Addr(), "restore", dir, "--json"), &r)
	if r.Records != m.Records || r.TableVersion != m.TableVersion || r.Seconds <= 0 {
		t.Fatalf("restore --json: %+v, want the manifest's %d records of table %d", r, m.Records, m.TableVersion)
	}

	dst := testcluster.New(t, testcluster.Options{Options: cluster.Options{DataServers: 1, Copies: 1, Buckets: 8, Engine: "rdb"}})
	dstCS := strings.Join(dst.ConfigServerAddrs(), ",")
	if _, err := ctlErr(dstCS, "--proxy", dst.Proxies[0].Addr(), "restore", dir); err == nil ||
		!strings.Contains(err.Error(), "restore into a cluster of persistent engines") {
		t.Fatalf("restore of an ldb backup into rdb: %v", err)
	}
	if err := os.Remove(filepath.Join(dir, "manifest.json")); err != nil {
		t.Fatal(err)
	}
	if _, err := ctlErr(dstCS, "--proxy", dst.Proxies[0].Addr(), "restore", dir); err == nil ||
		!strings.Contains(err.Error(), "a backup that did not finish has no manifest") {
		t.Fatalf("restore without a manifest: %v", err)
	}
}

// writeBackupData writes records of every kind into area: strings (one
// rewritten, so its version is 3), strings with an expiry, a hash, a
// list, sets, a sorted set, a TairHash and Tair items.
func writeBackupData(t *testing.T, ctx context.Context, proxy string, area int) {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: proxy, DB: area})
	defer c.Close()
	p := c.Pipeline()
	for i := range 200 {
		p.Set(ctx, fmt.Sprintf("str:%d", i), fmt.Sprintf("value-%d", i), 0)
		p.Set(ctx, fmt.Sprintf("ttl:%d", i), "expires", time.Hour)
	}
	p.Set(ctx, "str:7", "again", 0)
	p.Set(ctx, "str:7", "and again", 0)
	for i := range 40 {
		p.HSet(ctx, "hash", fmt.Sprintf("f%d", i), i)
		p.ZAdd(ctx, "zset", redis.Z{Score: float64(i) / 3, Member: fmt.Sprintf("m%d", i)})
		p.SAdd(ctx, "set", fmt.Sprintf("e%d", i))
		p.SAdd(ctx, "intset", i)
	}
	p.RPush(ctx, "list", "a", "b", "c")
	p.Do(ctx, "EXHSET", "tairhash", "f", "v")
	p.Do(ctx, "EXHSET", "tairhash", "g", "w", "EX", "3600")
	p.Expire(ctx, "hash", time.Hour)
	if _, err := p.Exec(ctx); err != nil {
		t.Fatal(err)
	}
}

// clusterRecords is every record the cluster's masters hold, as text
// that says everything a record is (area, key, type, version, expiry,
// hidden, value or encoded object, skeys).
func clusterRecords(t *testing.T, c *cluster.Cluster) map[string]string {
	t.Helper()
	var tb *route.Table
	// The table the nodes serve, once every node serves it.
	deadline := time.Now().Add(10 * time.Second)
	for {
		tb = c.DataServers[0].Table()
		same := tb != nil
		for _, ds := range c.DataServers {
			same = same && ds.Table() != nil && ds.Table().Version == tb.Version
		}
		if same || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	out := map[string]string{}
	for _, ds := range c.DataServers {
		for b := range route.BucketID(tb.Buckets) {
			if !tb.IsMaster(b, ds.Addr()) {
				continue
			}
			err := ds.Engine().ForEach(uint32(b), func(r *engines.Record) error {
				k := fmt.Sprintf("%d/%s", r.Area, r.Key)
				if _, dup := out[k]; dup {
					return fmt.Errorf("%s is in two buckets", k)
				}
				s, err := recordText(&r.Entry)
				for _, kv := range r.Prefix {
					sk, err2 := recordText(&kv.Entry)
					s += fmt.Sprintf(" [%q %s]", kv.Key, sk)
					err = errorsJoin(err, err2)
				}
				out[k] = s
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	return out
}

func recordText(e *engines.Entry) (string, error) {
	v, err := objectText(e.Object)
	if e.Object == nil {
		v = string(e.Value)
	}
	return fmt.Sprintf("%v v%d exp%d hidden=%v flags=%d %q", e.Type, e.Version, e.ExpireAt, e.Hidden, e.Flags, v), err
}

// objectText is what an Object holds: its encoding, but for the hashes,
// which encode their fields in map order, its fields sorted.
func objectText(o engines.Object) (string, error) {
	var fields []string
	switch h := o.(type) {
	case nil:
		return "", nil
	case *ds.Hash:
		h.Range(func(f, v string) bool {
			fields = append(fields, fmt.Sprintf("%q=%q", f, v))
			return true
		})
	case *ds.ExHash:
		h.Range(0, func(f string, x *ds.ExField) bool {
			fields = append(fields, fmt.Sprintf("%q=%+v", f, *x))
			return true
		})
		fields = append(fields, fmt.Sprintf("auto-expire=%d", h.AutoExpire))
	default:
		b, err := o.MarshalBinary()
		return string(b), err
	}
	sort.Strings(fields)
	return strings.Join(fields, " "), nil
}

func errorsJoin(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

func diffRecords(t *testing.T, want, got map[string]string) {
	t.Helper()
	var bad []string
	for k, w := range want {
		if g, ok := got[k]; !ok {
			bad = append(bad, fmt.Sprintf("missing %s: %s", k, w))
		} else if g != w {
			bad = append(bad, fmt.Sprintf("%s: got %s, want %s", k, g, w))
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok {
			bad = append(bad, fmt.Sprintf("extra %s: %s", k, g))
		}
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		t.Fatalf("%d of %d records differ:\n%s", len(bad), len(want), strings.Join(bad[:min(len(bad), 20)], "\n"))
	}
}

package engines_test

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"testing"

	"github.com/tairkv/tair/engines"
	_ "github.com/tairkv/tair/engines/kdb"
	_ "github.com/tairkv/tair/engines/ldb"
	_ "github.com/tairkv/tair/engines/rdb"
)

// A checkpoint holds exactly what was written before it (versions and
// expiries too), none of what came after, and opens as the same engine;
// an in-memory engine says it takes none. The record codec carries each
// record of it unchanged.
func TestCheckpoint(t *testing.T) {
	for _, name := range []string{"ldb", "kdb"} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			e, err := engines.Open(name, engines.Options{Dir: filepath.Join(dir, "live"), Sync: engines.SyncNone})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			key := func(i int) engines.Key {
				return engines.Key{Bucket: uint32(i % 3), Area: uint16(i % 2), Key: []byte(fmt.Sprintf("k%d", i))}
			}
			// Odd keys expire in 2096.
			expiry := func(i int) int64 { return int64(i%2) * (4e12 + int64(i)) }
			for i := 0; i < 100; i++ {
				o := engines.PutOptions{}
				if at := expiry(i); at != 0 {
					o.Expire = engines.Expire{Mode: engines.ExpireAt, At: at}
				}
				if _, err := e.Put(key(i), []byte(fmt.Sprintf("v%d", i)), o); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := e.Put(key(7), []byte("v7 again"), engines.PutOptions{Expire: engines.Expire{Mode: engines.ExpireKeep}}); err != nil {
				t.Fatal(err)
			}
			cpDir := filepath.Join(dir, "checkpoint")
			if err := e.(engines.Checkpointer).Checkpoint(cpDir); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 100; i += 2 {
				if _, err := e.Put(key(i), []byte("after"), engines.PutOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := e.Put(key(1000), []byte("after"), engines.PutOptions{}); err != nil {
				t.Fatal(err)
			}

			cp, err := engines.Open(name, engines.Options{Dir: cpDir, Sync: engines.SyncNone})
			if err != nil {
				t.Fatal(err)
			}
			defer cp.Close()
			n := 0
			for b := uint32(0); b < 3; b++ {
				err := cp.ForEach(b, func(r *engines.Record) error {
					n++
					var i int
					if _, err := fmt.Sscanf(string(r.Key), "k%d", &i); err != nil || i >= 100 {
						return fmt.Errorf("checkpoint holds %q", r.Key)
					}
					want, version, expireAt := fmt.Sprintf("v%d", i), int64(1), expiry(i)
					if i == 7 {
						want, version = "v7 again", 2
					}
					if string(r.Entry.Value) != want || r.Entry.Version != version || r.Entry.ExpireAt != expireAt || r.Area != uint16(i%2) || b != uint32(i%3) {
						return fmt.Errorf("checkpoint's %q: %q version %d expire %d area %d bucket %d", r.Key, r.Entry.Value, r.Entry.Version, r.Entry.ExpireAt, r.Area, b)
					}
					// The codec a backup writes it with gives it back unchanged.
					enc, err := engines.AppendRecord(nil, r)
					if err != nil {
						return err
					}
					got, err := engines.DecodeRecord(enc)
					if err != nil || string(got.Key) != string(r.Key) || string(got.Entry.Value) != want || got.Entry.Version != version || got.Entry.ExpireAt != expireAt || got.Area != r.Area {
						return fmt.Errorf("%q through the codec: %+v, %v", r.Key, got, err)
					}
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
			}
			if n != 100 {
				t.Fatalf("checkpoint holds %d records, want 100", n)
			}
		})
	}
	e, err := engines.Open("rdb", engines.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if cp, ok := e.(engines.Checkpointer); ok {
		if err := cp.Checkpoint(t.TempDir()); !errors.Is(err, engines.ErrNoCheckpoint) {
			t.Fatalf("rdb Checkpoint: %v, want ErrNoCheckpoint", err)
		}
	}
}

// The record codec reads back the versions and expiries it wrote, the
// signed edges included.
func TestRecordCodecSignedFields(t *testing.T) {
	for _, v := range []int64{0, 1, -1, 63, -64, 64, -65, math.MaxInt64, math.MinInt64} {
		r := &engines.Record{Area: 3, Key: []byte("k"), Entry: engines.Entry{Value: []byte("v"), Version: v, ExpireAt: -v}}
		b, err := engines.AppendRecord(nil, r)
		if err != nil {
			t.Fatal(err)
		}
		got, err := engines.DecodeRecord(b)
		if err != nil || got.Entry.Version != v || got.Entry.ExpireAt != -v {
			t.Fatalf("version %d, expiry %d through the codec: %+v, %v", v, -v, got, err)
		}
	}
	if _, err := engines.DecodeRecord([]byte{0, 3, 1, 'k', 0, 0}); !errors.Is(err, engines.ErrBadRecord) {
		t.Fatalf("a record cut in its version: %v, want ErrBadRecord", err)
	}
}

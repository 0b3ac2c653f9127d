package dataserver

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tairkv/tair/engines"
	_ "github.com/tairkv/tair/engines/kdb"
	_ "github.com/tairkv/tair/engines/ldb"
	_ "github.com/tairkv/tair/engines/mdb"
	"github.com/tairkv/tair/internal/route"
	"github.com/tairkv/tair/internal/testutil"
)

// DBSIZE and NODESTATS KEYSPACE read the engine's key counters
// (engines.Engine.CountKeys) instead of walking the buckets. These tests
// check the counters against such a walk, and against the keys written,
// where they change most: a bucket moving between nodes, and an expiry
// sweep.

// inAreaV wraps a command in the envelope for area at table version v.
func inAreaV(area uint16, v route.Version, args ...string) []string {
	return append([]string{"TAIR.X", strconv.Itoa(int(area)), strconv.FormatUint(uint64(v), 10), "2"}, args...)
}

// nodeStats is a node's NODESTATS KEYSPACE reply as name -> value.
func nodeStats(t *testing.T, n *Server) map[string]int64 {
	t.Helper()
	raw := dial(t, n.Addr()).do(x(n.TableVersion(), "NODESTATS", "KEYSPACE")...)
	lines := strings.Split(raw, "\r\n")
	out := map[string]int64{}
	for i := 1; i+2 < len(lines); i += 3 {
		v, err := strconv.ParseInt(strings.TrimPrefix(lines[i+2], ":"), 10, 64)
		if !strings.HasPrefix(lines[i], "$") || err != nil {
			t.Fatalf("NODESTATS reply %q", raw)
		}
		out[lines[i+1]] = v
	}
	return out
}

// walkCounts is what DBSIZE and INFO keyspace counted before there were
// counters: a walk of the node's master buckets, by area.
func walkCounts(t *testing.T, n *Server) map[uint16]engines.KeyCounts {
	t.Helper()
	now := time.Now().UnixMilli()
	out := map[uint16]engines.KeyCounts{}
	for _, b := range n.masterBuckets() {
		err := n.Engine().ForEach(b, func(r *engines.Record) error {
			if r.Entry.Hidden {
				return nil
			}
			c := out[r.Area]
			c.Keys++
			if at := r.Entry.ExpireAt; at != 0 {
				c.Expires++
				c.TTL += at - now
			}
			out[r.Area] = c
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// bucketCounts is the engine's CountKeys of one bucket, by area.
func bucketCounts(n *Server, b route.BucketID) map[uint16]engines.KeyCounts {
	out := map[uint16]engines.KeyCounts{}
	n.Engine().CountKeys([]uint32{uint32(b)}, func(area uint16, c engines.KeyCounts) { out[area] = c })
	return out
}

// checkCounts checks a node's DBSIZE and NODESTATS of areas against want
// visible keys each and against a walk: keys and expires exactly, the TTL
// sum within the time the checks take.
func checkCounts(t *testing.T, n *Server, areas []uint16, want int64) {
	t.Helper()
	before := time.Now()
	st := nodeStats(t, n)
	walk := walkCounts(t, n)
	slack := time.Since(before).Milliseconds() + 1
	for _, a := range areas {
		got := dial(t, n.Addr()).do(inAreaV(a, n.TableVersion(), "DBSIZE")...)
		if got != fmt.Sprintf(":%d", want) || walk[a].Keys != want {
			t.Fatalf("%s area %d: DBSIZE %s, a walk finds %d keys, want %d", n.Addr(), a, got, walk[a].Keys, want)
		}
		p := fmt.Sprintf("db%d_", a)
		w := walk[a]
		if st[p+"keys"] != w.Keys || st[p+"expires"] != w.Expires || st[p+"ttl_ms"] < w.TTL || st[p+"ttl_ms"] > w.TTL+w.Expires*slack {
			t.Fatalf("%s area %d: NODESTATS %v, a walk finds %+v", n.Addr(), a, st, w)
		}
	}
}

// TestKeyCountsFollowMigration: a bucket moving from one master to another
// takes its counts along (restored records are counted, the source's copy
// is uncounted when it drops it), for every engine.
func TestKeyCountsFollowMigration(t *testing.T) {
	for _, eng := range []string{"rdb", "mdb", "ldb", "kdb"} {
		t.Run(eng, func(t *testing.T) {
			cs := newFakeCS(t)
			nodes := startEngineNodes(t, cs, eng, 3)
			a, b, c := nodes[0], nodes[1], nodes[2]
			t1 := ringTable(1, q, 2, a.Addr(), b.Addr()) // even buckets: master a; odd: b
			cs.setTable(t1)
			waitVersion(t, 1, nodes...)

			// In each of buckets 0, 1, 2 and areas 0, 3: 6 visible keys,
			// 2 of them with a TTL, and a hidden key with a TTL.
			areas := []uint16{0, 3}
			exp := strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10)
			for bucket := route.BucketID(0); bucket < 3; bucket++ {
				master := dial(t, a.Addr())
				if bucket == 1 {
					master = dial(t, b.Addr())
				}
				k := func(name string) string { return keyIn(name, bucket, q, 0) }
				for _, area := range areas {
					for _, w := range [][]string{
						{"SET", k("s1"), "v"}, {"SET", k("s2"), "v"},
						{"SET", k("x1"), "v", "EX", "3600"}, {"SET", k("x2"), "v", "EXAT", exp},
						{"HSET", k("h"), "f", "v"},
						{"TAIR.PPUT", k("p"), "s1", "v"}, {"TAIR.PPUT", k("p"), "s2", "v"},
						{"SET", k("hid"), "v", "EX", "3600"}, {"TAIR.HIDE", k("hid")},
					} {
						if r := master.do(inAreaV(area, 1, w...)...); strings.HasPrefix(r, "-") {
							t.Fatalf("%v: %s", w, r)
						}
					}
				}
			}
			checkCounts(t, a, areas, 12)
			checkCounts(t, b, areas, 6)
			checkCounts(t, c, areas, 0)
			moved := bucketCounts(a, 0)
			for _, area := range areas {
				if got := moved[area]; got.Keys != 6 || got.Hidden != 1 || got.Expires != 2 {
					t.Fatalf("bucket 0 area %d on its master: %+v", area, got)
				}
			}

			// Move bucket 0 from a to c.
			moveBucket(t, cs, t1, 0, a, c, nodes...)
			checkCounts(t, a, areas, 6)
			checkCounts(t, b, areas, 6)
			checkCounts(t, c, areas, 6)
			for _, n := range []*Server{b, c} { // the slave's copy and the new master's
				got := bucketCounts(n, 0)
				for _, area := range areas {
					if g, w := got[area], moved[area]; g.Keys != w.Keys || g.Hidden != w.Hidden || g.Expires != w.Expires {
						t.Fatalf("%s: bucket 0 area %d counts %+v, were %+v on the old master", n.Addr(), area, g, w)
					}
				}
			}
			// The old master drops its copy after the grace period, and
			// its counts with it.
			testutil.Eventually(t, 5*time.Second, func() bool { return len(bucketCounts(a, 0)) == 0 },
				"the old master still counts keys in bucket 0: %+v", bucketCounts(a, 0))
			checkCounts(t, a, areas, 6)
			if got := bucketCounts(a, 2); got[0].Keys != 6 || got[3].Keys != 6 {
				t.Fatalf("the old master's other bucket: %+v", got)
			}
		})
	}
}

// TestKeyCountsAfterExpirySweep: keys that expire leave the counts once
// the background sweep reclaimed them, hidden ones and skeys included, on
// the master and on its slave.
func TestKeyCountsAfterExpirySweep(t *testing.T) {
	for _, eng := range []string{"rdb", "ldb"} {
		t.Run(eng, func(t *testing.T) {
			cs := newFakeCS(t)
			nodes := startEngineNodes(t, cs, eng, 2)
			a, b := nodes[0], nodes[1]
			cs.setTable(ringTable(1, q, 2, a.Addr(), b.Addr()))
			waitVersion(t, 1, nodes...)
			ca := dial(t, a.Addr())
			k := func(name string, i int) string { return keyIn(name, 0, q, i) }
			var writes [][]string
			for i := 0; i < 5; i++ {
				writes = append(writes, []string{"SET", k("short", i), "v", "PX", "300"})
			}
			for i := 0; i < 3; i++ {
				writes = append(writes, []string{"SET", k("keep", i), "v"})
			}
			writes = append(writes,
				[]string{"SET", k("hid", 0), "v", "PX", "300"}, []string{"TAIR.HIDE", k("hid", 0)},
				[]string{"HSET", k("h", 0), "f", "v"}, []string{"PEXPIRE", k("h", 0), "300"},
				[]string{"SET", k("long", 0), "v", "EX", "3600"})
			for _, w := range writes {
				if r := ca.do(x(1, w...)...); strings.HasPrefix(r, "-") || r == ":0" {
					t.Fatalf("%v: %s", w, r)
				}
			}
			// A persistent engine keeps a hash as prefix records, and a
			// pkey has no expiry of its own (its fields have): INFO
			// keyspace counted it so before there were counters, and
			// still does.
			// expiring is both the visible keys with a TTL (5 short, h,
			// long) and the plain keys that expire (5 short, hid, h).
			expiring := int64(7)
			if a.Engine().Persistent() {
				expiring = 6
			}
			if got := bucketCounts(a, 0)[0]; got.Keys != 10 || got.Hidden != 1 || got.Expires != expiring {
				t.Fatalf("before expiry: %+v", got)
			}
			// The sweep (every second) reclaims the expired plain keys.
			expired := func(n *Server) int64 { return n.Engine().(interface{ ExpiredKeys() int64 }).ExpiredKeys() }
			testutil.Eventually(t, 5*time.Second, func() bool { return expired(a) >= expiring && expired(b) >= expiring },
				"the sweeps reclaimed %d and %d keys, want %d", expired(a), expired(b), expiring)
			checkCounts(t, a, []uint16{0}, 4)
			st := nodeStats(t, a)
			if st["db0_keys"] != 4 || st["db0_expires"] != 1 || st["db0_ttl_ms"] <= 3500_000 || st["db0_ttl_ms"] > 3600_000 {
				t.Fatalf("NODESTATS after expiry: %v", st)
			}
			for _, n := range []*Server{a, b} {
				if got := bucketCounts(n, 0); len(got) != 1 || got[0].Keys != 4 || got[0].Hidden != 0 || got[0].Expires != 1 {
					t.Fatalf("%s after expiry: %+v", n.Addr(), got)
				}
			}
		})
	}
}

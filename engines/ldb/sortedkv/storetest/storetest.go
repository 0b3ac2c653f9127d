// Package storetest holds the durability tests that ldb and kdb share: a
// crash test with a real child process killed with SIGKILL, and a clean
// close-and-reopen round trip under every sync policy. (The semantic
// conformance suite is package enginetest.)
//
// An engine's test package runs them all, with the semantic suites, by
// Run (suite.go), and declares the crash test's child:
//
//	func TestSuites(t *testing.T)        { storetest.Run(t, engine) }
//	func TestHelperProcess(t *testing.T) { storetest.Child(t, engine.Disk) }
package storetest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tairkv/tair/engines"
	"github.com/tairkv/tair/engines/enginetest"
	"github.com/tairkv/tair/engines/generic"
	"github.com/tairkv/tair/engines/ldb/sortedkv"
	"github.com/tairkv/tair/internal/errs"
)

// OpenFunc opens the engine under test in dir with policy sync and clock
// now (nil: time.Now).
type OpenFunc func(dir string, sync engines.SyncPolicy, now func() time.Time) (engines.Engine, error)

const (
	envDir  = "TAIR_STORETEST_DIR"
	envSync = "TAIR_STORETEST_SYNC"
	writers = 4
	// keysPerWriter keeps keys being rewritten, so that acknowledged
	// versions above 1 are checked too.
	keysPerWriter = 300
)

func plainName(w, i int) string { return fmt.Sprintf("w%d-k%04d", w, i%keysPerWriter) }
func pkeyName(w int) string     { return fmt.Sprintf("w%d-pkey", w) }
func skeyName(i int) string     { return fmt.Sprintf("s%04d", i%keysPerWriter) }

// value is the value of the n-th write of name: since one writer owns each
// key and the key starts missing, the n-th write stores version n.
func value(name string, n int64) string { return fmt.Sprintf("%s#%d", name, n) }

// Child is the body of the crash test's child process: it does nothing
// unless started by RunCrash. It opens the engine and writes until killed,
// printing "P name version" or "S pkey skey version" for every
// acknowledged write.
func Child(t *testing.T, open OpenFunc) {
	dir := os.Getenv(envDir)
	if dir == "" {
		t.Skip("helper process for the crash test")
	}
	e, err := open(dir, engines.SyncPolicy(os.Getenv(envSync)), nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "open:", err)
		os.Exit(2)
	}
	var mu sync.Mutex // one line per write(2), so lines never interleave
	// An engine that groups its fsyncs (engines.GroupCommitter)
	// acknowledges a write once a ticket taken after it is durable, as
	// the dataserver does before it replies.
	group := engines.GroupCommitOf(e)
	ack := func(line string) {
		if group != nil {
			if err := group.WaitDurable(group.CommitTicket()); err != nil {
				fmt.Fprintln(os.Stderr, "wait durable:", err)
				os.Exit(5)
			}
		}
		mu.Lock()
		_, err := os.Stdout.WriteString(line)
		mu.Unlock()
		if err != nil {
			os.Exit(3)
		}
	}
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			seen := map[string]int64{}
			for i := 0; ; i++ {
				if i%2 == 0 {
					name := plainName(w, i/2)
					n := seen[name] + 1
					v, err := e.Put(enginetest.K(name), []byte(value(name, n)), engines.PutOptions{})
					if err != nil || v != n {
						fmt.Fprintf(os.Stderr, "put %s: v%d, %v (want v%d)\n", name, v, err, n)
						os.Exit(4)
					}
					seen[name] = n
					ack(fmt.Sprintf("P %s %d\n", name, n))
				} else {
					pk, sk := pkeyName(w), skeyName(i/2)
					id := pk + "/" + sk
					n := seen[id] + 1
					v, err := e.PrefixPut(enginetest.K(pk), []byte(sk), []byte(value(id, n)), engines.PutOptions{})
					if err != nil || v != n {
						fmt.Fprintf(os.Stderr, "pput %s: v%d, %v (want v%d)\n", id, v, err, n)
						os.Exit(4)
					}
					seen[id] = n
					ack(fmt.Sprintf("S %s %s %d\n", pk, sk, n))
				}
			}
		}()
	}
	wg.Wait()
}

// RunCrash starts the test binary as a writer child (TestHelperProcess),
// lets it acknowledge at least minAcks writes, kills it with SIGKILL, and
// checks that every acknowledged write survived with its value and
// version, and that the persisted counters agree with the data.
func RunCrash(t *testing.T, open OpenFunc, policy engines.SyncPolicy, minAcks int) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), envDir+"="+dir, envSync+"="+string(policy))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	acked := map[string]int64{} // "P name" or "S pkey skey" -> version
	n := 0
	sc := bufio.NewScanner(out)
	deadline := time.AfterFunc(30*time.Second, func() { _ = cmd.Process.Kill() })
	defer deadline.Stop()
	killed := false
	for sc.Scan() {
		line := sc.Text()
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			t.Fatalf("bad ack line %q", line)
		}
		v, err := strconv.ParseInt(line[i+1:], 10, 64)
		if err != nil {
			t.Fatalf("bad ack line %q", line)
		}
		acked[line[:i]] = v
		if n++; n == minAcks && !killed {
			// Kill while the writers are mid-flight. Acks already in the
			// pipe are read below: they were acknowledged too.
			killed = true
			if err := cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
		}
	}
	err = cmd.Wait()
	if !killed {
		t.Fatalf("child stopped after %d acks (want %d): %v\n%s", n, minAcks, err, stderr.String())
	}
	t.Logf("%s: child killed after %d acknowledged writes", policy, n)

	e, err := open(dir, policy, nil)
	if err != nil {
		t.Fatalf("reopen after kill: %v", err)
	}
	defer e.Close()
	lost := 0
	for id, want := range acked {
		f := strings.Fields(id)
		var ent engines.Entry
		var name string
		switch f[0] {
		case "P":
			name = f[1]
			ent, err = e.Get(enginetest.K(name))
		case "S":
			name = f[1] + "/" + f[2]
			ent, err = e.PrefixGet(enginetest.K(f[1]), []byte(f[2]))
		}
		// A write after the last acknowledged one may have reached the
		// disk without its ack reaching us: the version may be higher,
		// never lower, and the value is always the one of its version.
		switch {
		case err != nil:
			t.Errorf("%s: acknowledged v%d, now %v", name, want, err)
			lost++
		case ent.Version < want || string(ent.Value) != value(name, ent.Version):
			t.Errorf("%s: acknowledged v%d, now %q v%d", name, want, ent.Value, ent.Version)
			lost++
		}
		if lost > 10 {
			t.Fatalf("too many lost writes")
		}
	}
	checkCounts(t, e)
}

// checkCounts verifies that Count agrees with a walk over every live
// record (ForEach), and that Stats' keys and bytes and the persisted
// counters records agree with a walk over the stored data
// (sortedkv.Store.Recount: bytes are the encoded keys and values, which
// only the store's own walk can add up).
func checkCounts(t *testing.T, e engines.Engine) {
	t.Helper()
	d := dump(t, e)
	keys := map[uint16]int64{}
	for _, r := range d {
		keys[r.area]++
	}
	st := sortedStore(t, e)
	for a := uint16(0); a < 4; a++ {
		// Count first: it reclaims what has expired, so that the stored
		// records the walk finds are the live ones.
		if got := e.Count(a); got != keys[a] {
			t.Errorf("Count(%d) = %d, a walk finds %d keys", a, got, keys[a])
		}
		rc, err := st.Recount(a)
		if err != nil {
			t.Fatalf("Recount(%d): %v", a, err)
		}
		s := e.Stats(a)
		if rc.Keys != keys[a] || s.Keys != rc.Keys || s.Bytes != rc.Bytes || rc.PersistedKeys != rc.Keys || rc.PersistedBytes != rc.Bytes {
			t.Errorf("area %d: Stats keys %d bytes %d; the stored data holds %d keys, %d bytes; its counters records say %d keys, %d bytes; ForEach finds %d keys",
				a, s.Keys, s.Bytes, rc.Keys, rc.Bytes, rc.PersistedKeys, rc.PersistedBytes, keys[a])
		}
		if rc.PersistedPlain != rc.Plain {
			t.Errorf("area %d: the stored plain keys count %+v; the counters records say %+v", a, rc.Plain, rc.PersistedPlain)
		}
	}
}

// sortedStore returns the sortedkv.Store under an engine built by
// package generic (ldb, kdb).
func sortedStore(t *testing.T, e engines.Engine) *sortedkv.Store {
	t.Helper()
	ge, ok := e.(interface{ Store() generic.Store })
	if !ok {
		t.Fatalf("%T is not a generic engine", e)
	}
	st, ok := ge.Store().(*sortedkv.Store)
	if !ok {
		t.Fatalf("%T does not run on a sortedkv.Store", e)
	}
	return st
}

// OpenOptionsFunc opens the engine under test with o (o.Dir is set).
type OpenOptionsFunc func(o engines.Options) (engines.Engine, error)

// RunSweep checks that the background sweep reclaims expired data nobody
// reads: plain keys and skeys in many buckets expire (on a fake clock) and
// are never read; within a bounded wait, the area's stored bytes and the
// stored records themselves (data and expiry index, found by a raw walk of
// the store, which reclaims nothing) are gone. Only then does the test
// ask the engine (Stats, Count, ForEach), and another area is untouched.
func RunSweep(t *testing.T, open OpenOptionsFunc) {
	clk := enginetest.NewClock()
	e, err := open(engines.Options{Dir: t.TempDir(), Sync: engines.SyncNone, Now: clk.Now, SweepInterval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	st := sortedStore(t, e)
	const area, other = 2, 3
	exp := engines.PutOptions{Expire: engines.Expire{Mode: engines.ExpireAt, At: clk.NowMs() + 1000}}
	for i := 0; i < 300; i++ {
		must(t, put(e, enginetest.AK(area, fmt.Sprintf("sweep%03d", i)), "v", exp))
	}
	for p := 0; p < 5; p++ {
		for s := 0; s < 20; s++ {
			if _, err := e.PrefixPut(enginetest.AK(area, fmt.Sprintf("sweep-pk%d", p)), []byte(fmt.Sprint(s)), []byte("v"), exp); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := 0; i < 5; i++ {
		must(t, put(e, enginetest.AK(other, fmt.Sprintf("keep%d", i)), "v", engines.PutOptions{}))
	}
	keep, err := st.Recount(other)
	must(t, err)
	rc, err := st.Recount(area)
	must(t, err)
	if rc.Keys != 305 || rc.Expiry != 400 || rc.Bytes == 0 {
		t.Fatalf("before expiry the area stores %+v, want 305 keys and 400 index entries", rc)
	}
	clk.Advance(2 * time.Second)
	deadline := time.Now().Add(10 * time.Second)
	for {
		rc, err = st.Recount(area)
		must(t, err)
		bytes, _ := st.Usage(area)
		if rc == (Recount{}) && bytes == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("10 s after expiry the sweep left %+v, %d bytes accounted", rc, bytes)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if s := e.Stats(area); s.Keys != 0 || s.Bytes != 0 {
		t.Fatalf("Stats(%d) after the sweep: %+v", area, s)
	}
	if n := e.Count(area); n != 0 {
		t.Fatalf("Count(%d) after the sweep = %d", area, n)
	}
	for _, r := range dump(t, e) {
		if r.area == area {
			t.Fatalf("ForEach yields %s after the sweep", r.text)
		}
	}
	if rc, err := st.Recount(other); err != nil || rc != keep || e.Count(other) != 5 {
		t.Fatalf("area %d after the sweep: %+v %v, was %+v", other, rc, err, keep)
	}
}

// Recount is sortedkv.Recount, for comparisons in this package.
type Recount = sortedkv.Recount

type rec struct {
	area   uint16
	bucket uint32
	text   string
}

// dump renders every live record of every suite bucket, sorted.
func dump(t *testing.T, e engines.Engine) []rec {
	t.Helper()
	var out []rec
	for b := uint32(0); b < 1023; b++ {
		err := e.ForEach(b, func(r *engines.Record) error {
			var sb strings.Builder
			fmt.Fprintf(&sb, "b%d a%d %q", b, r.Area, r.Key)
			if r.Prefix == nil {
				sb.WriteString(entryString(&r.Entry))
			}
			for _, kv := range r.Prefix {
				fmt.Fprintf(&sb, " [%q %s]", kv.Key, entryString(&kv.Entry))
			}
			out = append(out, rec{area: r.Area, bucket: b, text: sb.String()})
			return nil
		})
		if err != nil {
			t.Fatalf("ForEach(%d): %v", b, err)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].text < out[j].text })
	return out
}

func entryString(e *engines.Entry) string {
	s := fmt.Sprintf(" %v v%d exp%d hid%v fl%d %q", e.Type, e.Version, e.ExpireAt, e.Hidden, e.Flags, e.Value)
	if o, ok := e.Object.(*enginetest.TestObject); ok {
		s += fmt.Sprintf(" obj%q", o.Elems)
	} else if e.Object != nil {
		s += fmt.Sprintf(" obj%T", e.Object)
	}
	return s
}

// RunReopen writes every kind of record under each sync policy, closes
// cleanly, reopens and checks that the data, the counts and the bytes are
// exactly as before, and that expiry still works after the restart (the
// sweep finds what expires from the persisted index).
func RunReopen(t *testing.T, open OpenFunc) {
	for _, policy := range []engines.SyncPolicy{engines.SyncAlways, engines.SyncGroup, engines.SyncNone} {
		t.Run(string(policy), func(t *testing.T) {
			dir := t.TempDir()
			clk := enginetest.NewClock()
			e, err := open(dir, policy, clk.Now)
			if err != nil {
				t.Fatal(err)
			}
			exp := engines.Expire{Mode: engines.ExpireAt, At: clk.NowMs() + 10_000}
			for i := 0; i < 200; i++ {
				k := enginetest.AK(uint16(i%3), fmt.Sprintf("key%03d", i))
				o := engines.PutOptions{Flags: uint32(i)}
				if i%5 == 0 {
					o.Expire = exp
				}
				must(t, put(e, k, fmt.Sprintf("v%d", i), o))
				if i%7 == 0 {
					must(t, put(e, k, fmt.Sprintf("v%d'", i), o)) // version 2
				}
				if i%11 == 0 {
					must(t, e.SetHidden(k, true))
				}
			}
			for i := 0; i < 30; i++ {
				pk := enginetest.AK(1, fmt.Sprintf("pkey%d", i%4))
				o := engines.PutOptions{}
				if i%3 == 0 {
					o.Expire = exp
				}
				if _, err := e.PrefixPut(pk, []byte(fmt.Sprintf("f%02d", i)), []byte("x"), o); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := e.ItemAdd(enginetest.AK(2, "items"), 5, [][]byte{[]byte("a"), []byte("b")}, engines.PutOptions{}); err != nil {
				t.Fatal(err)
			}
			_, err = e.Update(enginetest.AK(2, "obj"), func(engines.Entry, bool) (engines.Entry, engines.Action, error) {
				return engines.Entry{Type: enginetest.TestObjectType, Object: &enginetest.TestObject{Elems: []string{"x", "y"}}}, engines.Store, nil
			})
			must(t, err)

			// Range deletions over counted data, then new writes into the
			// deleted ranges, compacted: the persisted counters must come
			// back exactly (pebble merges them across range deletions).
			k0 := enginetest.AK(0, "key000")
			must(t, e.DeleteBucket(k0.Bucket))
			must(t, put(e, k0, "again", engines.PutOptions{}))
			if _, err := e.DeleteArea(3); err != nil {
				t.Fatal(err)
			}
			must(t, put(e, enginetest.AK(3, "a3"), "x", engines.PutOptions{}))
			must(t, e.Compact())

			before, stats := dump(t, e), allStats(e)
			must(t, e.Close())

			e, err = open(dir, policy, clk.Now)
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			after := dump(t, e)
			if len(before) != len(after) {
				t.Fatalf("%d records before close, %d after", len(before), len(after))
			}
			for i := range before {
				if before[i] != after[i] {
					t.Fatalf("record %d: before close %s, after %s", i, before[i].text, after[i].text)
				}
			}
			if got := allStats(e); got != stats {
				t.Fatalf("keys/bytes per area before close %v, after %v", stats, got)
			}
			checkCounts(t, e)

			// Expiry after the restart: the 40 expiring plain keys go; the
			// pkeys keep their other skeys.
			clk.Advance(11 * time.Second)
			want := stats
			want[0][0] -= 13 // i%5==0 && i%3==0: 15,...,195 (key000 was rewritten)
			want[1][0] -= 13
			want[2][0] -= 13
			for a := uint16(0); a < 3; a++ {
				if got := e.Count(a); got != want[a][0] {
					t.Errorf("Count(%d) after expiry = %d, want %d", a, got, want[a][0])
				}
			}
			must(t, e.Compact())
			checkCounts(t, e)
		})
	}
}

func put(e engines.Engine, k engines.Key, v string, o engines.PutOptions) error {
	_, err := e.Put(k, []byte(v), o)
	return err
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// allStats returns keys and bytes of areas 0..3.
func allStats(e engines.Engine) (out [4][2]int64) {
	for a := range out {
		s := e.Stats(uint16(a))
		out[a] = [2]int64{s.Keys, s.Bytes}
	}
	return out
}

// RunQuota checks a persistent engine's quota: a write that would take the
// area's bytes over the quota fails with errs.ErrQuota and changes nothing,
// writes that do not grow the area pass, other areas are not limited, and
// quota 0 lifts the limit.
func RunQuota(t *testing.T, open OpenFunc) {
	e, err := open(t.TempDir(), engines.SyncNone, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	val := strings.Repeat("v", 100)
	k := func(i int) engines.Key { return enginetest.AK(3, fmt.Sprintf("quota%03d", i)) }

	must(t, put(e, k(0), val, engines.PutOptions{}))
	one := e.Stats(3).Bytes
	if one <= 100 {
		t.Fatalf("one 100-byte value accounts %d bytes", one)
	}
	e.SetQuota(3, 5*one)
	for i := 1; i < 5; i++ {
		must(t, put(e, k(i), val, engines.PutOptions{}))
	}
	if got := e.Stats(3).Bytes; got != 5*one {
		t.Fatalf("5 records account %d bytes, want %d", got, 5*one)
	}
	wantQuota := func(err error) {
		t.Helper()
		if !errors.Is(err, errs.ErrQuota) {
			t.Fatalf("write over quota: %v, want %v", err, errs.ErrQuota)
		}
	}
	wantQuota(put(e, k(5), val, engines.PutOptions{}))
	_, err = e.PrefixPut(enginetest.AK(3, "pk"), []byte("s"), []byte(val), engines.PutOptions{})
	wantQuota(err)
	// A longer value of an existing key grows the area too.
	wantQuota(put(e, k(0), val+"x", engines.PutOptions{}))
	if _, err := e.Get(k(5)); !errors.Is(err, errs.ErrNotFound) {
		t.Fatalf("refused key is readable: %v", err)
	}
	if ent, _ := e.Get(k(0)); string(ent.Value) != val || ent.Version != 1 {
		t.Fatalf("refused overwrite changed the key: %q v%d", ent.Value, ent.Version)
	}
	if got := e.Count(3); got != 5 {
		t.Fatalf("Count = %d after refused writes, want 5", got)
	}
	// Same-size overwrites, shrinking writes and deletes pass.
	must(t, put(e, k(1), strings.Repeat("w", 100), engines.PutOptions{}))
	must(t, put(e, k(2), "short", engines.PutOptions{}))
	must(t, e.Remove(k(3), 0))
	must(t, put(e, k(5), val, engines.PutOptions{})) // fits again
	// A replica's copy of its master's write is not refused: the master
	// accepted it, and the copies' areas hold different buckets.
	wantQuota(put(e, k(6), val, engines.PutOptions{}))
	rk := k(6)
	rk.Replica = true
	must(t, put(e, rk, val, engines.PutOptions{}))
	rp := enginetest.AK(3, "pk")
	rp.Replica = true
	if _, err := e.PrefixPut(rp, []byte("s"), []byte(val), engines.PutOptions{}); err != nil {
		t.Fatalf("replica's prefix write over quota: %v", err)
	}
	if ent, err := e.Get(k(6)); err != nil || string(ent.Value) != val {
		t.Fatalf("replica's write over quota: %q, %v", ent.Value, err)
	}
	must(t, e.Remove(k(6), 0))
	if _, err := e.PrefixRemoveAll(enginetest.AK(3, "pk")); err != nil {
		t.Fatal(err)
	}
	// Another area has no quota.
	for i := 0; i < 10; i++ {
		must(t, put(e, enginetest.AK(4, fmt.Sprint(i)), val, engines.PutOptions{}))
	}
	e.SetQuota(3, 0)
	for i := 6; i < 20; i++ {
		must(t, put(e, k(i), val, engines.PutOptions{}))
	}
}

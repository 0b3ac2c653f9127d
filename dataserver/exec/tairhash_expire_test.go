package exec

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/tairkv/tair/engines"
	"github.com/tairkv/tair/engines/ds"
)

// fieldExpiryPair is a master and a slave executor over engine, on one
// fake clock, each telling its own index what FieldExpiry reports.
type fieldExpiryPair struct {
	clk      *testClock
	p        *replPair
	mu       sync.Mutex
	mIdx     map[string]int64 // the master's reports: key -> next
	sIdx     map[string]int64
	mReports int
}

func newFieldExpiryPair(t *testing.T, engine string) *fieldExpiryPair {
	f := &fieldExpiryPair{clk: newTestClock(), mIdx: map[string]int64{}, sIdx: map[string]int64{}}
	master, slave := openEngine(t, engine, f.clk), openEngine(t, engine, f.clk)
	note := func(idx map[string]int64, count *int) FieldExpiryFunc {
		return func(k engines.Key, next int64) {
			f.mu.Lock()
			defer f.mu.Unlock()
			if count != nil {
				*count++
			}
			if next == 0 {
				delete(idx, string(k.Key))
				return
			}
			idx[string(k.Key)] = next
		}
	}
	var unused int
	f.p = &replPair{master: master, slave: slave,
		mx: New(master, Options{Buckets: 1, Now: f.clk.Now, FieldExpiry: note(f.mIdx, &f.mReports)}),
		sx: New(slave, Options{Buckets: 1, Now: f.clk.Now, FieldExpiry: note(f.sIdx, &unused)})}
	return f
}

// run runs line on the master and replays its propagation on the slave.
func (f *fieldExpiryPair) run(t *testing.T, line string) string {
	t.Helper()
	return f.p.run(t, toArgs(splitLine(line)))
}

// on runs a read on one side.
func on(t *testing.T, x *Executor, line string) string {
	t.Helper()
	out, _ := x.Exec(0, 2, false, toArgs(splitLine(line)), nil)
	return string(out)
}

// expire is the active expiry of key on the master, its EXHDEL replayed
// on the slave; it returns the propagated command and the next expiry.
func (f *fieldExpiryPair) expire(t *testing.T, key string, limit int) (string, int64) {
	t.Helper()
	prop, next, err := f.p.mx.ExpireFields(0, []byte(key), limit)
	if err != nil {
		t.Fatalf("ExpireFields(%s): %v", key, err)
	}
	if prop != nil {
		if rep, _ := f.p.sx.Exec(0, 2, true, prop, nil); len(rep) > 0 && rep[0] == '-' {
			t.Fatalf("the slave refused %q: %q", prop, rep)
		}
	}
	return string(joinArgs(prop)), next
}

func joinArgs(args [][]byte) []byte {
	var b []byte
	for i, a := range args {
		if i > 0 {
			b = append(b, ' ')
		}
		b = append(b, a...)
	}
	return b
}

func (f *fieldExpiryPair) indexed(side map[string]int64, key string) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return side[key]
}

// TestExpireFields: the master's active expiry removes the due fields
// (earliest first, a limit at a time), replicates them as one EXHDEL,
// deletes a key whose last field went, leaves a hidden key alone, and the
// slave ends equal to the master (values, versions, expiries) on every
// engine; FieldExpiry follows each TairHash's earliest field expiry.
func TestExpireFields(t *testing.T) {
	for _, engine := range allEngines {
		t.Run(engine, func(t *testing.T) {
			f := newFieldExpiryPair(t, engine)
			t0 := f.clk.NowMs()
			f.run(t, "EXHSET k a 1 PX 100")
			f.run(t, "EXHSET k b 2 PX 200")
			f.run(t, "EXHSET k c 3")
			if got := f.indexed(f.mIdx, "k"); got != t0+100 {
				t.Fatalf("master index of k: %d, want %d", got, t0+100)
			}
			if got := f.indexed(f.sIdx, "k"); got != t0+100 {
				t.Fatalf("slave index of k: %d, want %d", got, t0+100)
			}
			if prop, next := f.expire(t, "k", 0); prop != "" || next != t0+100 {
				t.Fatalf("nothing due yet: %q, next %d", prop, next)
			}
			f.clk.Advance(150 * time.Millisecond)
			if got := on(t, f.p.mx, "EXHLEN k"); got != num(3) {
				t.Fatalf("EXHLEN before the active expiry: %q (counts the expired field, as Tair)", got)
			}
			if prop, next := f.expire(t, "k", 0); prop != "EXHDEL k a" || next != t0+200 {
				t.Fatalf("active expiry at +150ms: %q, next %d", prop, next)
			}
			for _, x := range []*Executor{f.p.mx, f.p.sx} {
				if got := on(t, x, "EXHLEN k"); got != num(2) {
					t.Fatalf("EXHLEN after the active expiry: %q", got)
				}
			}
			f.p.checkEqual(t)

			// The slave's clock runs ahead of the master's EXHDEL: the
			// slave purges b itself when it replays the first one, and
			// still moves the key's version with the second.
			f.run(t, "EXHSET v a 1 PX 100")
			f.run(t, "EXHSET v b 2 PX 120")
			f.run(t, "EXHSET v c 3")
			f.clk.Advance(110 * time.Millisecond)
			prop, _, err := f.p.mx.ExpireFields(0, []byte("v"), 0)
			if err != nil || string(joinArgs(prop)) != "EXHDEL v a" {
				t.Fatalf("expiring v: %q %v", joinArgs(prop), err)
			}
			f.clk.Advance(20 * time.Millisecond)
			f.p.sx.Exec(0, 2, true, prop, nil)
			if prop, _ := f.expire(t, "v", 0); prop != "EXHDEL v b" {
				t.Fatalf("expiring v again: %q", prop)
			}
			f.p.checkEqual(t)

			// A limit: the earliest first, the rest on the next call.
			// (A key expiry of its own: else the key would expire with
			// its last field, as every field expires.)
			for i := range 5 {
				f.run(t, fmt.Sprintf("EXHSET m f%d x PX %d", i, 10+i))
			}
			f.run(t, "EXPIRE m 100")
			f.clk.Advance(time.Second)
			if prop, next := f.expire(t, "m", 2); prop != "EXHDEL m f0 f1" || next != f.clk.NowMs()-1000+12 {
				t.Fatalf("limit 2: %q, next %d", prop, next)
			}
			// The last fields go: so does the key, and its index entry.
			if prop, next := f.expire(t, "m", 0); prop != "EXHDEL m f2 f3 f4" || next != 0 {
				t.Fatalf("the rest: %q, next %d", prop, next)
			}
			for _, x := range []*Executor{f.p.mx, f.p.sx} {
				if got := on(t, x, "EXISTS m"); got != num(0) {
					t.Fatalf("EXISTS m after its last field expired: %q", got)
				}
			}
			// (The master's driver drops its entry: next is 0.)
			if _, ok := f.sIdx["m"]; ok {
				t.Fatal("the slave still indexes the deleted key")
			}

			// A hidden key keeps its fields, and is looked at a second later.
			f.run(t, "EXHSET h a 1 PX 10")
			f.run(t, "EXHSET h b 1")
			f.run(t, "TAIR.HIDE h")
			f.clk.Advance(time.Second)
			if prop, next := f.expire(t, "h", 0); prop != "" || next != f.clk.NowMs()+hiddenFieldRecheck {
				t.Fatalf("hidden: %q, next %d", prop, next)
			}
			// Not a TairHash, or missing: nothing, and no index entry.
			f.run(t, "SET s x")
			for _, k := range []string{"s", "nokey"} {
				if prop, next := f.expire(t, k, 0); prop != "" || next != 0 {
					t.Fatalf("%s: %q, next %d", k, prop, next)
				}
			}
			f.p.checkEqual(t)
		})
	}
}

// TestFieldExpiryReports: every way a TairHash is written reports its
// next field expiry (COPY, RENAME and TAIR.RESTOREREC too), and reads
// report nothing.
func TestFieldExpiryReports(t *testing.T) {
	f := newFieldExpiryPair(t, "rdb")
	t0 := f.clk.NowMs()
	f.run(t, "EXHSET k a 1 PX 500")
	f.run(t, "EXHMSET k b 2")
	f.run(t, "COPY k k2")
	f.run(t, "RENAME k2 k3")
	if got := f.indexed(f.mIdx, "k3"); got != t0+500 {
		t.Fatalf("after COPY and RENAME, k3 indexed at %d, want %d", got, t0+500)
	}
	n := f.mReports
	for _, l := range []string{"EXHGET k a", "EXHLEN k", "EXHGETALL k", "EXHTTL k a", "GET nokey"} {
		on(t, f.p.mx, l)
	}
	if f.mReports != n {
		t.Fatalf("reads reported %d field expiries", f.mReports-n)
	}
	f.run(t, "EXHSET k a 1") // no expiry left
	if _, ok := f.mIdx["k"]; ok {
		t.Fatal("k has no field expiry left and is still indexed")
	}
	// TAIR.RESTOREREC (tair ctl restore) of a record with field expiries.
	rec, err := engines.AppendRecord(nil, &engines.Record{Key: []byte("r"), Entry: engines.Entry{Type: engines.TypeExHash, Version: 1, Object: exHashOf(t0 + 700)}})
	if err != nil {
		t.Fatal(err)
	}
	if out, _ := f.p.mx.Exec(0, 2, false, [][]byte{[]byte("TAIR.RESTOREREC"), []byte("r"), rec}, nil); string(out) != ok {
		t.Fatalf("TAIR.RESTOREREC: %q", out)
	}
	if got := f.indexed(f.mIdx, "r"); got != t0+700 {
		t.Fatalf("restored r indexed at %d, want %d", got, t0+700)
	}
}

func exHashOf(expireAt int64) *ds.ExHash {
	h := ds.NewExHash()
	h.Set("f", ds.ExField{Value: "v", Version: 1, ExpireAt: expireAt})
	return h
}

package exec

// The bitmap commands beyond what redis-server can tell
// (bitmap_redisdiff_test.go): what they propagate, the Tair version, the
// value limit, prefix-stored hashes and locks, CROSSSLOT, and slaves
// replaying the propagation ending equal to their master on every engine.

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

const (
	bitLocked   = "-LOCKED key is locked (tair -3975)\r\n"
	bitTooLong  = "-VALUETOOLONG value too long (tair -6)\r\n"
	bitCrossErr = "-CROSSSLOT Keys in request don't hash to the same slot\r\n"
)

// bitPropStep is a command line, its reply ("*": any) and what it must
// propagate (nil: nothing).
type bitPropStep struct {
	cmd, reply string
	prop       []string
}

func TestBitmapPropagation(t *testing.T) {
	for _, engine := range allEngines {
		t.Run(engine, func(t *testing.T) {
			h := newHarnessOn(t, engine)
			for _, s := range []bitPropStep{
				{"SETBIT b 9 1", num(0), []string{"SETBIT b 9 1"}},
				{"SETBIT b 9 1", num(1), nil},                        // no change
				{"SETBIT b 2 0", num(0), nil},                        // no change, no growth
				{"SETBIT b 23 0", num(0), []string{"SETBIT b 23 0"}}, // grows only
				{"SETBIT b 9 0", num(1), []string{"SETBIT b 9 0"}},
				{"SETBIT b x 1", "*", nil},
				{"GETBIT b 9", num(0), nil},
				{"BITCOUNT b", num(0), nil},
				{"BITPOS b 0", num(0), nil},
				{"BITFIELD b GET u8 0", arr(num(0)), nil},
				{"BITFIELD b", arr(), nil},
				{"BITFIELD_RO b GET u8 0", arr(num(0)), nil},
				{"BITFIELD b SET u8 0 255 GET u4 0", arr(num(0), num(15)), []string{"BITFIELD b SET u8 0 255 GET u4 0"}},
				{"BITFIELD b SET u8 0 255", arr(num(255)), nil}, // the same value
				{"BITFIELD b OVERFLOW FAIL INCRBY u8 0 1", arr(null), nil},
				// Every write failed but the string grew: stored and
				// propagated (Redis grows it and propagates nothing).
				{"BITFIELD b OVERFLOW FAIL INCRBY u8 100 300", arr(null), []string{"BITFIELD b OVERFLOW FAIL INCRBY u8 100 300"}},
				{"STRLEN b", num(14), nil},
				{"BITFIELD nb OVERFLOW FAIL SET u2 0 9", arr(null), []string{"BITFIELD nb OVERFLOW FAIL SET u2 0 9"}},
				{"GET nb", bulk("\x00"), nil},
				{"BITFIELD b INCRBY i8 0 1 OVERFLOW FAIL INCRBY i8 0 -200", arr(num(0), null), []string{"BITFIELD b INCRBY i8 0 1 OVERFLOW FAIL INCRBY i8 0 -200"}},
				// BITOP propagates its effect.
				{"SET {t}s1 ab", ok, []string{"SET {t}s1 ab"}},
				{"SET {t}s2 \"\\x0f\"", ok, []string{"SET {t}s2 \x0f"}},
				{"BITOP AND {t}d {t}s1 {t}s2", num(2), []string{`SET {t}d "\x01\x00"`}},
				{"BITOP NOT {t}d {t}s2", num(1), []string{"SET {t}d \xf0"}},
				{"BITOP OR {t}d {t}nokey", num(0), []string{"DEL {t}d"}},
				{"BITOP OR {t}d {t}nokey", num(0), nil},
				{"BITOP FOO {t}d {t}s1", "*", nil},
			} {
				got := h.line(s.cmd)
				if s.reply != "*" && got != s.reply {
					t.Errorf("%s: reply %q, want %q", s.cmd, got, s.reply)
				}
				if p := h.prop(); !reflect.DeepEqual(p, s.prop) {
					t.Errorf("%s propagated %q, want %q", s.cmd, p, s.prop)
				}
			}
		})
	}
}

// TestBitmapVersion: the Tair version moves with what is stored, not with
// what is asked; the expiry and FLAGS of a TairString are kept.
func TestBitmapVersion(t *testing.T) {
	for _, engine := range allEngines {
		t.Run(engine, func(t *testing.T) {
			h := newHarnessOn(t, engine)
			h.line("SETBIT v 3 1")
			v := h.version("v")
			for _, l := range []string{"SETBIT v 3 1", "SETBIT v 4 0", "BITFIELD v GET u8 0", "BITFIELD v SET u4 0 1",
				"BITFIELD v OVERFLOW FAIL INCRBY u4 0 100", "GETBIT v 3", "BITCOUNT v", "BITPOS v 1", "BITFIELD_RO v GET i3 1"} {
				h.line(l)
				if got := h.version("v"); got != v {
					t.Fatalf("%s moved the version from %d to %d", l, v, got)
				}
			}
			for _, l := range []string{"SETBIT v 3 0", "SETBIT v 100 0", "BITFIELD v INCRBY u4 0 1", "BITFIELD v OVERFLOW FAIL INCRBY u4 200 100"} {
				h.line(l)
				if got := h.version("v"); got != v+1 {
					t.Fatalf("%s: version %d, want %d", l, got, v+1)
				}
				v++
			}
			h.run([]step{
				{"EXSET ts abc FLAGS 7 EX 100", ok},
				{"SETBIT ts 30 1", num(0)},
				{"BITFIELD ts SET u8 8 65", arr(num(98))},
				{"EXGET ts WITHFLAGS", arr(bulk("aAc\x02"), num(3), num(7))},
				{"TTL ts", num(100)},
				{"BITOP NOT ts ts", num(4)}, // a new string: no expiry, no flags
				{"TTL ts", num(-1)},
				{"EXGET ts WITHFLAGS", arr(bulk("\x9e\xbe\x9c\xfd"), num(4), num(0))},
			})
		})
	}
}

// TestBitmapLimits: a string grown past the value limit is refused with
// VALUETOOLONG before anything is allocated; offsets are bounded as
// Redis's (512 MB) whatever the limit; a TAIR.LOCK record refuses writes.
func TestBitmapLimits(t *testing.T) {
	for _, engine := range allEngines {
		t.Run(engine, func(t *testing.T) {
			h := newHarnessOn(t, engine) // 1 MiB values
			offErr := errReply(errTextBitOffset)
			h.run([]step{
				{"SETBIT big 8388607 1", num(0)}, // the last bit of 1 MiB
				{"STRLEN big", num(1 << 20)},
				{"SETBIT big 8388608 1", bitTooLong},
				{"SETBIT big2 4294967295 1", bitTooLong},
				{"SETBIT big2 4294967296 1", offErr},
				{"EXISTS big2", num(0)},
				{"BITFIELD big GET u8 8388600 SET u8 8388601 1", bitTooLong},
				{"BITFIELD big SET u8 8388600 3 GET u8 8388600", arr(num(1), num(3))},
				// past proto-max-bulk-len by its last bytes (Redis grows it)
				{"BITFIELD big2 SET i64 4294967295 1", errReply(ErrTextStringTooLong)},
				{"BITFIELD big2 SET i64 #67108863 1", bitTooLong},
				{"BITFIELD big2 SET i64 #67108864 1", offErr},
				{"BITFIELD big2 INCRBY i64 #9223372036854775807 1", offErr}, // the product wraps negative
				{"EXISTS big2", num(0)},
				{"GETBIT big 4294967295", num(0)},
				{"BITCOUNT big", num(2)},
				{"BITPOS big 1 -1", num(8388606)},
				{"BITOP NOT {big}3 big", num(1 << 20)},
				{"BITCOUNT {big}3", num(1<<23 - 2)},
				{"TAIR.LOCK {big}lk 10", "*"},
				{"SETBIT {big}lk 0 1", bitLocked},
				{"BITFIELD {big}lk SET u8 0 1", bitLocked},
				{"BITOP NOT {big}lk big", bitLocked},
			})
		})
	}
}

// TestBitmapPrefixHash: on the persistent engines a Redis hash is stored
// as prefix records under its key; the bit commands see it as a hash
// (WRONGTYPE), and BITOP replaces it as Redis's would.
func TestBitmapPrefixHash(t *testing.T) {
	for _, engine := range allEngines {
		t.Run(engine, func(t *testing.T) {
			h := newHarnessOn(t, engine)
			h.run([]step{
				{"HSET {t}h f v", num(1)},
				{"SETBIT {t}h 0 1", wrongT},
				{"GETBIT {t}h 0", wrongT},
				{"BITCOUNT {t}h", wrongT},
				{"BITPOS {t}h 1", wrongT},
				{"BITFIELD {t}h GET u8 0", wrongT},
				{"BITFIELD {t}h SET u8 0 1", wrongT},
				{"BITFIELD_RO {t}h GET u8 0", wrongT},
				{"BITOP AND {t}d {t}h", wrongT},
				{"SET {t}s a", ok},
				{"BITOP NOT {t}h {t}s", num(1)},
				{"TYPE {t}h", "+string\r\n"},
				{"GET {t}h", bulk("\x9e")},
				{"HGET {t}h f", wrongT},
				{"HSET {t}h2 f v", num(1)},
				{"BITOP AND {t}h2 {t}nokey", num(0)},
				{"EXISTS {t}h2", num(0)},
			})
			h.line("HSET {t}h3 f v")
			h.line("BITOP OR {t}h3 {t}nokey")
			if p := h.prop(); !reflect.DeepEqual(p, []string{"DEL {t}h3"}) {
				t.Errorf("BITOP deleting a hash propagated %q", p)
			}
		})
	}
}

// TestBitopCrossSlot: BITOP's keys must share a bucket.
func TestBitopCrossSlot(t *testing.T) {
	h := newHarness(t)
	var a, b string
	for i := 0; a == "" || b == ""; i++ {
		k := fmt.Sprintf("k%d", i)
		if bucketOf(k, h.x) == bucketOf("d", h.x) {
			a = k
		} else {
			b = k
		}
	}
	h.run([]step{
		{"SET " + a + " x", ok},
		{"SET " + b + " y", ok},
		{"BITOP AND d " + a, num(1)},
		{"BITOP AND d " + a + " " + b, bitCrossErr},
		{"BITOP NOT " + b + " " + a, bitCrossErr},
		{"SET {t}a x", ok},
		{"BITOP OR {t}d {t}a {t}b", num(1)},
		{"GET {t}d", bulk("x")},
	})
}

// TestBitmapSlaveReplay runs random bit scripts on a master and replays
// what they propagate on a slave (replica=true), as the dataserver does:
// the two must end record for record equal, on every engine. Other types
// (a list, a hash: prefix records on the persistent engines) and TTLs
// are mixed in.
func TestBitmapSlaveReplay(t *testing.T) {
	for _, engine := range allEngines {
		t.Run(engine, func(t *testing.T) {
			p := openReplPair(t, engine, newTestClock())
			setup := []string{"RPUSH r3 a", "HSET h f v", "SET r2 abc EX 100", "EXSET r1 x FLAGS 3"}
			for seed := uint64(1); seed <= 20; seed++ {
				p.reset(t)
				script := append(append([]string(nil), setup...), bitRandomScript(seed, 300)...)
				for i, l := range script {
					if seed%3 == 0 && i%50 == 49 {
						l = strings.Replace(l, " r3", " h", 1) // a hash among the keys
					}
					p.run(t, toArgs(splitLine(l)))
				}
				if m, s := dumpBucket(t, p.master), dumpBucket(t, p.slave); m != s {
					t.Fatalf("seed %d: the slave diverged\nmaster: %s\nslave:  %s", seed, m, s)
				}
			}
		})
	}
}

// TestBitmapHugeArgumentsCheap: offsets and counts from the client never
// allocate by themselves: reads far past the end, and ranges of any size,
// answer at once.
func TestBitmapHugeArgumentsCheap(t *testing.T) {
	h := newHarness(t)
	h.line("SET k abc")
	start := time.Now()
	h.run([]step{
		{"GETBIT k 4294967295", num(0)},
		{"BITFIELD k GET i64 4294967232 GET u63 4294967233", arr(num(0), num(0))},
		{"BITFIELD_RO nokey GET i64 4294967232", arr(num(0))},
		{"BITCOUNT k -9223372036854775808 9223372036854775807 BIT", num(10)},
		{"BITPOS k 0 -9223372036854775808 9223372036854775807 BIT", num(0)},
		{"BITPOS k 1 9223372036854775807", num(-1)},
	})
	if d := time.Since(start); d > time.Second {
		t.Errorf("took %v", d)
	}
}

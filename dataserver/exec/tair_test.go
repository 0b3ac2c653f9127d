package exec

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/tairkv/tair/engines"
	"github.com/tairkv/tair/internal/route"
)

const (
	verErr    = "-VERERROR version mismatch (tair -3997)\r\n"
	lockedErr = "-LOCKED key is locked (tair -3975)\r\n"
)

func TestTairPutGetDel(t *testing.T) {
	runOnEngines(t, []step{
		{"TAIR.GETV k", null},
		{"TAIR.PUTV k v 0", ok},
		{"TAIR.GETV k", arr(bulk("v"), num(1))},
		{"TAIR.PUTV k v2 1", ok},
		{"TAIR.GETV k", arr(bulk("v2"), num(2))},
		{"TAIR.PUTV k v3 1", verErr},
		{"TAIR.GETV k", arr(bulk("v2"), num(2))},
		{"TAIR.PUTV k v3 0", ok},
		{"TAIR.GETV k", arr(bulk("v3"), num(3))},
		{"TAIR.PUTV lock x 7", ok}, // a missing key takes any version and starts at 1
		{"TAIR.GETV lock", arr(bulk("x"), num(1))},
		{"TAIR.PUTV lock y 7", verErr},
		{"TAIR.PUTV k v x", notInt},
		{"TAIR.PUTV k v -1", errReply("ERR version can't be negative")},
		{"TAIR.PUTV k v 0 EX", syntax},
		{"TAIR.PUTV k v 0 FOO 1", syntax},
		{"TAIR.PUTV k v 0 EX x", notInt},
		{"TAIR.DELV k 9", verErr},
		{"TAIR.DELV k 3", num(1)},
		{"TAIR.DELV k 0", num(0)},
		{"TAIR.PUTV k v 0", ok},
		{"TAIR.DELV k 0", num(1)},
		{"INCR c", num(1)},
		{"INCR c", num(2)},
		{"TAIR.GETV c", arr(bulk("2"), num(2))},
		{"TAIR.ITEMADD it 3 a", num(1)},
		{"TAIR.GETV it", wrongT},
		{"TAIR.PUTV k v", errReply("ERR wrong number of arguments for 'tair.putv' command")},
	})
}

func TestTairExpire(t *testing.T) { onEngines(t, testTairExpire) }

func testTairExpire(t *testing.T, engine string) {
	h := newHarnessOn(t, engine)
	now := testEpoch.Unix()
	cases := []struct {
		cmd, pttl string
		prop      []string
	}{
		{"TAIR.PUTV k v 0 EX 10", num(10000), []string{"TAIR.PUTV k v 0 PXAT " + ms(10*time.Second)}},
		{"TAIR.PUTV k v 0 EX -1", num(10000), []string{"TAIR.PUTV k v 0 EX -1"}},
		{"TAIR.PUTV k v 0", num(-1), []string{"TAIR.PUTV k v 0"}},
		{"TAIR.PUTV k v 0 EX 0", num(-1), []string{"TAIR.PUTV k v 0"}},
		{fmt.Sprintf("TAIR.PUTV k v 0 EX %d", now+100), num(100000), []string{"TAIR.PUTV k v 0 PXAT " + ms(100*time.Second)}},
		{fmt.Sprintf("TAIR.PUTV k v 0 EX %d", now-1), "*", nil}, // relative: huge
		{"TAIR.PUTV k v 0 PXAT " + ms(5*time.Second), num(5000), []string{"TAIR.PUTV k v 0 PXAT " + ms(5*time.Second)}},
		{"TAIR.INCR c 1 EX 20", num(20000), []string{"TAIR.INCR c 1 INIT 0 PXAT " + ms(20*time.Second)}},
		{"TAIR.INCR c 1 EX -1", num(20000), []string{"TAIR.INCR c 1 INIT 0 EX -1"}},
		{"TAIR.INCR c 1", num(-1), []string{"TAIR.INCR c 1 INIT 0"}},
		{"TAIR.PPUT p s v EX 30", "*", []string{"TAIR.PPUT p s v PXAT " + ms(30*time.Second)}},
	}
	for _, c := range cases {
		h.line(c.cmd)
		if c.prop != nil {
			h.wantProp(c.cmd, c.prop)
		}
		if c.pttl == "*" {
			continue
		}
		key := "k"
		if c.cmd[5:9] == "INCR" {
			key = "c"
		}
		if got := h.line("PTTL " + key); got != c.pttl {
			t.Errorf("%s: PTTL %q, want %q", c.cmd, got, c.pttl)
		}
	}
	// A relative expiry replayed on a slave after its time is still right:
	// the propagated form is absolute.
	h.line("TAIR.PUTV r v 0 EX 10")
	prop := h.lastProp
	h.clock.Advance(20 * time.Second)
	replay(h.x, 0, prop)
	if got := h.line("TAIR.GETV r"); got != null {
		t.Errorf("replayed expired PUTV: GETV = %q", got)
	}
}

func TestTairIncr(t *testing.T) {
	runOnEngines(t, []step{
		{"TAIR.INCR c 1", num(1)},
		{"TAIR.INCR c 5", num(6)},
		{"TAIR.DECR c 2", num(4)},
		{"TAIR.GETV c", arr(bulk("4"), num(3))},
		{"TAIR.INCR n 1 INIT 10", num(11)},
		{"TAIR.INCR n 1 MAX 11", "-COUNTEROUTOFRANGE counter out of range (tair -5114)\r\n"},
		{"TAIR.DECR n 20 MIN 0", "-COUNTEROUTOFRANGE counter out of range (tair -5114)\r\n"},
		{"TAIR.GETV n", arr(bulk("11"), num(1))},
		{"TAIR.DECR n 11 MIN 0 MAX 100", num(0)},
		{"TAIR.INCR n 1 MIN 5 MAX 1", errReply("ERR min is greater than max")},
		{"TAIR.INCR n x", notInt},
		{"TAIR.INCR n 1 INIT", syntax},
		{"TAIR.DECR n -9223372036854775808", errReply(ErrTextOverflow)},
		{"TAIR.INCR n 1 VER 5", verErr},
		{"TAIR.INCR n 1 VER 2", num(1)},
		{"SET s abc", ok},
		{"TAIR.INCR s 1", "-ERR value is not an integer or out of range (tair -3982)\r\n"},
	})
}

func TestTairPrefix(t *testing.T) {
	runOnEngines(t, []step{
		{"TAIR.PPUT p b 2", ok},
		{"TAIR.PPUT p a 1", ok},
		{"TAIR.PPUT p c 3", ok},
		{"TAIR.PPUT p d 4", ok},
		{"TAIR.PGET p a", arr(bulk("1"), num(1))},
		{"TAIR.PPUT p a 11 VER 1", ok},
		{"TAIR.PPUT p a 12 VER 1", verErr},
		{"TAIR.PGET p a", arr(bulk("11"), num(2))},
		{"TAIR.PGET p z", null},
		{"TAIR.PRANGE p \"\" \"\"", arr(bulk("a"), bulk("11"), bulk("b"), bulk("2"), bulk("c"), bulk("3"), bulk("d"), bulk("4"))},
		{"TAIR.PRANGE p b c", arr(bulk("b"), bulk("2"), bulk("c"), bulk("3"))},
		{"TAIR.PRANGE p b \"\" LIMIT 2", arr(bulk("b"), bulk("2"), bulk("c"), bulk("3"))},
		{"TAIR.PRANGE p \"\" \"\" LIMIT 2 REV", arr(bulk("d"), bulk("4"), bulk("c"), bulk("3"))},
		{"TAIR.PRANGE p a c REV", arr(bulk("c"), bulk("3"), bulk("b"), bulk("2"), bulk("a"), bulk("11"))},
		{"TAIR.PRANGE p \"\" \"\" LIMIT -1", errReply("ERR LIMIT can't be negative")},
		{"TAIR.PRANGE p \"\" \"\" FOO", syntax},
		{"TAIR.PRANGE nope \"\" \"\"", "*0\r\n"},
		{"TAIR.PDEL p a", num(1)},
		{"TAIR.PDEL p a", num(0)},
		{"TAIR.PGET p a", null},
	})
}

func TestTairItems(t *testing.T) { onEngines(t, testTairItems) }

func testTairItems(t *testing.T, engine string) {
	h := newHarnessOn(t, engine)
	h.run([]step{
		{"TAIR.ITEMCOUNT it", num(0)},
		{"TAIR.ITEMGET it 0 10", "*0\r\n"},
		{"TAIR.ITEMADD it 3 a b", num(2)},
		{"TAIR.ITEMADD it 3 c d", num(3)}, // a dropped
		{"TAIR.ITEMGET it 0 10", arr(bulk("b"), bulk("c"), bulk("d"))},
		{"TAIR.ITEMGET it -1 1", arr(bulk("d"))},
		{"TAIR.ITEMGET it 1 1", arr(bulk("c"))},
		{"TAIR.ITEMGET it 5 1", "*0\r\n"},
		{"TAIR.ITEMGETDEL it 0 1", arr(bulk("b"))},
		{"TAIR.ITEMCOUNT it", num(2)},
		{"TAIR.ITEMDEL it 0 5", num(2)},
		{"TAIR.ITEMCOUNT it", num(0)},
		{"TAIR.ITEMDEL it 0 5", num(0)},
		{"TAIR.ITEMADD it 0 a", errReply("ERR maxcount must be positive")},
		{"TAIR.ITEMGET it 0 -1", errReply("ERR offset or count is out of range")},
		{"SET s v", ok},
		{"TAIR.ITEMADD s 3 a", wrongT},
	})
	h.line("TAIR.ITEMGETDEL it 0 1")
	if h.prop() != nil {
		t.Errorf("empty ITEMGETDEL propagated %q", h.prop())
	}
}

func TestTairLock(t *testing.T) { onEngines(t, testTairLock) }

func testTairLock(t *testing.T, engine string) {
	h := newHarnessOn(t, engine)
	v1 := testEpoch.UnixMilli()
	h.run([]step{
		{"TAIR.LOCK l 10", num(v1)},
		{"TAIR.LOCK l 10", lockedErr},
		{"SET l x", lockedErr},
		{"INCR l", lockedErr},
		{"EXPIRE l 100", lockedErr},
		{"TAIR.PUTV l x 0", lockedErr},
		{"TAIR.DELV l 0", lockedErr},
		{"EXSET l x", lockedErr},
		{"TAIR.INCR l 1", lockedErr},
		{"TTL l", num(10)},
		{"TAIR.UNLOCK l 1", verErr},
		{fmt.Sprintf("TAIR.UNLOCK l %d", v1), num(1)},
		{fmt.Sprintf("TAIR.UNLOCK l %d", v1), num(0)},
		{"SET l x", ok},
		{"TAIR.LOCK l 10", wrongT}, // data, not a lock
		{"TAIR.UNLOCK l 1", num(0)},
		{"TAIR.LOCK l2 10", num(v1)},
	})
	h.clock.Advance(11 * time.Second) // the lock expires
	v2 := v1 + 11000
	h.run([]step{
		{"TAIR.LOCK l2 0", num(v2)},                    // no expiry
		{fmt.Sprintf("TAIR.UNLOCK l2 %d", v1), verErr}, // the old holder cannot unlock
		{"TTL l2", num(-1)},
		{"DEL l2", num(1)}, // DEL breaks a lock
		{"TAIR.LOCK l2 x", notInt},
	})
	h.runProp([]propStep{
		{"TAIR.LOCK l3 5", []string{fmt.Sprintf(`EXSET l3 "\x00TAIR.LOCK\x00" ABS %d PXAT %d`, v2, v2+5000)}},
	})
}

func TestTairHideInvalidStat(t *testing.T) { onEngines(t, testTairHideInvalidStat) }

func testTairHideInvalidStat(t *testing.T, engine string) {
	h := newHarnessOn(t, engine)
	h.run([]step{
		{"TAIR.PUTV k v 0", ok},
		{"TAIR.HIDE k", num(1)},
		{"TAIR.GETV k", null},
		{"TAIR.GETHIDDEN k", bulk("v")},
		{"TAIR.UNHIDE k", num(1)},
		{"TAIR.GETV k", arr(bulk("v"), num(1))},
		{"TAIR.GETHIDDEN nope", null},
		{"TAIR.UNHIDE nope", num(0)},
		{"MSET a 1 b 2 c 3", ok},
		{"TAIR.HIDE c", num(1)},
		{"TAIR.INVALID a b c nope", num(3)},
		{"EXISTS a b", num(0)},
		{"TAIR.GETHIDDEN c", null},
		{"TAIR.STAT 1024", errReply("ERR invalid area")},
		{"TAIR.STAT 0 1", syntax},
		{"TAIR.DELALL x", errReply("ERR invalid area")},
	})
	stat := h.line("TAIR.STAT")
	if !bytes.HasPrefix([]byte(stat), []byte("*14\r\n$4\r\nkeys\r\n:1\r\n$5\r\nbytes\r\n")) {
		t.Errorf("TAIR.STAT = %q", stat)
	}
	h.proto = 3
	if stat := h.line("TAIR.STAT 0"); !bytes.HasPrefix([]byte(stat), []byte("%7\r\n$4\r\nkeys\r\n:1\r\n")) {
		t.Errorf("TAIR.STAT (RESP3) = %q", stat)
	}
	h.proto = 2
	h.area = 5
	h.run([]step{{"SET x 1", ok}, {"TAIR.STAT", "*"}})
	h.area = 0
	h.run([]step{
		{"TAIR.DELALL 5", ok},
		{"GET k", bulk("v")},
	})
	h.area = 5
	h.run([]step{{"GET x", null}})
}

// TestReplicaConverges runs commands on a master, replays what each
// propagated on a replica (replica mode, later clock), and checks that
// both engines hold the same records, versions and expiries included.
func TestReplicaConverges(t *testing.T) { onEngines(t, testReplicaConverges) }

func testReplicaConverges(t *testing.T, engine string) {
	h := newHarnessOn(t, engine)
	rclk := newTestClock()
	reng := openEngine(t, engine, rclk)
	t.Cleanup(func() { reng.Close() })
	rx := New(reng, Options{Now: rclk.Now})
	script := []string{
		"SET a 1", "SET a 2 EX 100", "INCR a", "INCRBYFLOAT a 1.5", "APPEND a x", "SETRANGE a 0 y", "EXPIRE a 50",
		"SET b v PX 1000", "GETEX b EX 300", "GETEX b PERSIST", "GETSET b w", "MSET c 1 d 2", "MSETNX {t}e 1 {t}f 2",
		"RENAME {t}e {t}g", "COPY {t}g {t}f REPLACE", "DEL c", "SETNX d 5", "SETNX h 5", "GETDEL h", "PERSIST a",
		"TAIR.PUTV tp v 0 EX 10", "TAIR.PUTV tp v2 1 EX -1", "TAIR.INCR ti 3 INIT 7 EX 40", "TAIR.DECR ti 1",
		"TAIR.PPUT pk s1 v EX 20", "TAIR.PPUT pk s2 v", "TAIR.PDEL pk s2", "TAIR.ITEMADD it 2 a b c", "TAIR.ITEMGETDEL it 0 1",
		"TAIR.HIDE d", "TAIR.LOCK lk 30", "TAIR.INVALID c d", "TAIR.DELV tp 0",
		"EXSET xs v EX 100 FLAGS 7", "EXSET xs v2 ABS 40", "EXINCRBY xi 5 DEF 3 EX 60", "EXINCRBY xi 5 KEEPTTL",
		"EXINCRBYFLOAT xf 1.25 PX 5000", "EXAPPEND xs !", "EXPREPEND xs ¡ VER 41", "EXCAS xs new 42 EX 10",
		"EXSETVER xs 100", "EXGAE xs EX 500", "EXCAD xi 3", "CAS xf 1.25 2.5 KEEPTTL", "SET cad v", "CAD cad v",
		"EXSET ya v", "EXCAD ya 1",
	}
	for _, l := range script {
		h.line(l)
		rclk.Advance(3 * time.Millisecond) // the slave replays a little later
		h.clock.Advance(3 * time.Millisecond)
		if cmd, out := replay(rx, 0, h.lastProp); cmd != nil {
			t.Errorf("%s: replica failed %q on %q", l, out, cmd)
		}
	}
	dump := func(e engines.Engine) map[string]string {
		m := map[string]string{}
		for b := uint32(0); b < route.DefaultBuckets; b++ {
			_ = e.ForEach(b, func(r *engines.Record) error {
				s := fmt.Sprintf("%s v=%q ver=%d exp=%d flags=%d hidden=%v", r.Entry.Type, r.Entry.Value, r.Entry.Version, r.Entry.ExpireAt, r.Entry.Flags, r.Entry.Hidden)
				for _, kv := range r.Prefix {
					s += fmt.Sprintf(" [%s=%q ver=%d exp=%d]", kv.Key, kv.Entry.Value, kv.Entry.Version, kv.Entry.ExpireAt)
				}
				m[strconv.Itoa(int(r.Area))+"/"+string(r.Key)] = s
				return nil
			})
		}
		return m
	}
	mm, rm := dump(h.eng), dump(reng)
	for k, v := range mm {
		if rm[k] != v {
			t.Errorf("%s:\n master  %s\n replica %s", k, v, rm[k])
		}
	}
	for k, v := range rm {
		if _, ok := mm[k]; !ok {
			t.Errorf("%s only on the replica: %s", k, v)
		}
	}
	if len(mm) < 10 {
		t.Errorf("only %d records: %v", len(mm), mm)
	}
}

// TAIR.STAT counts one get or put per key a command touches (in-memory
// engines; persistent ones add the probes for prefix-stored hashes).
func TestTairStatCounts(t *testing.T) {
	for _, name := range []string{"rdb", "mdb"} {
		h := newHarnessOn(t, name)
		for _, l := range []string{"SET a 1", "GET a", "GET nope", "DEL a", "DEL nope", "INCR x",
			"EXPIRE x 10", "TTL x", "EXISTS x", "MGET x y", "EXINCRBY e 1", "EXSET e 1 ABS 5"} {
			h.line(l)
		}
		want := arr(bulk("keys"), num(2), bulk("bytes"), ":*\r\n", bulk("gets"), num(7), bulk("puts"), num(6),
			bulk("hits"), num(4), bulk("misses"), num(3), bulk("evictions"), num(0))
		got := regexp.MustCompile(`bytes\r\n:\d+`).ReplaceAllString(h.line("TAIR.STAT"), "bytes\r\n:*")
		if got != want {
			t.Errorf("%s: TAIR.STAT = %q, want %q", name, got, want)
		}
	}
}

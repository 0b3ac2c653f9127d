package exec

import (
	"strconv"
	"testing"
	"time"
)

// ms is testEpoch + d in unix milliseconds, as text.
func ms(d time.Duration) string { return strconv.FormatInt(testEpoch.Add(d).UnixMilli(), 10) }

func TestStringCommands(t *testing.T) {
	runOnEngines(t, []step{
		{"GET k", null},
		{"SET k v", ok},
		{"GET k", bulk("v")},
		{"SET k v2 NX", null},
		{"SET k v2 XX GET", bulk("v")},
		{"SET k v3 NX GET", bulk("v2")},
		{"SET nk v XX GET", null},
		{"GET nk", null},
		{"SET k v EX 10 PX 10", syntax},
		{"SET k v KEEPTTL EX 10", syntax},
		{"SET k v EX 0", errReply("ERR invalid expire time in 'set' command")},
		{"SET k v PX x", notInt},
		{"SETEX k 0 v", errReply("ERR invalid expire time in 'setex' command")},
		{"PSETEX k -1 v", errReply("ERR invalid expire time in 'psetex' command")},
		{"GETEX k EX 0", errReply("ERR invalid expire time in 'getex' command")},
		{"SET", errReply("ERR wrong number of arguments for 'set' command")},
		{"MSET a 1 b", errReply("ERR wrong number of arguments for 'mset' command")},
		{"MSET a 1 b 2", ok},
		{"MGET a nope b", arr(bulk("1"), null, bulk("2"))},
		{"INCR a", num(2)},
		{"INCRBY a -5", num(-3)},
		{"DECRBY a -9223372036854775808", errReply("ERR decrement would overflow")},
		{"SET a 9223372036854775807", ok},
		{"INCR a", errReply("ERR increment or decrement would overflow")},
		{"SET a 1.5", ok},
		{"INCR a", notInt},
		{"INCRBYFLOAT a 0.1", bulk("1.6")},
		{"INCRBYFLOAT a x", errReply("ERR value is not a valid float")},
		{"SET f 0.1", ok},
		{"INCRBYFLOAT f 0.2", bulk("0.3")}, // long double, as Redis
		{"APPEND f xyz", num(6)},
		{"STRLEN f", num(6)},
		{"GETRANGE f 0 -1", bulk("0.3xyz")},
		{"GETRANGE f 4 2", empty},
		{"SETRANGE f 8 !", num(9)},
		{"GET f", bulk("0.3xyz\x00\x00!")},
		{"SETRANGE f 1048576 x", errReply("VALUETOOLONG value too long (tair -6)")},
		{"SETRANGE f 536870912 x", errReply(ErrTextStringTooLong)},
		{"SETRANGE f -1 x", errReply("ERR offset is out of range")},
		{"GETDEL f", bulk("0.3xyz\x00\x00!")},
		{"GETDEL f", null},
		{"GETSET g 1", null},
		{"GETSET g 2", bulk("1")},
		{"SETNX g 3", num(0)},
		{"SETNX h 3", num(1)},
		{"MSETNX h 1 i 2", errReply(ErrTextCrossSlot)},
		{"SET {t}h 1", ok},
		{"MSETNX {t}h 1 {t}i 2", num(0)},
		{"MSETNX i 1 j 2", errReply(ErrTextCrossSlot)},
		{"MSETNX {t}i 1 {t}j 2", num(1)},
		{"MSETNX {t}j 1 {t}k 2", num(0)},
		{"LCS {t}i {t}j", bulk("")},
	})
}

func TestStringRESP3(t *testing.T) { onEngines(t, testStringRESP3) }

func testStringRESP3(t *testing.T, engine string) {
	h := newHarnessOn(t, engine)
	h.proto = 3
	h.run([]step{
		{"GET k", "_\r\n"},
		{"SET k v", ok},
		{"SET k v NX", "_\r\n"},
		{"SET n v XX GET", "_\r\n"},
		{"MGET k n", "*2\r\n$1\r\nv\r\n_\r\n"},
		{"GETEX n PERSIST", "_\r\n"},
		{"GETDEL n", "_\r\n"},
		{"SET {t}a ohmytext", ok},
		{"SET {t}b mynewtext", ok},
		{"LCS {t}a {t}b IDX MINMATCHLEN 4", "%2\r\n$7\r\nmatches\r\n*1\r\n*2\r\n*2\r\n:4\r\n:7\r\n*2\r\n:5\r\n:8\r\n$3\r\nlen\r\n:6\r\n"},
		{"OBJECT ENCODING nope", "_\r\n"},
	})
}

func TestWrongTypeAndHidden(t *testing.T) {
	runOnEngines(t, []step{
		{"TAIR.ITEMADD it 10 a b", num(2)},
		{"GET it", wrongT},
		{"SET it v GET", wrongT},
		{"GETSET it v", wrongT},
		{"GETDEL it", wrongT},
		{"GETEX it EX 10", wrongT},
		{"INCR it", wrongT},
		{"INCRBYFLOAT it 1", wrongT},
		{"APPEND it x", wrongT},
		{"STRLEN it", wrongT},
		{"GETRANGE it 0 1", wrongT},
		{"SETRANGE it 0 x", wrongT},
		{"MGET it", arr(null)},
		{"TYPE it", "+items\r\n"},
		{"SET it v", ok}, // SET replaces any type
		{"TYPE it", "+string\r\n"},

		{"SET hk v EX 100", ok},
		{"TAIR.HIDE hk", num(1)},
		{"GET hk", null},
		{"MGET hk", arr(null)},
		{"EXISTS hk", num(0)},
		{"TYPE hk", "+none\r\n"},
		{"TTL hk", num(-2)},
		{"STRLEN hk", num(0)},
		{"DEL hk", num(0)},
		{"EXPIRE hk 10", num(0)},
		{"TAIR.GETHIDDEN hk", bulk("v")},
		{"TAIR.UNHIDE hk", num(1)},
		{"GET hk", bulk("v")},
		{"TAIR.HIDE hk", num(1)},
		{"INCR hk", num(1)}, // a hidden key is missing: starts from 0
		{"GET hk", bulk("1")},
		{"TTL hk", num(-1)},
		{"TAIR.HIDE nope", num(0)},
	})
}

func TestStringVersions(t *testing.T) { onEngines(t, testStringVersions) }

func testStringVersions(t *testing.T, engine string) {
	h := newHarnessOn(t, engine)
	steps := []struct {
		cmd string
		ver int64
	}{
		{"SET k 1", 1},
		{"SET k 2", 2},
		{"GET k", 2},
		{"SETNX k 3", 2},
		{"SET k 3 NX", 2},
		{"INCR k", 3},
		{"INCRBY k 2", 4},
		{"DECR k", 5},
		{"INCRBYFLOAT k 1.5", 6},
		{"APPEND k x", 7},
		{"SETRANGE k 0 y", 8},
		{"SETRANGE k 0 \"\"", 8},
		{"EXPIRE k 100", 9},
		{"EXPIRE k 100 NX", 9},
		{"PERSIST k", 10},
		{"PERSIST k", 10},
		{"GETEX k EX 10", 11},
		{"GETEX k", 11},
		{"GETSET k a", 12},
		{"MSET k b", 13},
		{"SET k c KEEPTTL", 14},
		{"TAIR.HIDE k", 14},
		{"TAIR.UNHIDE k", 14},
	}
	for _, s := range steps {
		h.line(s.cmd)
		if v := h.version("k"); v != s.ver {
			t.Errorf("after %s: version %d, want %d", s.cmd, v, s.ver)
		}
	}
}

func TestStringExpiry(t *testing.T) { onEngines(t, testStringExpiry) }

func testStringExpiry(t *testing.T, engine string) {
	h := newHarnessOn(t, engine)
	h.run([]step{
		{"SET k v EX 10", ok},
		{"PTTL k", num(10000)},
		{"EXPIRETIME k", num(testEpoch.Unix() + 10)},
		{"PEXPIRETIME k", num(testEpoch.UnixMilli() + 10000)},
	})
	h.clock.Advance(2500 * time.Millisecond)
	h.run([]step{
		{"PTTL k", num(7500)},
		{"TTL k", num(8)}, // rounded as Redis does
		{"SET k v2 KEEPTTL", ok},
		{"PTTL k", num(7500)},
		{"SET k v3", ok},
		{"PTTL k", num(-1)},
		{"SET k v PXAT " + ms(3500*time.Millisecond), ok},
	})
	h.clock.Advance(time.Second) // now == expiry: still alive (Redis: expired when now > at)
	h.run([]step{{"GET k", bulk("v")}})
	h.clock.Advance(time.Millisecond)
	h.run([]step{
		{"GET k", null},
		{"TTL k", num(-2)},
		{"SET k v", ok},
		{"EXPIRE k 10", num(1)},
		{"EXPIRE k 5 GT", num(0)},
		{"EXPIRE k 20 GT", num(1)},
		{"EXPIRE k 30 LT", num(0)},
		{"EXPIRE k 15 LT", num(1)},
		{"TTL k", num(15)},
		{"EXPIREAT k 1", num(1)},
		{"EXISTS k", num(0)},
	})
}

func TestStringPropagation(t *testing.T) { onEngines(t, testStringPropagation) }

func testStringPropagation(t *testing.T, engine string) {
	h := newHarnessOn(t, engine)
	h.runProp([]propStep{
		{"SET k v EX 10", []string{"SET k v PXAT " + ms(10*time.Second)}},
		{"SET k v PX 1500 GET", []string{"SET k v PXAT " + ms(1500*time.Millisecond)}},
		{"SET k v EXAT 1767225700", []string{"SET k v PXAT 1767225700000"}},
		{"SET k v KEEPTTL", []string{"SET k v KEEPTTL"}},
		{"SET k v", []string{"SET k v"}},
		{"SET k v NX", nil},
		{"SETNX k v", nil},
		{"SETNX k2 v", []string{"SET k2 v"}},
		{"SETEX k 5 v", []string{"SET k v PXAT " + ms(5*time.Second)}},
		{"PSETEX k 5 v", []string{"SET k v PXAT " + ms(5*time.Millisecond)}},
		{"GETSET k w", []string{"SET k w"}},
		{"EXPIRE k 100", []string{"PEXPIREAT k " + ms(100*time.Second)}},
		{"PEXPIRE k 100 XX", []string{"PEXPIREAT k " + ms(100*time.Millisecond)}},
		{"EXPIRE k 100 NX", nil},
		{"EXPIREAT k 1767225700", []string{"PEXPIREAT k 1767225700000"}},
		{"GETEX k EX 7", []string{"PEXPIREAT k " + ms(7*time.Second)}},
		{"GETEX k PERSIST", []string{"PERSIST k"}},
		{"GETEX k PERSIST", nil},
		{"GETEX k", nil},
		{"PERSIST k", nil},
		{"EXPIRE k -1", []string{"DEL k"}},
		{"GETEX nope EX 1", nil},
		{"SET f 10.50", []string{"SET f 10.50"}},
		{"INCRBYFLOAT f 0.1", []string{"SET f 10.6 KEEPTTL"}},
		{"INCR i", []string{"INCR i"}},
		{"APPEND i x", []string{"APPEND i x"}},
		{"SETRANGE i 0 \"\"", nil},
		{"GETDEL i", []string{"DEL i"}},
		{"GETDEL i", nil},
		{"MSET a 1 b 2", []string{"MSET a 1 b 2"}},
		{"MSETNX {x}a 1 {x}b 2", []string{"MSET {x}a 1 {x}b 2"}},
		{"MSETNX {x}a 1 {x}b 2", nil},
		{"DEL a nope b", []string{"DEL a b"}},
		{"DEL a", nil},
		{"GET f", nil},
		{"SET k v EX 0", nil},
	})
}

// TestGetExCheckOrder: as Redis, GETEX checks its options' syntax, then
// the key (missing: nil) and its type, and only then the expiry's value.
func TestGetExCheckOrder(t *testing.T) {
	onEngines(t, func(t *testing.T, engine string) {
		h := newHarnessOn(t, engine)
		h.run([]step{
			{"GETEX none EX x", null},
			{"GETEX none PX 0", null},
			{"GETEX none FOO", syntax},
			{"RPUSH l a", num(1)},
			{"GETEX l EX x", wrongT},
			{"GETEX l EX 0", wrongT},
			{"GETEX l FOO", syntax},
			{"SET k v", ok},
			{"GETEX k EX x", notInt},
			{"GETEX k EX 0", errReply("ERR invalid expire time in 'getex' command")},
			{"TTL k", num(-1)},
			{"GETEX k EX 100", bulk("v")},
			{"TTL k", num(100)},
		})
	})
}

// TestStringCommandsOnHash: every string command sees a hash as a hash,
// also where hashes are prefix-stored (persistent engines): WRONGTYPE,
// and SETNX/MSETNX find the key taken (tests/testdata/redis-compare.txt).
func TestStringCommandsOnHash(t *testing.T) {
	onEngines(t, func(t *testing.T, engine string) {
		h := newHarnessOn(t, engine)
		h.run([]step{
			{"HSET {t}h f v", num(1)},
			{"GET {t}h", wrongT},
			{"APPEND {t}h x", wrongT},
			{"INCR {t}h", wrongT},
			{"DECRBY {t}h 2", wrongT},
			{"INCRBYFLOAT {t}h 1", wrongT},
			{"SETRANGE {t}h 0 x", wrongT},
			{"GETSET {t}h x", wrongT},
			{"SET {t}h x GET", wrongT},
			{"GETDEL {t}h", wrongT},
			{"GETEX {t}h PERSIST", wrongT},
			{"SETNX {t}h x", num(0)},
			{"MSETNX {t}h x {t}o y", num(0)},
			{"LCS {t}h {t}h", errReply("ERR The specified keys must contain string values")},
			{"TYPE {t}h", "+hash\r\n"},
			{"HGETALL {t}h", arr(bulk("f"), bulk("v"))},
			{"EXISTS {t}o", num(0)},
		})
	})
}

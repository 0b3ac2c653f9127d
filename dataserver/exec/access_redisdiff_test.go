package exec

import (
	"strings"
	"testing"
	"time"

	"github.com/tairkv/tair/engines/generic/memstore"
	"github.com/tairkv/tair/engines/mdb"
	"github.com/tairkv/tair/engines/rdb"
)

// accessSetup makes one key of each type, each at LFU_INIT_VAL (c is past
// Redis's shared integers, whose one object many keys would touch).
var accessSetup = []string{"SET s v", "SET c 15000", "HSET h f v", "RPUSH l a b", "SADD st a", "ZADD z 1 a"}

// accessKeys are the keys whose OBJECT FREQ is compared after each
// command: the setup's and those commands make.
var accessKeys = []string{"s", "c", "h", "l", "st", "z", "s2", "s3"}

// accessCommands each run once on fresh keys. None names a key twice:
// Redis would touch it twice, and its second increment is a draw.
var accessCommands = []string{
	// inspect only (LOOKUP_NOTOUCH)
	"EXISTS s", "EXISTS s c h", "TYPE s", "TTL s", "PTTL s", "EXPIRETIME s", "PEXPIRETIME s",
	"OBJECT ENCODING s", "OBJECT FREQ s", "OBJECT IDLETIME s", "OBJECT ENCODING h", "MEMORY USAGE s", "MEMORY USAGE h",
	// reads
	"TOUCH s", "TOUCH s c h", "GET s", "STRLEN s", "GETRANGE s 0 1", "DUMP s", "MGET s c", "BITCOUNT s", "GETBIT s 0",
	"GETEX s", "GET h", "HGET s f", "PFCOUNT s",
	"HGET h f", "HGETALL h", "HLEN h", "HEXISTS h f", "HMGET h f g",
	"LRANGE l 0 -1", "LLEN l", "LINDEX l 0", "LPOS l a", "SORT l ALPHA",
	"SMEMBERS st", "SISMEMBER st a", "SCARD st", "ZSCORE z a", "ZRANGE z 0 -1", "ZCARD z", "ZRANK z a",
	// writes
	"SET s x", "SET s x NX", "SET s x XX", "SET s x GET", "GETSET s y", "SETNX s 1", "APPEND s x", "SETRANGE s 0 x",
	"INCR c", "INCR s", "INCRBYFLOAT c 1", "DECRBY c 2", "GETEX s EX 100", "GETDEL s", "EXPIRE s 100", "PERSIST s",
	"MSET s 1 c 2", "SETBIT s 1 1", "SET s2 v", "COPY s s2", "RENAME s s3", "RENAMENX s s3", "RENAME s c", "DEL s", "LPUSH s x",
	"HSET h f v2", "HSET h g v", "HINCRBY h n 1", "HDEL h f",
	"RPUSH l c", "LPOP l", "LSET l 0 x", "SADD st b", "SREM st a", "ZADD z 2 b", "ZINCRBY z 1 a", "ZREM z a",
}

// TestAccessAgainstRedis: each command touches a key or not as
// redis-server (allkeys-lfu) does: OBJECT FREQ of every key after it is
// the same. The executor's increments are made certain, so that a second
// touch of a key in one command would show (7, where Redis's first touch
// of a fresh key is a certain 6).
func TestAccessAgainstRedis(t *testing.T) {
	conn, rd := startRedis(t)
	redisDo(t, conn, rd, toArgs([]string{"CONFIG", "SET", "maxmemory-policy", "allkeys-lfu"}))
	defer memstore.SetLFURandom(func() float64 { return 0 })()
	for _, name := range []string{rdb.Name, mdb.Name} {
		t.Run(name, func(t *testing.T) {
			for _, l := range accessCommands {
				clk := newTestClock()
				x := New(openEngine(t, name, clk), Options{Buckets: 1, Now: clk.Now})
				redisDo(t, conn, rd, toArgs([]string{"FLUSHALL"}))
				for _, s := range accessSetup {
					redisLine(t, conn, rd, s)
					x.Exec(0, 2, false, toArgs(splitLine(s)), nil)
				}
				redisLine(t, conn, rd, l)
				x.Exec(0, 2, false, toArgs(splitLine(l)), nil)
				for _, k := range accessKeys {
					q := "OBJECT FREQ " + k
					want := redisLine(t, conn, rd, q)
					if want == num(7) {
						// Redis looked the key up twice (SET GET and
						// GETSET read, then write), and the second
						// lookup's increment was drawn: the executor
						// touches a key once per command.
						want = num(6)
					}
					got, _ := x.Exec(0, 2, false, toArgs(splitLine(q)), nil)
					if string(got) != want {
						t.Errorf("after %s: %s = %q, redis-server %q", l, q, got, want)
					}
				}
			}
		})
	}
}

// TestObjectIdletime: IDLETIME counts whole seconds since the last
// access, which reads and writes reset and inspecting commands do not.
func TestObjectIdletime(t *testing.T) {
	for _, name := range []string{rdb.Name, mdb.Name} {
		t.Run(name, func(t *testing.T) {
			h := newHarnessOn(t, name)
			h.run([]step{{"SET k v", ok}, {"OBJECT IDLETIME k", num(0)}, {"OBJECT IDLETIME nope", null}})
			h.clock.Advance(2500 * time.Millisecond)
			h.run([]step{{"OBJECT IDLETIME k", num(2)}, {"TYPE k", "+string\r\n"}, {"TTL k", num(-1)},
				{"EXISTS k", num(1)}, {"OBJECT IDLETIME k", num(2)}, {"GET k", bulk("v")}, {"OBJECT IDLETIME k", num(0)}})
			h.clock.Advance(90 * time.Second)
			h.run([]step{{"OBJECT IDLETIME k", num(90)}, {"APPEND k w", num(2)}, {"OBJECT IDLETIME k", num(0)}})
			h.clock.Advance(3 * time.Second)
			h.run([]step{{"TOUCH k", num(1)}, {"OBJECT IDLETIME k", num(0)}})
		})
	}
}

// TestNoTouchClient: a client in CLIENT NO-TOUCH mode (Request.NoTouch)
// leaves frequency and idle time alone, but for TOUCH (Redis 7.2's
// lookupKey; the redis-server the tests run, 7.0, has no NO-TOUCH, so
// the expected values are written out).
func TestNoTouchClient(t *testing.T) {
	defer memstore.SetLFURandom(func() float64 { return 0 })()
	for _, name := range []string{rdb.Name, mdb.Name} {
		t.Run(name, func(t *testing.T) {
			h := newHarnessOn(t, name)
			noTouch := func(l string) string {
				out, _ := h.x.ExecRequest(Request{Proto: 2, NoTouch: true}, toArgs(splitLine(l)), nil)
				return string(out)
			}
			h.run([]step{{"SET k v", ok}, {"HSET h f v", num(1)}})
			h.clock.Advance(5 * time.Second)
			for _, l := range []string{"GET k", "STRLEN k", "HGET h f", "HGETALL h", "EXPIRE k 100", "GETEX k PERSIST"} {
				noTouch(l)
			}
			h.run([]step{{"OBJECT IDLETIME k", num(5)}, {"OBJECT FREQ k", num(5)},
				{"OBJECT IDLETIME h", num(5)}, {"OBJECT FREQ h", num(5)}})
			if got := noTouch("TOUCH k h"); got != num(2) {
				t.Fatalf("TOUCH k h = %q", got)
			}
			h.run([]step{{"OBJECT IDLETIME k", num(0)}, {"OBJECT FREQ k", num(6)},
				{"OBJECT IDLETIME h", num(0)}, {"OBJECT FREQ h", num(6)}})
			h.clock.Advance(time.Second)
			h.run([]step{{"GET k", bulk("v")}, {"OBJECT FREQ k", num(7)}, {"OBJECT IDLETIME k", num(0)}})
		})
	}
}

// TestRestoreAccessAgainstRedis: RESTORE makes a new key, whose counter
// and idle time are a new key's (REPLACE too) or as FREQ and IDLETIME
// set them, as redis-server's (FREQ under allkeys-lfu, IDLETIME under
// noeviction: it tracks one of them at a time).
func TestRestoreAccessAgainstRedis(t *testing.T) {
	conn, rd := startRedis(t)
	defer memstore.SetLFURandom(func() float64 { return 0 })()
	redisLine(t, conn, rd, "SET s v")
	dump := redisLine(t, conn, rd, "DUMP s")
	_, payload, _ := strings.Cut(strings.TrimSuffix(dump, "\r\n"), "\r\n")
	for _, name := range []string{rdb.Name, mdb.Name} {
		t.Run(name, func(t *testing.T) {
			clk := newTestClock()
			x := New(openEngine(t, name, clk), Options{Buckets: 1, Now: clk.Now})
			run := func(args ...string) (ours, theirs string) {
				got, _ := x.Exec(0, 2, false, toArgs(args), nil)
				return string(got), redisDo(t, conn, rd, toArgs(args))
			}
			same := func(args ...string) {
				t.Helper()
				if ours, theirs := run(args...); ours != theirs {
					t.Errorf("%q = %q, redis-server %q", args, ours, theirs)
				}
			}
			redisLine(t, conn, rd, "FLUSHALL")
			redisLine(t, conn, rd, "CONFIG SET maxmemory-policy allkeys-lfu")
			same("SET", "s", "v")
			for range 3 {
				same("GET", "s")
			}
			same("RESTORE", "s", "0", payload, "REPLACE")
			same("OBJECT", "FREQ", "s")
			same("RESTORE", "f", "0", payload, "FREQ", "100")
			same("OBJECT", "FREQ", "f")
			same("RESTORE", "f0", "0", payload, "FREQ", "0")
			same("OBJECT", "FREQ", "f0")
			redisLine(t, conn, rd, "CONFIG SET maxmemory-policy noeviction")
			same("RESTORE", "i", "0", payload, "IDLETIME", "1000")
			ours, theirs := run("OBJECT", "IDLETIME", "i")
			if ours != num(1000) || (theirs != num(1000) && theirs != num(1001)) { // a second may pass on its clock
				t.Errorf("OBJECT IDLETIME after RESTORE IDLETIME 1000 = %q, redis-server %q", ours, theirs)
			}
			clk.Advance(5 * time.Second)
			if got, _ := x.Exec(0, 2, false, toArgs([]string{"OBJECT", "IDLETIME", "i"}), nil); string(got) != num(1005) {
				t.Errorf("5 s later: OBJECT IDLETIME = %q, want 1005", got)
			}
		})
	}
}

package exec

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/vfs"

	"github.com/tairkv/tair/engines"
	"github.com/tairkv/tair/engines/ldb"
	"github.com/tairkv/tair/engines/rdb"
	"github.com/tairkv/tair/internal/command"
)

// TestDSSpecsHaveHandlers checks the data-structure specs of
// internal/command/table_ds.go against this package's handlers.
func TestDSSpecsHaveHandlers(t *testing.T) {
	ds := func(name string) bool {
		if strings.HasPrefix(name, "exh") {
			return true
		}
		switch name[0] {
		case 'h', 'l', 's', 'z', 'b', 'r':
			return name != "set" && name != "setnx" && name != "setex" && name != "setrange" && name != "strlen" &&
				name != "select" && name != "scan" && name != "substr" && name != "randomkey" && name != "reset" &&
				name != "rename" && name != "renamenx" && name != "lcs" && name != "hello"
		}
		return false
	}
	n := 0
	for _, s := range command.All() {
		if !ds(s.Name) || s.Flags&(command.Write|command.ReadOnly) == 0 {
			continue
		}
		n++
		if !Supported(s.Name) {
			t.Errorf("spec %q has no handler", s.Name)
		}
	}
	if n < 110 {
		t.Errorf("only %d data-structure specs", n)
	}
	for _, name := range []string{"sinterstore", "smove", "zunionstore", "lmove", "rpoplpush", "blpop"} {
		if s := command.Lookup([]byte(name)); s == nil || !s.Has(command.Atomic) {
			t.Errorf("%s is not Atomic", name)
		}
	}
	for _, name := range []string{"blpop", "brpop", "blmove", "blmpop", "bzpopmin", "bzpopmax", "brpoplpush", "bzmpop"} {
		if s := command.Lookup([]byte(name)); s == nil || !s.Has(command.Blocking) {
			t.Errorf("%s is not Blocking", name)
		}
	}
	zs := command.Lookup([]byte("zunionstore"))
	if got := zs.KeyIndexes(splitBytes("ZUNIONSTORE d 2 a b WEIGHTS 1 2")); !reflect.DeepEqual(got, []int{1, 3, 4}) {
		t.Errorf("zunionstore keys %v", got)
	}
	bl := command.Lookup([]byte("blpop"))
	if got := bl.KeyIndexes(splitBytes("BLPOP a b 0")); !reflect.DeepEqual(got, []int{1, 2}) {
		t.Errorf("blpop keys %v", got)
	}
}

// keyOf is the engine key of key in area 0.
func (x *Executor) keyOf(key string) engines.Key {
	c := &Ctx{X: x, Args: [][]byte{[]byte(key)}}
	return c.Key(0)
}

func splitBytes(l string) [][]byte {
	var out [][]byte
	for _, a := range splitLine(l) {
		out = append(out, []byte(a))
	}
	return out
}

// TestDSWrongType runs every family's commands against keys of the other
// types.
func TestDSWrongType(t *testing.T) {
	h := newHarness(t)
	h.x = New(h.eng, Options{Now: h.clock.Now, Buckets: 1})
	h.run([]step{
		{"SET s v", ok}, {"HSET h f v", num(1)}, {"RPUSH l a", num(1)}, {"SADD st a", num(1)}, {"ZADD z 1 a", num(1)},
		{"EXHSET x f v", num(1)},
	})
	cmds := map[string][]string{
		"hash": {"HSET %s f v", "HGET %s f", "HGETALL %s", "HDEL %s f", "HLEN %s", "HINCRBY %s f 1", "HINCRBYFLOAT %s f 1",
			"HRANDFIELD %s", "HSCAN %s 0", "HEXISTS %s f", "HSTRLEN %s f", "HMGET %s f", "HKEYS %s", "HSETNX %s f v"},
		"list": {"LPUSH %s a", "RPUSH %s a", "LPUSHX %s a", "LPOP %s", "RPOP %s 2", "LLEN %s", "LRANGE %s 0 -1", "LINDEX %s 0",
			"LSET %s 0 a", "LINSERT %s BEFORE a b", "LREM %s 0 a", "LTRIM %s 0 1", "LPOS %s a", "LMOVE %s l LEFT LEFT",
			"LMPOP 1 %s LEFT", "BLPOP %s 0"},
		"set": {"SADD %s a", "SREM %s a", "SMEMBERS %s", "SISMEMBER %s a", "SMISMEMBER %s a", "SCARD %s", "SPOP %s",
			"SRANDMEMBER %s", "SMOVE %s st a", "SUNION %s", "SDIFF %s", "SINTERCARD 1 %s", "SSCAN %s 0"},
		"zset": {"ZADD %s 1 a", "ZINCRBY %s 1 a", "ZSCORE %s a", "ZMSCORE %s a", "ZCARD %s", "ZCOUNT %s 0 1", "ZRANGE %s 0 -1",
			"ZRANGEBYSCORE %s 0 1", "ZRANK %s a", "ZREM %s a", "ZREMRANGEBYRANK %s 0 1", "ZPOPMIN %s", "ZMPOP 1 %s MIN",
			"ZUNIONSTORE d 1 %s", "ZRANDMEMBER %s", "ZSCAN %s 0", "ZLEXCOUNT %s - +", "BZPOPMAX %s 0"},
		"exhash": {"EXHSET %s f v", "EXHGET %s f", "EXHINCRBY %s f 1", "EXHDEL %s f", "EXHGETALL %s", "EXHTTL %s f"},
	}
	owner := map[string]string{"hash": "h", "list": "l", "set": "st", "zset": "z", "exhash": "x"}
	for fam, list := range cmds {
		for _, key := range []string{"s", "h", "l", "st", "z", "x"} {
			if key == owner[fam] || (fam == "zset" && key == "st" && list[0] == "") {
				continue
			}
			for _, f := range list {
				cmd := strings.ReplaceAll(f, "%s", key)
				if fam == "zset" && key == "st" && strings.HasPrefix(cmd, "ZUNIONSTORE") {
					continue // sets are valid ZUNIONSTORE inputs
				}
				if got := h.line(cmd); got != wrongT {
					t.Errorf("%s: %q", cmd, got)
				}
			}
		}
	}
	// Nothing changed any of them.
	h.run([]step{
		{"GET s", bulk("v")}, {"HGET h f", bulk("v")}, {"LRANGE l 0 -1", arr(bulk("a"))}, {"SMEMBERS st", arr(bulk("a"))},
		{"ZRANGE z 0 -1", arr(bulk("a"))}, {"EXHGET x f", bulk("v")},
	})
}

func TestDSVersionsAndEmpties(t *testing.T) {
	h := newHarness(t)
	steps := []struct {
		cmd  string
		key  string
		ver  int64
		want string
	}{
		{"HSET h a 1", "h", 1, num(1)},
		{"HSET h a 1", "h", 2, num(0)}, // every write adds 1
		{"HINCRBY h n 1", "h", 3, num(1)},
		{"HGET h a", "h", 3, bulk("1")},
		{"HDEL h zz", "h", 3, num(0)},  // a no-op is not a write
		{"HDEL h a n", "h", 0, num(2)}, // empty collections go
		{"RPUSH l a b", "l", 1, num(2)},
		{"LPOP l", "l", 2, bulk("a")},
		{"LPOP l", "l", 0, bulk("b")},
		{"SADD s a", "s", 1, num(1)},
		{"SADD s a", "s", 1, num(0)},
		{"SREM s a", "s", 0, num(1)},
		{"ZADD z 1 a", "z", 1, num(1)},
		{"ZADD z 1 a", "z", 1, num(0)},
		{"ZINCRBY z 1 a", "z", 2, bulk("2")},
		{"ZPOPMIN z", "z", 0, arr(bulk("a"), bulk("2"))},
	}
	for _, s := range steps {
		if got := h.line(s.cmd); got != s.want {
			t.Errorf("%s: %q, want %q", s.cmd, got, s.want)
		}
		if v := h.version(s.key); v != s.ver {
			t.Errorf("%s: version %d, want %d", s.cmd, v, s.ver)
		}
	}
	// A collection keeps its TTL across writes, as in Redis.
	h.run([]step{{"RPUSH t a", num(1)}, {"EXPIRE t 100", num(1)}, {"RPUSH t b", num(2)}, {"TTL t", num(100)}})
	h.clock.Advance(101 * time.Second)
	h.run([]step{{"LLEN t", num(0)}, {"RPUSH t c", num(1)}, {"TTL t", num(-1)}})
}

func TestDSPropagation(t *testing.T) {
	h := newHarness(t)
	h.x = New(h.eng, Options{Now: h.clock.Now, Buckets: 1})
	h.runProp([]propStep{
		{"HSET h f 1.5", []string{"HSET h f 1.5"}},
		{"HINCRBYFLOAT h f 0.25", []string{"HSET h f 1.75"}},
		{"HSETNX h f x", nil},
		{"HGET h f", nil},
		{"HDEL h zz", nil},
		{"SADD s a", []string{"SADD s a"}},
		{"SADD s a", nil},
		{"SPOP s", []string{"SREM s a"}},
		{"SPOP s", nil},
		{"SADD s b", []string{"SADD s b"}},
		{"SPOP s 3", []string{"SREM s b"}},
		{"SRANDMEMBER s", nil},
		{"RPUSH l a b c", []string{"RPUSH l a b c"}},
		{"BLPOP nol l 0", []string{"LPOP l"}},
		{"BRPOP l 0", []string{"RPOP l"}},
		{"BLMOVE l l2 LEFT RIGHT 0", []string{"LMOVE l l2 LEFT RIGHT"}},
		{"BLPOP l 0", nil},
		{"LPOP nol", nil},
		{"LMPOP 1 l2 LEFT COUNT 5", []string{"LPOP l2 1"}},
		{"ZADD z 1 a 2 b", []string{"ZADD z 1 a 2 b"}},
		{"BZPOPMIN z 0", []string{"ZPOPMIN z"}},
		{"ZMPOP 1 z MAX COUNT 4", []string{"ZPOPMAX z 1"}},
		{"ZADD z XX 1 a", nil},
		{"LTRIM nol 0 1", nil},
	})
}

func TestDSRESP3(t *testing.T) {
	h := newHarness(t)
	h.proto = 3
	h.run([]step{
		{"HSET h f v", num(1)},
		{"HGETALL h", "%1\r\n" + bulk("f") + bulk("v")},
		{"HGETALL nokey", "%0\r\n"},
		{"HRANDFIELD h 1 WITHVALUES", arr(arr(bulk("f"), bulk("v")))},
		{"HGET h nof", "_\r\n"},
		{"SADD s a", num(1)},
		{"SMEMBERS s", "~1\r\n" + bulk("a")},
		{"SPOP nos 1", "~0\r\n"},
		{"ZADD z 1.5 a 2 b", num(2)},
		{"ZSCORE z a", ",1.5\r\n"},
		{"ZRANGE z 0 -1 WITHSCORES", arr(arr(bulk("a"), ",1.5\r\n"), arr(bulk("b"), ",2\r\n"))},
		{"ZPOPMIN z", arr(bulk("a"), ",1.5\r\n")},
		{"ZPOPMAX z 1", arr(arr(bulk("b"), ",2\r\n"))},
		{"LPOP nol 1", "_\r\n"},
		{"ZADD z INCR XX 1 q", "_\r\n"},
		{"EXHSET x f v", num(1)},
		{"EXHGETALL x", arr(bulk("f"), bulk("v"))},
	})
}

func TestDSLimitsAndCrossSlot(t *testing.T) {
	h := newHarness(t)
	big := strings.Repeat("x", 1<<20+1)
	for _, cmd := range [][]string{{"HSET", "h", "f", big}, {"RPUSH", "l", big}, {"SADD", "s", big}, {"ZADD", "z", "1", big},
		{"EXHSET", "x", "f", big}, {"LSET", "l", "0", big}} {
		if got := h.do(cmd...); !strings.HasPrefix(got, "-VALUETOOLONG") {
			t.Errorf("%s with a big value: %q", cmd[0], got)
		}
	}
	h.run([]step{
		{"EXISTS h l s z x", num(0)},
		{"SADD {t}a x", num(1)},
		{"SMOVE {t}a {t}b x", num(1)},
		{"SINTERSTORE {t}c {t}a {t}b", num(0)},
	})
	// Keys in different buckets (a direct call; the proxy refuses first).
	found := false
	for _, k := range []string{"b", "c", "d", "e", "f", "g"} {
		if bucketOf("a", h.x) != bucketOf(k, h.x) {
			if got := h.line("SMOVE a " + k + " x"); !strings.HasPrefix(got, "-CROSSSLOT") {
				t.Errorf("SMOVE across buckets: %q", got)
			}
			found = true
			break
		}
	}
	if !found {
		t.Fatal("no two keys in different buckets")
	}
}

func TestDSHiddenKeysReadAsMissing(t *testing.T) {
	h := newHarness(t)
	h.run([]step{{"RPUSH l a", num(1)}, {"TAIR.HIDE l", num(1)}, {"LLEN l", num(0)}, {"RPUSH l b", num(1)},
		{"LRANGE l 0 -1", arr(bulk("b"))}})
}

// TestHashOnPersistentEngine runs hashes on ldb, where they are prefix
// keys (pkey = key, skey = field).
func TestHashOnPersistentEngine(t *testing.T) {
	eng, err := ldb.OpenFS(engines.Options{Dir: "db"}, vfs.NewMem())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	if !eng.Persistent() {
		t.Skip("ldb is not persistent?")
	}
	h := &harness{t: t, x: New(eng, Options{}), eng: eng, proto: 2}
	h.run([]step{
		{"HSET h a 1 b 2", num(2)},
		{"HSET h a 3", num(0)},
		{"HGET h a", bulk("3")},
		{"HMGET h a zz b", arr(bulk("3"), null, bulk("2"))},
		{"HGETALL h", arr(bulk("a"), bulk("3"), bulk("b"), bulk("2"))},
		{"HKEYS h", arr(bulk("a"), bulk("b"))},
		{"HLEN h", num(2)},
		{"HEXISTS h b", num(1)},
		{"HSTRLEN h b", num(1)},
		{"HINCRBY h a 4", num(7)},
		{"HINCRBY h zz x", notInt},
		{"HINCRBYFLOAT h a 0.5", bulk("7.5")},
		{"HSETNX h a 1", num(0)},
		{"HSCAN h 0", arr(bulk("0"), arr(bulk("a"), bulk("7.5"), bulk("b"), bulk("2")))},
		{"HSCAN h 0 NOVALUES", arr(bulk("0"), arr(bulk("a"), bulk("b")))},
		{"HSCAN h 0 MATCH b NOVALUES", arr(bulk("0"), arr(bulk("b")))},
		{"HDEL h a zz", num(1)},
		{"HDEL h b", num(1)},
		{"HLEN h", num(0)},
		{"SET s v", ok},
		{"HSET s f v", wrongT},
		{"HGET s f", wrongT},
		{"HSET h2 f v", num(1)},
		{"RPUSH h2 a", wrongT},
		{"SADD h2 a", wrongT},
		{"LLEN h2", wrongT},
		{"RPUSH l a b", num(2)}, // other types are objects on ldb too
		{"LRANGE l 0 -1", arr(bulk("a"), bulk("b"))},
		{"HGET l f", wrongT},
		{"HSET e a 1", num(1)},
		{"EXPIRE e 100", num(1)},
		{"HSET e b 2", num(1)}, // a new field takes the key's expiry
		{"HINCRBY e c 1", num(1)},
		{"TTL e", num(100)},
	})
	for _, f := range []string{"a", "b", "c"} {
		e, err := eng.PrefixGet(h.x.keyOf("e"), []byte(f))
		if err != nil || e.ExpireAt == 0 {
			t.Errorf("field %s: %+v %v", f, e, err)
		}
	}
}

// A negative count asks for that many elements with repetitions: beyond
// maxRandRepeats it is refused (the reply would be built in full; one of
// -100000000000 killed the dataserver), at the bound it is served.
func TestRandCountBounded(t *testing.T) {
	eng := rdb.Open(engines.Options{})
	t.Cleanup(func() { eng.Close() })
	x := New(eng, Options{Buckets: 1})
	for _, cmd := range []string{"SADD s a b", "HSET h a 1 b 2", "ZADD z 1 a 2 b"} {
		x.Exec(0, 2, false, toArgs(splitLine(cmd)), nil)
	}
	const refused = "-ERR value is out of range (at most 1048576 elements with repetitions)\r\n"
	for _, cmd := range []string{"SRANDMEMBER s -100000000000", "HRANDFIELD h -1048577", "HRANDFIELD h -100000000000 WITHVALUES", "ZRANDMEMBER z -100000000000 WITHSCORES"} {
		if out, _ := x.Exec(0, 2, false, toArgs(splitLine(cmd)), nil); string(out) != refused {
			t.Errorf("%s: %q", cmd, out)
		}
	}
	out, _ := x.Exec(0, 2, false, toArgs(splitLine("SRANDMEMBER s -1048576")), nil)
	if !strings.HasPrefix(string(out), "*1048576\r\n") {
		t.Errorf("SRANDMEMBER s -1048576: %q...", out[:min(len(out), 40)])
	}
}

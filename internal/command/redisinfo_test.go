package command

import "testing"

// TestSpecsAgreeWithRedis: for every command Redis 7.0 also has, the
// table's routing data agrees with Redis's COMMAND INFO (keyspec_redis.go,
// read from redis-server by internal/command/gen; tests/command_info_test.go
// compares the proxy's replies with a live redis-server): write, readonly
// and blocking flags, movable keys (a KeysFunc) and the fixed key range.
// The differences below are deliberate.
func TestSpecsAgreeWithRedis(t *testing.T) {
	differ := map[string]string{
		"pfcount": "Write here: counting caches the cardinality in the value, which slaves must get (Redis: readonly, may_replicate)",
		"object":  "a container in Redis (keys in OBJECT|ENCODING ...); its key is at 2 here",
		"memory":  "a container in Redis (MEMORY USAGE's key); its key is at 2 here",
		"xgroup":  "a container in Redis (its subcommands write); Write here, its key at 2",
		"xinfo":   "a container in Redis (its subcommands read); ReadOnly here, its key at 2",
		"dbsize":  "NoKey here: the proxy sums every dataserver's count (Redis: readonly)",
		"sort_ro": "its key is at 1 (KeysFunc nil); Redis says movablekeys for BY/GET patterns, whose keys are not served in a cluster",
	}
	has := func(in *Info, f string) bool {
		for _, g := range in.Flags {
			if g == f {
				return true
			}
		}
		return false
	}
	n := 0
	for name, in := range redisInfo {
		s := table[name]
		if s == nil {
			continue // a command only the proxy registers
		}
		if d, ok := differ[name]; ok {
			t.Logf("%s: %s", name, d)
			continue
		}
		n++
		if s.Has(Write) != has(in, "write") {
			t.Errorf("%s: Write %v, Redis write %v", name, s.Has(Write), has(in, "write"))
		}
		if s.Has(ReadOnly) != has(in, "readonly") {
			t.Errorf("%s: ReadOnly %v, Redis readonly %v", name, s.Has(ReadOnly), has(in, "readonly"))
		}
		if s.Has(Blocking) != has(in, "blocking") {
			t.Errorf("%s: Blocking %v, Redis blocking %v", name, s.Has(Blocking), has(in, "blocking"))
		}
		if (s.KeysFunc != nil) != in.Movable() {
			t.Errorf("%s: KeysFunc %v, Redis movablekeys %v", name, s.KeysFunc != nil, in.Movable())
		}
		if s.KeysFunc == nil && (s.FirstKey != in.FirstKey || s.LastKey != in.LastKey || s.Step != in.Step) {
			t.Errorf("%s: keys %d %d %d, Redis %d %d %d", name, s.FirstKey, s.LastKey, s.Step, in.FirstKey, in.LastKey, in.Step)
		}
	}
	if n < 150 {
		t.Errorf("only %d commands compared", n)
	}
}

package command

import "strings"

// The data-structure families: hashes, lists, sets, sorted sets and
// TairHash (dataserver/exec hash.go, list.go, set.go, zset.go,
// tairhash.go). Multi-key commands are Atomic (one bucket, else
// CROSSSLOT); blocking ones are also Blocking: the proxy polls their
// non-blocking forms, the dataserver makes a single attempt.
func init() {
	r, w := ReadOnly, Write
	one := func(name string, arity int, f Flag) *Spec {
		return &Spec{Name: name, Arity: arity, Flags: f, FirstKey: 1, LastKey: 1, Step: 1}
	}
	two := func(name string, arity int, f Flag) *Spec {
		return &Spec{Name: name, Arity: arity, Flags: f | Atomic, FirstKey: 1, LastKey: 2, Step: 1}
	}
	all := func(name string, arity int, f Flag, first, last int) *Spec {
		return &Spec{Name: name, Arity: arity, Flags: f | Atomic, FirstKey: first, LastKey: last, Step: 1}
	}
	numkeys := func(name string, arity int, f Flag, pos int, extra ...int) *Spec {
		return &Spec{Name: name, Arity: arity, Flags: f | Atomic, KeysFunc: NumKeysAt(pos, extra...)}
	}
	Register(
		// hashes
		one("hset", -4, w),
		one("hmset", -4, w),
		one("hsetnx", 4, w),
		one("hget", 3, r),
		one("hmget", -3, r),
		one("hgetall", 2, r),
		one("hkeys", 2, r),
		one("hvals", 2, r),
		one("hdel", -3, w),
		one("hlen", 2, r),
		one("hexists", 3, r),
		one("hstrlen", 3, r),
		one("hincrby", 4, w),
		one("hincrbyfloat", 4, w),
		one("hrandfield", -2, r),
		one("hscan", -3, r),

		// lists
		one("lpush", -3, w),
		one("rpush", -3, w),
		one("lpushx", -3, w),
		one("rpushx", -3, w),
		one("lpop", -2, w),
		one("rpop", -2, w),
		one("llen", 2, r),
		one("lrange", 4, r),
		one("lindex", 3, r),
		one("lset", 4, w),
		one("linsert", 5, w),
		one("lrem", 4, w),
		one("ltrim", 4, w),
		one("lpos", -3, r),
		two("lmove", 5, w),
		two("rpoplpush", 3, w),
		numkeys("lmpop", -4, w, 1),
		all("blpop", -3, w|Blocking, 1, -2),
		all("brpop", -3, w|Blocking, 1, -2),
		two("blmove", 6, w|Blocking),
		two("brpoplpush", 4, w|Blocking),
		numkeys("blmpop", -5, w|Blocking, 2),

		// sets
		one("sadd", -3, w),
		one("srem", -3, w),
		one("smembers", 2, r),
		one("sismember", 3, r),
		one("smismember", -3, r),
		one("scard", 2, r),
		one("spop", -2, w),
		one("srandmember", -2, r),
		two("smove", 4, w),
		all("sinter", -2, r, 1, -1),
		all("sunion", -2, r, 1, -1),
		all("sdiff", -2, r, 1, -1),
		all("sinterstore", -3, w, 1, -1),
		all("sunionstore", -3, w, 1, -1),
		all("sdiffstore", -3, w, 1, -1),
		numkeys("sintercard", -3, r, 1),
		one("sscan", -3, r),

		// sorted sets
		one("zadd", -4, w),
		one("zincrby", 4, w),
		one("zscore", 3, r),
		one("zmscore", -3, r),
		one("zcard", 2, r),
		one("zcount", 4, r),
		one("zlexcount", 4, r),
		one("zrange", -4, r),
		two("zrangestore", -5, w),
		one("zrevrange", -4, r),
		one("zrangebyscore", -4, r),
		one("zrevrangebyscore", -4, r),
		one("zrangebylex", -4, r),
		one("zrevrangebylex", -4, r),
		one("zrank", -3, r),
		one("zrevrank", -3, r),
		one("zrem", -3, w),
		one("zremrangebyrank", 4, w),
		one("zremrangebyscore", 4, w),
		one("zremrangebylex", 4, w),
		one("zpopmin", -2, w),
		one("zpopmax", -2, w),
		numkeys("zmpop", -4, w, 1),
		all("bzpopmin", -3, w|Blocking, 1, -2),
		all("bzpopmax", -3, w|Blocking, 1, -2),
		numkeys("bzmpop", -5, w|Blocking, 2),
		numkeys("zunionstore", -4, w, 2, 1),
		numkeys("zinterstore", -4, w, 2, 1),
		numkeys("zdiffstore", -4, w, 2, 1),
		numkeys("zunion", -3, r, 1),
		numkeys("zinter", -3, r, 1),
		numkeys("zdiff", -3, r, 1),
		numkeys("zintercard", -3, r, 1),
		one("zrandmember", -2, r),
		one("zscan", -3, r),

		// SORT: the key, and STORE's destination
		&Spec{Name: "sort", Arity: -2, Flags: w | Atomic, KeysFunc: sortKeys},
		one("sort_ro", -2, r),

		// TairHash
		one("exhset", -4, w|Tair),
		one("exhget", 3, r|Tair),
		one("exhmget", -3, r|Tair),
		one("exhgetwithver", 3, r|Tair),
		one("exhmgetwithver", -3, r|Tair),
		one("exhsetnx", 4, w|Tair),
		one("exhmset", -4, w|Tair),
		one("exhincrby", -4, w|Tair),
		one("exhincrbyfloat", -4, w|Tair),
		one("exhexpire", -4, w|Tair),
		one("exhpexpire", -4, w|Tair),
		one("exhexpireat", -4, w|Tair),
		one("exhpexpireat", -4, w|Tair),
		one("exhttl", 3, r|Tair),
		one("exhpttl", 3, r|Tair),
		one("exhver", 3, r|Tair),
		one("exhsetver", 4, w|Tair),
		one("exhmsetwithopts", -6, w|Tair),
		one("exhdel", -3, w|Tair),
		one("exhdelwithver", -4, w|Tair),
		one("exhlen", -2, r|Tair),
		one("exhexists", 3, r|Tair),
		one("exhstrlen", 3, r|Tair),
		one("exhkeys", 2, r|Tair),
		one("exhvals", 2, r|Tair),
		one("exhgetall", 2, r|Tair),
		one("exhscan", -3, r|Tair),
	)
}

// sortKeys finds SORT's keys: the sorted key and STORE's destination.
func sortKeys(args [][]byte) []int {
	if len(args) < 2 {
		return nil
	}
	out := []int{1}
	for i := 2; i < len(args); i++ {
		switch a := string(args[i]); {
		case strings.EqualFold(a, "by"), strings.EqualFold(a, "get"):
			i++
		case strings.EqualFold(a, "limit"):
			i += 2
		case strings.EqualFold(a, "store") && i+1 < len(args):
			out = append(out, i+1)
			i++
		}
	}
	return out
}

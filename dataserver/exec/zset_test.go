package exec

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tairkv/tair/engines"
	"github.com/tairkv/tair/engines/rdb"
)

// dsRedisScript drives hashes, lists, sets and sorted sets through both a
// real redis-server and the executor (see TestDSAgainstRedis). Only
// commands with a deterministic reply are here: no multi-element
// HGETALL/SMEMBERS (order), no random picks, scores that print the same
// in Redis 7.0 and 7.2.
var dsRedisScript = []string{
	// hashes
	"HSET h f1 v1", "HSET h f1 v2 f2 x", "HSET h", "HSET h f", "HSET h f v g", "HGET h f1", "HGET h nof", "HGET noh f",
	"HMSET h f3 3", "HMGET h f1 nof f3", "HMGET noh a b", "HLEN h", "HLEN noh", "HEXISTS h f1", "HEXISTS h no", "HEXISTS noh f",
	"HSTRLEN h f1", "HSTRLEN h no", "HSETNX h f1 z", "HSETNX h f9 z", "HGET h f9", "HDEL h f9 f9 nof", "HDEL noh a",
	"HINCRBY h n 5", "HINCRBY h n -7", "HINCRBY h f1 1", "HINCRBY h n x", "HINCRBY h n 9223372036854775807", "HINCRBY h n 9223372036854775809",
	"HINCRBYFLOAT h fl 1.5", "HINCRBYFLOAT h fl 10", "HINCRBYFLOAT h fl -0.25", "HINCRBYFLOAT h f1 1", "HINCRBYFLOAT h fl x",
	"HINCRBYFLOAT h fl inf", "HINCRBYFLOAT h fl 3e3", "HGET h fl",
	"HSET one k v", "HGETALL one", "HKEYS one", "HVALS one", "HGETALL noh", "HKEYS noh", "HVALS noh",
	"HRANDFIELD noh", "HRANDFIELD noh 3", "HRANDFIELD one", "HRANDFIELD one 3", "HRANDFIELD one -2", "HRANDFIELD one 1 WITHVALUES",
	"HRANDFIELD one 1 FOO", "HRANDFIELD one 0", "HRANDFIELD one x",
	"HSCAN one 0", "HSCAN one 0 MATCH k*", "HSCAN one 0 MATCH z*", "HSCAN one x", "HSCAN one 0 COUNT 0", "HSCAN one 0 FOO 1", "HSCAN noh 0",
	"HDEL one k", "EXISTS one",
	"SET str v", "HSET str f v", "HGET str f", "HGETALL str", "HLEN str", "HDEL str f", "HINCRBY str f 1", "HSCAN str 0",
	// lists
	"LPUSH l a b c", "RPUSH l d e", "LRANGE l 0 -1", "LRANGE l -2 -1", "LRANGE l 5 10", "LRANGE l 2 1", "LRANGE l -100 100", "LRANGE l x 1",
	"LLEN l", "LLEN nol", "LINDEX l 0", "LINDEX l -1", "LINDEX l 99", "LINDEX l x", "LINDEX nol 0",
	"LPUSHX nol a", "RPUSHX nol a", "EXISTS nol", "LPUSHX l z", "RPUSHX l y",
	"LSET l 0 zz", "LSET l 99 x", "LSET nol 0 x", "LSET l x x", "LINDEX l 0",
	"LINSERT l BEFORE a ins", "LINSERT l AFTER a ins2", "LINSERT l AFTER nopivot x", "LINSERT nol AFTER a x", "LINSERT l MIDDLE a x",
	"LRANGE l 0 -1",
	"RPUSH r a b a c a d a", "LREM r 2 a", "LRANGE r 0 -1", "LREM r -1 a", "LRANGE r 0 -1", "LREM r 0 a", "LRANGE r 0 -1", "LREM r 0 zz", "LREM nol 0 a",
	"LTRIM r 1 -1", "LRANGE r 0 -1", "LTRIM r 5 10", "EXISTS r", "LTRIM nol 0 1",
	"RPUSH p a b c a b c a", "LPOS p a", "LPOS p a RANK 2", "LPOS p a RANK -1", "LPOS p a COUNT 0", "LPOS p a COUNT 2 RANK -1",
	"LPOS p a MAXLEN 3 COUNT 0", "LPOS p zz", "LPOS p zz COUNT 0", "LPOS nol a", "LPOS nol a COUNT 1", "LPOS p a RANK 0",
	"LPOS p a COUNT -1", "LPOS p a MAXLEN -1", "LPOS p a FOO 1", "LPOS p a RANK x", "LPOS p a RANK",
	"LPOP p", "RPOP p", "LPOP p 2", "RPOP p 2", "LPOP p 0", "LPOP p -1", "LPOP p x", "LPOP p 1 2", "LPOP nol", "LPOP nol 2", "LPOP nol 0",
	"RPOP p 10", "EXISTS p",
	"RPUSH m1 a b c", "LMOVE m1 m2 LEFT RIGHT", "LMOVE m1 m2 RIGHT LEFT", "LRANGE m2 0 -1", "LMOVE m1 m1 LEFT RIGHT", "LRANGE m1 0 -1",
	"LMOVE nol m2 LEFT LEFT", "LMOVE m1 m2 UP LEFT", "RPOPLPUSH m2 m1", "LRANGE m1 0 -1", "RPOPLPUSH nol m1",
	"LMOVE m1 str LEFT LEFT", "LMOVE str m1 LEFT LEFT", "LRANGE m1 0 -1",
	"LMPOP 2 nol m1 LEFT", "LMPOP 2 nol m1 RIGHT COUNT 10", "LMPOP 2 nol m1 LEFT", "LMPOP 0 a LEFT", "LMPOP 5 a LEFT", "LMPOP 1 a MIDDLE",
	"LMPOP 1 a LEFT COUNT 0", "LMPOP 1 a LEFT COUNT", "LMPOP 1 str LEFT", "LMPOP x a LEFT",
	"LPUSH str a", "LRANGE str 0 1", "LLEN str", "LPOP str", "LINDEX str 0", "LSET str 0 a", "LPOS str a",
	// sets
	"SADD s a b c", "SADD s a d", "SCARD s", "SCARD nos", "SISMEMBER s a", "SISMEMBER s z", "SISMEMBER nos a",
	"SMISMEMBER s a z b", "SMISMEMBER nos a", "SREM s a z", "SREM nos a", "SCARD s",
	"SADD one x", "SMEMBERS one", "SMEMBERS nos", "SPOP nos", "SPOP nos 2", "SPOP one 0", "SPOP one -1", "SPOP one x",
	"SRANDMEMBER one", "SRANDMEMBER one 5", "SRANDMEMBER one -3", "SRANDMEMBER nos", "SRANDMEMBER nos 3", "SRANDMEMBER one x",
	"SPOP one", "EXISTS one",
	"SADD s1 a b c d", "SADD s2 c d e", "SADD s3 d", "SINTER s1 s2 s3", "SINTER s1 nos", "SUNION s3 nos", "SDIFF s2 s1 s3", "SDIFF nos s1",
	"SINTERSTORE d s1 s2 s3", "SMEMBERS d", "SINTERSTORE d s1 nos", "EXISTS d", "SUNIONSTORE d s3 nos", "SMEMBERS d",
	"SDIFFSTORE d s2 s1", "SMEMBERS d", "SET strd x", "SINTERSTORE strd s3", "TYPE strd",
	"SINTERCARD 2 s1 s2", "SINTERCARD 2 s1 s2 LIMIT 1", "SINTERCARD 2 s1 s2 LIMIT 0", "SINTERCARD 0 s1", "SINTERCARD 3 s1 s2",
	"SINTERCARD 2 s1 s2 LIMIT -1", "SINTERCARD 2 s1 s2 FOO", "SINTERCARD 1 nos",
	"SMOVE s1 s2 a", "SISMEMBER s2 a", "SMOVE s1 s2 a", "SMOVE nos s2 a", "SMOVE s3 s3 d", "SMOVE s3 s3 z", "SMOVE s3 str d", "SMOVE str s3 d",
	"SINTER s1 str", "SUNION s1 str", "SADD str a", "SCARD str", "SSCAN str 0", "SSCAN s3 0", "SSCAN nos 0",
	// sorted sets
	"ZADD z 1 a 2 b 3 c", "ZADD z 4 a", "ZADD z CH 5 a 6 d", "ZADD z NX 1 a 7 e", "ZADD z XX 1 a 8 f", "ZSCORE z a", "ZSCORE z f",
	// Whole-number scores print as integers (not "1e+06"), as geo scores are.
	"ZADD zi 1000000 a 1e15 b 3377785620988224 c -4000000 d", "ZSCORE zi a", "ZSCORE zi d", "ZMSCORE zi b c",
	"ZRANGE zi 0 -1 WITHSCORES", "ZINCRBY zi 1 a", "ZADD zi INCR 1e6 b",
	"ZADD z GT 0 a", "ZADD z GT CH 10 a", "ZADD z LT CH 20 a", "ZADD z LT CH 2.5 a", "ZADD z INCR 1 a", "ZADD z INCR NX 1 a", "ZADD z XX INCR 1 zz",
	"ZADD z NX XX 1 a", "ZADD z GT LT 1 a", "ZADD z NX GT 1 a", "ZADD z INCR 1 a 2 b", "ZADD z 1", "ZADD z x a", "ZADD z 1 a 2", "ZADD z nan a",
	"ZADD noz XX 1 a", "EXISTS noz", "ZADD z -inf ninf +inf pinf",
	"ZCARD z", "ZCARD noz", "ZSCORE noz a", "ZMSCORE z a nob b", "ZMSCORE noz a",
	"ZINCRBY z 2 b", "ZINCRBY z x b", "ZINCRBY noz2 1.5 m", "ZINCRBY z inf pinf", "ZINCRBY z -inf pinf",
	"ZRANGE z 0 -1", "ZRANGE z 0 -1 WITHSCORES", "ZRANGE z -2 -1 WITHSCORES", "ZRANGE z 2 1", "ZRANGE z 0 -1 REV", "ZREVRANGE z 0 1 WITHSCORES",
	"ZRANGE z 1 5 BYSCORE", "ZRANGE z (1 5 BYSCORE WITHSCORES", "ZRANGE z 5 (1 BYSCORE REV", "ZRANGE z -inf +inf BYSCORE LIMIT 1 2",
	"ZRANGE z -inf +inf BYSCORE LIMIT -1 2", "ZRANGE z -inf +inf BYSCORE LIMIT 1 -1", "ZRANGE z 0 -1 LIMIT 0 1", "ZRANGE z x 1 BYSCORE",
	"ZRANGE z 0 -1 FOO", "ZRANGE z 0 1 BYSCORE BYLEX", "ZRANGE noz 0 -1",
	"ZRANGEBYSCORE z 2 5", "ZRANGEBYSCORE z (2 (5 WITHSCORES", "ZRANGEBYSCORE z -inf +inf LIMIT 2 3 WITHSCORES", "ZRANGEBYSCORE z 0 10 REV",
	"ZREVRANGEBYSCORE z 5 2", "ZREVRANGEBYSCORE z +inf -inf LIMIT 1 2", "ZRANGEBYSCORE z a b", "ZRANGEBYSCORE z 5 2",
	"ZCOUNT z 2 5", "ZCOUNT z (2 (5", "ZCOUNT z -inf +inf", "ZCOUNT z 5 2", "ZCOUNT z x 1", "ZCOUNT noz 0 1",
	"ZADD lex 0 a 0 b 0 c 0 d 0 e", "ZRANGEBYLEX lex - +", "ZRANGEBYLEX lex [b (d", "ZRANGEBYLEX lex (b + LIMIT 1 2", "ZREVRANGEBYLEX lex + -",
	"ZREVRANGEBYLEX lex [d (a LIMIT 0 2", "ZRANGEBYLEX lex a b", "ZRANGEBYLEX lex - + WITHSCORES", "ZRANGE lex [b [c BYLEX", "ZRANGE lex [c [b BYLEX REV",
	"ZLEXCOUNT lex - +", "ZLEXCOUNT lex (a [c", "ZLEXCOUNT lex + -", "ZLEXCOUNT lex x y", "ZRANGEBYLEX lex + +", "ZRANGEBYLEX lex - -",
	"ZRANK z a", "ZRANK z nob", "ZREVRANK z a", "ZRANK noz a", "ZREVRANK z b",
	"ZREM z a nob", "ZREM noz a", "ZREMRANGEBYRANK z 0 0", "ZRANGE z 0 -1", "ZREMRANGEBYSCORE z 5 6", "ZRANGE z 0 -1", "ZREMRANGEBYSCORE z x 1",
	"ZREMRANGEBYLEX lex [b [c", "ZRANGE lex 0 -1", "ZREMRANGEBYLEX lex x y", "ZREMRANGEBYRANK z x 1", "ZREMRANGEBYRANK noz 0 1",
	"ZPOPMIN z", "ZPOPMAX z", "ZPOPMIN z 2", "ZPOPMIN z 0", "ZPOPMIN z -1", "ZPOPMIN z x", "ZPOPMIN noz", "ZPOPMIN noz 3", "ZPOPMIN z 1 2",
	"ZADD zp 1 a 2 b 3 c", "ZMPOP 2 noz zp MIN", "ZMPOP 2 noz zp MAX COUNT 5", "ZMPOP 1 zp MIN", "ZMPOP 0 zp MIN", "ZMPOP 1 zp FOO",
	"ZMPOP 1 zp MIN COUNT 0", "ZMPOP 1 str MIN",
	"ZADD za 1 a 2 b 3 c", "ZADD zb 10 b 20 c 30 d", "SADD sa a d x",
	"ZUNIONSTORE zu 2 za zb", "ZRANGE zu 0 -1 WITHSCORES", "ZUNIONSTORE zu 2 za zb WEIGHTS 2 3", "ZRANGE zu 0 -1 WITHSCORES",
	"ZUNIONSTORE zu 2 za zb AGGREGATE MIN", "ZRANGE zu 0 -1 WITHSCORES", "ZUNIONSTORE zu 2 za zb AGGREGATE MAX", "ZRANGE zu 0 -1 WITHSCORES",
	"ZINTERSTORE zi 2 za zb", "ZRANGE zi 0 -1 WITHSCORES", "ZINTERSTORE zi 3 za zb sa", "ZRANGE zi 0 -1 WITHSCORES", "ZINTERSTORE zi 2 za sa WEIGHTS 1 5",
	"ZRANGE zi 0 -1 WITHSCORES", "ZINTERSTORE zi 2 za noz", "EXISTS zi", "ZDIFFSTORE zd 2 za zb", "ZRANGE zd 0 -1 WITHSCORES",
	"ZUNIONSTORE zu 0 za", "ZUNIONSTORE zu 3 za zb", "ZUNIONSTORE zu 2 za zb WEIGHTS 1 x", "ZUNIONSTORE zu 2 za zb AGGREGATE FOO",
	"ZUNIONSTORE zu 2 za str", "ZUNIONSTORE zu 1 za WEIGHTS 1 2",
	// Redis's arithmetic: -0 against 0 under MIN/MAX, NaN products (0 × inf)
	// of the first source taken as 0 and of the others folded in as they
	// are, the smallest source first.
	"ZADD zw 0 a 1 b 2 c 3 d", "ZADD zx 0 a 5 b", "ZADD zinf inf a -inf b 1 c",
	"ZUNION 2 zw zx WEIGHTS 0 -1 AGGREGATE MIN WITHSCORES", "ZUNION 2 zw zx WEIGHTS -1 0 AGGREGATE MAX WITHSCORES",
	"ZINTER 2 zw zinf WEIGHTS inf 0 WITHSCORES", "ZINTER 2 zinf zw WEIGHTS 0 inf WITHSCORES",
	"ZINTER 2 zw zinf WEIGHTS 1 0 AGGREGATE MIN WITHSCORES", "ZINTER 2 zinf zx WEIGHTS 1 inf AGGREGATE MAX WITHSCORES",
	"ZUNION 2 zinf zinf WEIGHTS 1 -1 WITHSCORES", "ZINTER 3 zx zw zinf WEIGHTS 0 inf -inf WITHSCORES",
	"ZUNIONSTORE zws 2 zw zinf WEIGHTS inf 0 AGGREGATE MIN", "ZRANGE zws 0 -1 WITHSCORES",
	"ZUNION 2 za zb", "ZUNION 2 za zb WITHSCORES", "ZINTER 2 za zb WITHSCORES", "ZDIFF 2 za zb WITHSCORES", "ZDIFF 2 za zb WEIGHTS 1 2",
	"ZINTERCARD 2 za zb", "ZINTERCARD 2 za zb LIMIT 1", "ZINTERCARD 0 za", "ZINTERCARD 2 za zb LIMIT -1",
	"ZRANGESTORE zs za 0 1", "ZRANGE zs 0 -1 WITHSCORES", "ZRANGESTORE zs za (1 +inf BYSCORE LIMIT 0 1", "ZRANGE zs 0 -1 WITHSCORES",
	"ZRANGESTORE zs za 0 -1 WITHSCORES", "ZRANGESTORE zs noz 0 -1", "EXISTS zs",
	"ZADD one 5 m", "ZRANDMEMBER one", "ZRANDMEMBER one 2", "ZRANDMEMBER one -2 WITHSCORES", "ZRANDMEMBER noz", "ZRANDMEMBER noz 2",
	"ZRANDMEMBER one 1 FOO", "ZSCAN one 0", "ZSCAN noz 0", "ZSCAN one 0 MATCH x*",
	"ZADD str 1 a", "ZRANGE str 0 -1", "ZSCORE str a", "ZCARD str", "ZRANK str a", "ZPOPMIN str", "ZCOUNT str 0 1", "ZINCRBY str 1 a",
}

// TestDSAgainstRedis compares raw replies with a real redis-server, in
// RESP2 and in RESP3.
func TestDSAgainstRedis(t *testing.T) {
	for _, proto := range []int{2, 3} {
		conn, rd := startRedis(t)
		if proto == 3 {
			redisDo(t, conn, rd, toArgs([]string{"HELLO", "3"}))
		}
		eng := rdb.Open(engines.Options{})
		t.Cleanup(func() { eng.Close() })
		x := New(eng, Options{Buckets: 1})
		for _, l := range dsRedisScript {
			sameAsRedis(t, conn, rd, x, proto, l, toArgs(splitLine(l)))
		}
	}
}

func init() {
	dsRedisScript = append(dsRedisScript,
		"SPOP s1 1 2", "SINTERCARD x s1", "ZINTERCARD x za", "ZINTERCARD 5 za", "ZMPOP x za MIN", "ZMPOP 5 za MIN",
		"BLMPOP 0 x a LEFT", "BLMPOP x 1 a LEFT", "BLPOP a x", "BLPOP a -1", "ZUNIONSTORE d x a", "ZUNIONSTORE d -1 a", "ZUNION 3 a",
		"SINTERCARD -1 s1", "LMPOP -1 a LEFT",
		"RPUSH bl a b c d", "BLPOP nol bl 0", "BRPOP bl 0", "BLMPOP 0 1 bl LEFT", "BRPOPLPUSH bl bl2 0", "BLPOP bl 0.01",
		"RPUSH bl x y", "BLMOVE bl bl2 LEFT RIGHT 0", "LRANGE bl2 0 -1", "BLMPOP 0 2 nol bl RIGHT COUNT 3",
		"ZADD bz 1 a 2 b 3 c", "BZPOPMIN nob bz 0", "BZPOPMAX bz 0", "BZMPOP 0 1 bz MIN COUNT 5", "BZPOPMIN bz x",
	)
}

// BenchmarkDSBench runs redis-benchmark's data-structure commands through
// the executor on rdb.
func BenchmarkDSBench(b *testing.B) {
	eng := rdb.Open(engines.Options{})
	defer eng.Close()
	x := New(eng, Options{})
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"LPUSH", []string{"LPUSH", "mylist", "xxx"}},
		{"RPOP", []string{"RPOP", "mylist"}},
		{"SADD", []string{"SADD", "myset", "element:%d"}},
		{"SPOP", []string{"SPOP", "myset"}},
		{"HSET", []string{"HSET", "myhash", "element:%d", "xxx"}},
		{"ZADD", []string{"ZADD", "myzset", "%d", "element:%d"}},
		{"ZPOPMIN", []string{"ZPOPMIN", "myzset"}},
		{"LRANGE_600", []string{"LRANGE", "mylist600", "0", "599"}},
	} {
		if tc.name == "LRANGE_600" {
			for i := 0; i < 600; i++ {
				x.Exec(0, 2, false, [][]byte{[]byte("RPUSH"), []byte("mylist600"), []byte("xxx")}, nil)
			}
		}
		b.Run(tc.name, func(b *testing.B) {
			var out []byte
			args := make([][]byte, len(tc.args))
			for i := 0; i < b.N; i++ {
				for j, a := range tc.args {
					if strings.Contains(a, "%d") {
						args[j] = fmt.Appendf(args[j][:0], a, i%100000)
					} else {
						args[j] = []byte(a)
					}
				}
				out, _ = x.Exec(0, 2, false, args, out[:0])
			}
		})
	}
}

func init() {
	dsRedisScript = append(dsRedisScript,
		"RPUSH sl 3 1 2 10", "SORT sl", "SORT sl DESC", "SORT sl ALPHA", "SORT sl LIMIT 1 2", "SORT sl LIMIT 5 2", "SORT sl LIMIT -1 -1",
		"SORT sl BY nosort", "SORT sl BY nosort DESC", "SORT sl BY nosort LIMIT 1 2",
		"SET w_1 30", "SET w_2 20", "SET w_3 10", "SORT sl BY w_*", "SORT sl BY w_* GET # GET w_*", "SORT sl BY w_* ALPHA DESC",
		"HSET hw_1 f 5", "HSET hw_2 f 1", "SORT sl BY hw_*->f GET hw_*->f", "SORT sl GET nopattern",
		"SORT sl STORE sdst", "LRANGE sdst 0 -1", "SORT sl BY w_* GET w_* STORE sdst", "LRANGE sdst 0 -1",
		"SORT nol STORE sdst", "EXISTS sdst",
		"RPUSH bad a 1", "SORT bad", "SORT bad ALPHA", "SORT sl FOO", "SORT sl LIMIT x 1", "SORT str", "SORT_RO sl STORE x", "SORT_RO sl DESC",
		"SADD sset c a b", "SORT sset ALPHA", "SORT sset BY nosort STORE sdst", "LRANGE sdst 0 -1",
		"ZADD szs 3 a 1 b 2 c", "SORT szs BY nosort", "SORT szs BY nosort DESC LIMIT 0 2", "SORT szs ALPHA DESC",
	)
}

func init() {
	dsRedisScript = append(dsRedisScript,
		"SMOVE nos str a", "SMOVE str nos a", "LMOVE nol str LEFT LEFT", "RPOPLPUSH nol str", "RPOPLPUSH str nol",
		"SADD ms a", "SMOVE ms str a", "SMOVE ms ms2 zz",
	)
}

func init() {
	dsRedisScript = append(dsRedisScript,
		"HINCRBYFLOAT hf x 0.1", "HINCRBYFLOAT hf x 0.1", "HINCRBYFLOAT hf x 0.1", "HINCRBYFLOAT hf y 1e20", "HINCRBYFLOAT hf z -5",
		"HINCRBYFLOAT hf z 5", "HSET hf w 1.0", "HINCRBYFLOAT hf w 0",
		"SADD u1 a b", "SADD u2 b c", "SUNIONSTORE u1 u1 u2", "SCARD u1", "SDIFFSTORE u1 u1 u2", "SMEMBERS u1",
		"ZADD zu1 1 a", "ZADD zu2 2 a 3 b", "ZUNIONSTORE zu1 2 zu1 zu2", "ZRANGE zu1 0 -1 WITHSCORES",
		"SET zstr x", "ZRANGESTORE zstr zu1 0 -1", "TYPE zstr", "SINTER nos str", "SINTER str nos",
		"ZADD zw 1 a 2 b", "ZUNIONSTORE zw2 1 zw WEIGHTS inf", "ZRANGE zw2 0 -1 WITHSCORES", "ZINTERSTORE zw3 2 zw zw WEIGHTS 1 -1", "ZRANGE zw3 0 -1 WITHSCORES",
		"LPUSH big 1 2 3 4 5 6 7 8 9 10", "LTRIM big 2 -3", "LRANGE big 0 -1", "LTRIM big -3 -1", "LRANGE big 0 -1", "LINSERT big BEFORE 3 x", "LRANGE big 0 -1",
		"LREM big -5 x", "LSET big -1 last", "LINDEX big -1", "LPOS big last RANK -1 MAXLEN 1",
		"ZADD zr 1 a 1 b 1 c 2 d 3 e", "ZREVRANK zr a", "ZRANGE zr (1 3 BYSCORE LIMIT 1 1 WITHSCORES", "ZRANGE zr 3 (1 BYSCORE REV WITHSCORES",
		"ZREMRANGEBYRANK zr -2 -1", "ZRANGE zr 0 -1", "ZREMRANGEBYSCORE zr -inf (1", "ZREMRANGEBYLEX zr - +", "EXISTS zr",
	)
}

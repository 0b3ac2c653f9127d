package exec

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tairkv/tair/internal/testutil"
)

// zsetNegZeroScript pins what Redis does with a score of -0 (fuzzer seed
// 405210899: ZADD k -0 m; ZSCAN k 0): a listpack-encoded sorted set (at
// most 128 members of at most 64 bytes) stores it as 0, a skiplist keeps
// -0; ZINCRBY and ZADD INCR reply the score they computed either way.
func zsetNegZeroScript() []string {
	long := strings.Repeat("x", 70) // past zset-max-listpack-value: a skiplist
	var pairs strings.Builder
	for i := range 130 { // past zset-max-listpack-entries
		fmt.Fprintf(&pairs, " %d m%d", i+1, i)
	}
	return []string{
		// listpack
		"ZADD lp -0 m", "ZSCORE lp m", "ZMSCORE lp m", "ZRANGE lp 0 -1 WITHSCORES", "ZSCAN lp 0",
		"ZRANGEBYSCORE lp -0 0 WITHSCORES", "ZADD lp 0 m", "ZADD lp CH -0 m", "ZADD lp -0.0 n", "ZSCORE lp n",
		"ZINCRBY lp1 -0 m", "ZSCORE lp1 m", "ZADD lp2 INCR -0 m", "ZSCORE lp2 m",
		"ZADD lp3 1 m", "ZINCRBY lp3 -1 m", "ZSCORE lp3 m", "ZINCRBY lp3 -0 m", "ZSCORE lp3 m",
		"ZADD lp4 -1 m", "ZINCRBY lp4 1 m", "ZSCORE lp4 m",
		"ZPOPMIN lp", "ZPOPMAX lp",
		// skiplist: a long member
		"ZADD sk -0 " + long, "ZSCORE sk " + long, "ZRANGE sk 0 -1 WITHSCORES", "ZSCAN sk 0",
		"ZADD sk -0 m", "ZSCORE sk m", "ZINCRBY sk -0 m", "ZSCORE sk m", "ZADD sk INCR 0 m", "ZSCORE sk m",
		"ZADD sk -0 m", "ZSCORE sk m", "ZREVRANGE sk 0 -1 WITHSCORES",
		// a store into a small destination: listpack, 0; with the long member: skiplist, -0
		"ZUNIONSTORE u1 1 sk", "ZRANGE u1 0 -1 WITHSCORES", "ZRANGESTORE u2 sk 0 -1", "ZRANGE u2 0 -1 WITHSCORES",
		"ZREM sk " + long, "ZSCORE sk m", "ZUNIONSTORE u3 1 sk", "ZSCORE u3 m", "ZRANGESTORE u4 sk 0 -1", "ZSCORE u4 m",
		"ZINTERSTORE u5 1 sk WEIGHTS -1", "ZSCORE u5 m", "ZUNION 1 sk WITHSCORES", "ZINTER 1 sk WITHSCORES",
		"ZDIFF 1 sk WITHSCORES", "ZDIFFSTORE u6 1 sk", "ZRANGE u6 0 -1 WITHSCORES",
		// skiplist: many members; -0 added while it was small stays 0
		"ZADD big -0 first" + pairs.String(), "ZSCORE big first", "ZADD big -0 z", "ZSCORE big z",
		"ZRANGE big 0 2 WITHSCORES", "ZINCRBY big -0 y", "ZSCORE big y",
	}
}

// TestZSetNegativeZeroAgainstRedis runs zsetNegZeroScript on redis-server
// and on each engine, in RESP2 and RESP3, raw replies compared; every
// write's propagation is replayed on a slave, which must end equal to the
// master.
func TestZSetNegativeZeroAgainstRedis(t *testing.T) {
	conn, rd := testutil.DialRedis(t)
	script := zsetNegZeroScript()
	againstRedis(t, conn, rd, func(t *testing.T, engine string, proto int) {
		p := openReplPair(t, engine, newTestClock())
		for _, l := range script {
			args := toArgs(splitLine(l))
			want := redisDo(t, conn, rd, args)
			got, prop := p.mx.Exec(0, proto, false, args, nil)
			if string(got) != want {
				t.Errorf("%s\n  got: %q\nredis: %q", truncLine(l), got, want)
			}
			if pc, rep := replay(p.sx, 0, prop); pc != nil {
				t.Fatalf("%s: the slave refused %q: %q", truncLine(l), pc, rep)
			}
		}
		p.checkEqual(t)
	})
}

func truncLine(l string) string {
	if len(l) > 80 {
		return l[:80] + "..."
	}
	return l
}

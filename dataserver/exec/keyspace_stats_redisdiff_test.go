package exec

import (
	"bufio"
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/tairkv/tair/engines"
	"github.com/tairkv/tair/engines/kdb"
	"github.com/tairkv/tair/engines/ldb"
	"github.com/tairkv/tair/engines/mdb"
	"github.com/tairkv/tair/engines/rdb"
)

// keyspaceSetup makes one key of each type; its writes are not compared.
var keyspaceSetup = []string{"SET s v", "HSET h f v", "RPUSH l a b", "SADD st a", "ZADD z 1 a", "SET c 5", "SET s3 v"}

// keyspaceReads are read commands whose keyspace_hits/keyspace_misses
// (the dataserver's redis_keyspace_hits_total/_misses_total and the
// proxy's INFO) must move as redis-server's do: one hit per key found,
// one miss per key missing, whatever the key's type.
var keyspaceReads = []string{
	"GET s", "GET nx", "GET h", "MGET s nx h", "STRLEN s", "STRLEN nx", "GETRANGE s 0 1", "SUBSTR s 0 1",
	"EXISTS s nx h", "TYPE s", "TYPE nx", "TYPE h", "TTL s", "TTL nx", "PTTL h", "TOUCH s nx",
	"HGET h f", "HGET h g", "HGET nx f", "HGETALL h", "HGETALL nx", "HMGET h f g", "HLEN h", "HEXISTS h f",
	"HKEYS h", "HRANDFIELD h",
	"LRANGE l 0 -1", "LRANGE nx 0 -1", "LLEN l", "LINDEX l 0", "LPOS l a", "SORT l ALPHA",
	"SMEMBERS st", "SISMEMBER st a", "SMISMEMBER st a b", "SCARD nx", "SRANDMEMBER st", "SINTER st nx",
	"ZRANGE z 0 -1", "ZSCORE z a", "ZCARD z", "ZRANK z a", "ZRANGEBYSCORE z 0 5",
	"GETBIT s 0", "BITCOUNT s", "PFCOUNT nx", "LCS s s3", "DUMP s", "OBJECT ENCODING s", "GETEX s",
}

// TestKeyspaceStatsAgainstRedis: read commands count keyspace hits and
// misses as redis-server counts them. Persistent engines keep a hash as
// prefix records (a pkey and its fields), and a read of one looks for a
// plain key first: there a hash key's reads differ (counted on the field,
// or as a miss then a hit), as the README says, and are left out.
func TestKeyspaceStatsAgainstRedis(t *testing.T) {
	conn, rd := startRedis(t)
	open := map[string]func() engines.Engine{
		"mdb": func() engines.Engine { return mdb.Open(engines.Options{}) },
		"rdb": func() engines.Engine { return rdb.Open(engines.Options{}) },
		"ldb": func() engines.Engine {
			e, err := ldb.Open(engines.Options{Dir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			return e
		},
		"kdb": func() engines.Engine {
			e, err := kdb.Open(engines.Options{Dir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			return e
		},
	}
	for _, name := range []string{"mdb", "rdb", "ldb", "kdb"} {
		t.Run(name, func(t *testing.T) {
			redisDo(t, conn, rd, toArgs([]string{"FLUSHALL"}))
			eng := open[name]()
			defer eng.Close()
			x := New(eng, Options{Buckets: 1})
			for _, l := range keyspaceSetup {
				redisDo(t, conn, rd, toArgs(strings.Fields(l)))
				x.Exec(0, 2, false, toArgs(strings.Fields(l)), nil)
			}
			compared := 0
			for _, l := range keyspaceReads {
				f := strings.Fields(l)
				if eng.Persistent() && (f[1] == "h" || strings.Contains(l, " h ") || strings.HasSuffix(l, " h")) {
					continue
				}
				args := toArgs(f)
				rh0, rm0 := redisKeyspaceStats(t, conn, rd)
				redisDo(t, conn, rd, args)
				rh1, rm1 := redisKeyspaceStats(t, conn, rd)
				eh0, em0 := engineKeyspaceStats(eng)
				x.Exec(0, 2, false, args, nil)
				eh1, em1 := engineKeyspaceStats(eng)
				if eh1-eh0 != rh1-rh0 || em1-em0 != rm1-rm0 {
					t.Errorf("%s: hits/misses +%d/+%d, redis-server +%d/+%d", l, eh1-eh0, em1-em0, rh1-rh0, rm1-rm0)
				}
				compared++
			}
			if compared < 30 {
				t.Fatalf("only %d commands compared", compared)
			}
			// A slave's replay counts nothing.
			h0, m0 := engineKeyspaceStats(eng)
			x.Exec(0, 2, true, toArgs([]string{"SET", "s", "w"}), nil)
			x.Exec(0, 2, true, toArgs([]string{"RPUSH", "l", "c"}), nil)
			if h1, m1 := engineKeyspaceStats(eng); h1 != h0 || m1 != m0 {
				t.Errorf("replicated writes counted +%d/+%d", h1-h0, m1-m0)
			}
		})
	}
}

func redisKeyspaceStats(t *testing.T, conn net.Conn, rd *bufio.Reader) (hits, misses int64) {
	t.Helper()
	for _, ln := range strings.Split(redisDo(t, conn, rd, toArgs([]string{"INFO", "stats"})), "\r\n") {
		if v, ok := strings.CutPrefix(ln, "keyspace_hits:"); ok {
			hits, _ = strconv.ParseInt(v, 10, 64)
		}
		if v, ok := strings.CutPrefix(ln, "keyspace_misses:"); ok {
			misses, _ = strconv.ParseInt(v, 10, 64)
		}
	}
	return hits, misses
}

func engineKeyspaceStats(e engines.Engine) (hits, misses int64) {
	for _, st := range e.AllStats() {
		hits += st.Hits
		misses += st.Misses
	}
	return hits, misses
}

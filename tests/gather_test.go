package tests

// Gathered reads through the real proxy: SUNION, SINTER, SDIFF,
// SINTERCARD, ZUNION, ZINTER, ZDIFF, ZINTERCARD and PFCOUNT whose keys live in
// different buckets (on different dataservers) are read key by key and
// combined by the proxy; their replies must be redis-server's, byte for
// byte (the set commands' members in any order), in RESP2 and RESP3,
// errors included. The *STORE forms stay CROSSSLOT across buckets.

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tairkv/tair/internal/route"
)

// gatherSetup fills both servers: sets, sorted sets (with inf, -inf, -0
// and ties) and keys of other types, each name in its own bucket.
func gatherSetup() [][]string {
	var out [][]string
	add := func(args ...string) { out = append(out, args) }
	add("SADD", "gs1", "a", "b", "c", "d", "1", "2", "3")
	add("SADD", "gs2", "c", "d", "e", "f", "3")
	add("SADD", "gs3", "a", "c", "e", "g")
	add("SADD", "gs4", "x")
	add("SADD", "gsint", "1", "2", "3", "100")
	big := []string{"SADD", "gsbig"}
	for i := 0; i < 200; i += 2 {
		big = append(big, fmt.Sprint("m", i))
	}
	add(big...)
	add("ZADD", "gz1", "1", "a", "2", "b", "3", "c", "inf", "d")
	add("ZADD", "gz2", "10", "b", "-5", "c", "-inf", "d", "0", "e")
	add("ZADD", "gz3", "0", "a", "0", "b", "1.5", "c", "1.5", "x", "1.5", "e")
	add("ZADD", "gz4", "0.25", "a", "-0.5", "b", "-inf", "z")
	zbig := []string{"ZADD", "gzbig"}
	for i := 0; i < 150; i++ {
		zbig = append(zbig, fmt.Sprint(i%7), fmt.Sprint("m", i))
	}
	add(zbig...)
	add("SET", "gstr", "v")
	add("HSET", "ghash", "f", "v")
	add("RPUSH", "glist", "a")
	// HyperLogLogs: sparse ones, a dense one (5000 elements), and a
	// corrupted sparse one (its opcodes cover 8 of 16384 registers).
	add("PFADD", "gh1", "a", "b", "c", "d", "e")
	add("PFADD", "gh2", "c", "d", "e", "f", "g", "h")
	h3 := []string{"PFADD", "gh3"}
	for i := 0; i < 100; i++ {
		h3 = append(h3, fmt.Sprint(i))
	}
	add(h3...)
	hbig := []string{"PFADD", "ghbig"}
	for i := 0; i < 5000; i++ {
		hbig = append(hbig, fmt.Sprint("e", i))
	}
	add(hbig...)
	add("SET", "ghbad", "HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\xff\xff")
	return out
}

// gatherLines are the commands compared, each with its mark ("" byte
// for byte; "unordered" for set replies).
func gatherLines() []scriptLine {
	var out []scriptLine
	add := func(mark string, args ...string) {
		out = append(out, scriptLine{no: len(out) + 1, mark: mark, args: args, text: strings.Join(args, " ")})
	}
	setKeys := []string{"gs1", "gs2", "gs3", "gs4", "gsint", "gsbig", "gnone", "gstr", "ghash", "gz1"}
	zKeys := []string{"gz1", "gz2", "gz3", "gz4", "gzbig", "gs1", "gs3", "gnone", "gstr", "glist"}
	var seqs func(keys []string, n int) [][]string
	seqs = func(keys []string, n int) [][]string {
		if n == 0 {
			return [][]string{nil}
		}
		var res [][]string
		for _, k := range keys {
			for _, rest := range seqs(keys, n-1) {
				res = append(res, append([]string{k}, rest...))
			}
		}
		return res
	}
	// Every ordered pair, and triples over a smaller choice.
	pairsAndTriples := func(keys []string, small []string) [][]string {
		out := append(seqs(keys, 1), seqs(keys, 2)...)
		return append(out, seqs(small, 3)...)
	}
	for _, ks := range pairsAndTriples(setKeys, []string{"gs1", "gs2", "gs3", "gnone", "gstr"}) {
		for _, cmd := range []string{"SUNION", "SINTER", "SDIFF"} {
			add("unordered", append([]string{cmd}, ks...)...)
		}
		n := fmt.Sprint(len(ks))
		add("", append([]string{"SINTERCARD", n}, ks...)...)
		for _, lim := range []string{"0", "1", "2", "-1", "x"} {
			add("", append(append([]string{"SINTERCARD", n}, ks...), "LIMIT", lim)...)
		}
	}
	// SINTERCARD's option and numkeys errors over two buckets.
	for _, tail := range [][]string{
		{"LIMIT"}, {"LIMIT", "1", "LIMIT", "2"}, {"LIMIT", "1", "FOO"}, {"FOO"}, {"limit", "01"},
		{"LIMIT", "+1"}, {"LIMIT", "9223372036854775808"}, {"LIMIT", " 1"},
	} {
		add("", append([]string{"SINTERCARD", "2", "gs1", "gs2"}, tail...)...)
		add("", append([]string{"SINTERCARD", "2", "gs1", "gstr"}, tail...)...)
	}
	for _, n := range []string{"02", "+2", "0", "-1", "3", "x", "2 "} {
		add("", "SINTERCARD", n, "gs1", "gs2")
		add("", "ZINTERCARD", n, "gz1", "gz2")
		for _, cmd := range []string{"ZUNION", "ZINTER", "ZDIFF"} {
			add("", cmd, n, "gz1", "gz2")
		}
	}

	zopts := [][]string{
		nil,
		{"WITHSCORES"},
		{"withscores", "WITHSCORES"},
		{"AGGREGATE", "MIN", "WITHSCORES"},
		{"AGGREGATE", "max", "WITHSCORES"},
		{"AGGREGATE", "SUM", "WITHSCORES"},
		{"AGGREGATE", "avg"},
		{"AGGREGATE"},
		{"FOO"},
	}
	weightSets := [][]string{{"2", "3"}, {"inf", "1"}, {"-inf", "-inf"}, {"0", "-1"}, {"1.5", "x"}, {"nan", "1"}, {"1"}, {"0x10", "1e400"}}
	for _, ks := range pairsAndTriples(zKeys, []string{"gz1", "gz2", "gz3", "gs1", "gnone", "gstr"}) {
		n := fmt.Sprint(len(ks))
		for _, cmd := range []string{"ZUNION", "ZINTER", "ZDIFF"} {
			base := append([]string{cmd, n}, ks...)
			for _, o := range zopts {
				add("", append(append([]string(nil), base...), o...)...)
			}
			if len(ks) != 2 || ks[0] == ks[1] {
				// One key twice is one bucket: the dataserver's command,
				// not a gathered one.
				continue
			}
			for _, w := range weightSets {
				line := append(append(append([]string(nil), base...), "WEIGHTS"), w...)
				add("", line...)
				add("", append(line, "WITHSCORES")...)
				add("", append(line, "AGGREGATE", "MIN", "WITHSCORES")...)
				add("", append(line, "AGGREGATE", "MAX", "WITHSCORES")...)
			}
		}
		base := append([]string{"ZINTERCARD", n}, ks...)
		add("", base...)
		for _, tail := range [][]string{{"LIMIT", "0"}, {"LIMIT", "1"}, {"LIMIT", "-1"}, {"LIMIT"}, {"WITHSCORES"}} {
			add("", append(append([]string(nil), base...), tail...)...)
		}
	}
	// PFCOUNT of several keys: the union's cardinality; the first key
	// that is not a HyperLogLog, or a corrupted one, answers its error.
	hKeys := []string{"gh1", "gh2", "gh3", "ghbig", "ghbad", "gstr", "ghash", "gnone"}
	for _, ks := range append(seqs(hKeys, 2), seqs([]string{"gh1", "gh3", "ghbig", "ghbad", "gstr", "gnone"}, 3)...) {
		add("", append([]string{"PFCOUNT"}, ks...)...)
	}
	return out
}

func TestGatheredReadsMatchRedis(t *testing.T) {
	redisAddr, proxyAddr, tbl := startCompared(t)
	// The keys must really be in different buckets, over more than one
	// dataserver.
	buckets := map[route.BucketID]string{}
	masters := map[string]bool{}
	for _, l := range gatherSetup() {
		k := l[1]
		b := route.BucketOf([]byte(k), tbl.Buckets)
		if o, ok := buckets[b]; ok {
			t.Fatalf("%s and %s share bucket %d", k, o, b)
		}
		buckets[b] = k
		masters[tbl.Master(b)] = true
	}
	if len(masters) < 2 {
		t.Fatalf("the keys all live on one dataserver")
	}
	lines := gatherLines()
	t.Logf("%d command lines, each in RESP2 and RESP3", len(lines))
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			rc, pc := dialRaw(t, redisAddr), dialRaw(t, proxyAddr)
			for _, cn := range []*rawConn{rc, pc} {
				cmds := [][]string{{"FLUSHALL"}, {"HELLO", fmt.Sprint(proto)}}
				for _, args := range append(cmds, gatherSetup()...) {
					if _, err := cn.do(args); err != nil {
						t.Fatalf("%q: %v", args, err)
					}
				}
			}
			mismatches := 0
			for _, l := range lines {
				want, err := rc.do(l.args)
				if err != nil {
					t.Fatalf("%s: redis-server: %v", l.text, err)
				}
				got, err := pc.do(l.args)
				if err != nil {
					t.Fatalf("%s: proxy: %v", l.text, err)
				}
				if !rawEqual(l, want, got) {
					if mismatches++; mismatches <= 30 {
						t.Errorf("%s\n  redis: %q\n  proxy: %q", l.text, want, got)
					}
				}
			}
			if mismatches > 0 {
				t.Errorf("%d of %d lines differ", mismatches, len(lines))
			}
			// The STORE forms are writes: one bucket only.
			for _, args := range [][]string{
				{"SUNIONSTORE", "gdst", "gs1", "gs2"}, {"SINTERSTORE", "gdst", "gs1", "gs2"}, {"SDIFFSTORE", "gdst", "gs1", "gs2"},
				{"ZUNIONSTORE", "gdst", "2", "gz1", "gz2"}, {"ZINTERSTORE", "gdst", "2", "gz1", "gz2"}, {"ZDIFFSTORE", "gdst", "2", "gz1", "gz2"},
			} {
				got, err := pc.do(args)
				if err != nil || !strings.HasPrefix(got, "-CROSSSLOT") {
					t.Errorf("%q = %q, %v; want CROSSSLOT", args, got, err)
				}
			}
		})
	}
}

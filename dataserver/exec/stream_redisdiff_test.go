package exec

// The stream commands against a real redis-server (see redisdiff_test.go):
// the same lines, replies compared on every engine, RESP2 and RESP3. Most
// lines use explicit ids and compare byte for byte. Lines marked "~" carry
// what depends on the clock (ids from *, idle times, delivery and seen
// times): their replies are parsed and normalised first (streamNormalise)
// — ids renamed in order of first appearance on each side, times checked
// to be plausible and replaced by a marker — and then compared.

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tairkv/tair/engines"
	"github.com/tairkv/tair/engines/ldb"
	"github.com/tairkv/tair/engines/rdb"
)

var streamScript = []string{
	// XADD: explicit ids, ms-*, errors
	"XADD s 1-1 f v", "XADD s 1-1 f v", "XADD s 1-0 f v", "XADD s 0-1 f v", "XADD s 1-2 f v a b", "XADD s 1-* x y",
	"XADD s 2-* x y", "XADD s 2-* x y", "XADD s 3 k v", "XADD s 3 k v", "XADD s 5-5 a 1 b 2 c 3", "XLEN s", "TYPE s", "OBJECT ENCODING s",
	"XADD s 0-0 f v", "XADD n0 0-0 f v", "EXISTS n0", "XADD n0 0 f v", "XADD n0 0-* f v", "XRANGE n0 - +",
	"XADD s 6-1 f", "XADD s 6-1", "XADD s 6-1 f v g", "XADD s", "XADD s f v", "XADD s abc f v", "XADD s 1-x f v", "XADD s -1 f v",
	"XADD s 6--1 f v", "XADD s 6- f v", "XADD s -6 f v", "XADD s + f v", "XADD s - f v", "XADD s 18446744073709551616 f v",
	"XADD s 99999999999999999999-1 f v", "XADD s 7-18446744073709551616 f v", "XADD s \" 7-1\" f v", "XADD s 8-+1 f v",
	"XADD s 9-*x f v", "XADD s *-1 f v", "XADD s 10-** f v", "XRANGE s - +",
	"XADD s NOMKSTREAM 11-0 f v", "XADD nomk NOMKSTREAM 1-1 f v", "EXISTS nomk", "XADD nomk nomkstream * f v", "EXISTS nomk",
	"XADD big 18446744073709551615-18446744073709551614 f v", "XADD big 18446744073709551615-* f v",
	"XADD big 18446744073709551615-* f v", "XADD big 18446744073709551615-18446744073709551615 f v", "XADD big * f v",
	"XADD big 5 f v", "XLEN big", "XINFO STREAM big",
	"XADD s2 18446744073709551614-18446744073709551615 f v", "XADD s2 18446744073709551615-* f v", "XRANGE s2 - +",
	// MAXLEN / MINID / LIMIT parsing
	"XADD t MAXLEN 2 1-1 a 1", "XADD t MAXLEN 2 2-1 a 2", "XADD t MAXLEN 2 3-1 a 3", "XRANGE t - +",
	"XADD t MAXLEN = 1 4-1 a 4", "XRANGE t - +", "XADD t MAXLEN ~ 1 5-1 a 5", "XRANGE t - +", "XADD t MINID 5 6-1 a 6",
	"XRANGE t - +", "XADD t MINID = 6-1 7-1 a 7", "XRANGE t - +", "XADD t MINID ~ 7 8-1 a 8", "XLEN t",
	"XADD t MAXLEN -1 9-1 a", "XADD t MAXLEN x 9-1 a b", "XADD t MAXLEN 1 MINID 1 9-1 a b", "XADD t MINID 1 MAXLEN 1 9-1 a b",
	"XADD t MINID x 9-1 a b", "XADD t MINID - 9-1 a b", "XADD t LIMIT 10 9-1 a b", "XADD t MAXLEN 1 LIMIT 10 9-1 a b",
	"XADD t MAXLEN ~ 1 LIMIT 10 9-1 a b", "XADD t MAXLEN ~ 1 LIMIT -1 9-1 a b", "XADD t MAXLEN ~ 1 LIMIT x 9-1 a b",
	"XADD t MAXLEN 1 LIMIT 10", "XADD t MAXLEN", "XADD t MAXLEN 5", "XADD t FOO 1 9-1 a b", "XADD t NOMKSTREAM MAXLEN 5 10-1 a b",
	"XADD t maxlen ~ 0 11-1 a b", "XADD t MAXLEN 0 12-1 a b", "XLEN t", "EXISTS t", "XINFO STREAM t",
	"XADD t MAXLEN 9223372036854775807 13-1 a b", "XADD t MAXLEN 9223372036854775808 13-1 a b",
	// XTRIM
	"XTRIM t MAXLEN 0", "XLEN t", "EXISTS t", "XTRIM t", "XTRIM t FOO", "XTRIM t MAXLEN", "XTRIM t MAXLEN 1 FOO",
	"XTRIM t LIMIT 5", "XTRIM t MAXLEN 1 LIMIT 5", "XTRIM t MAXLEN ~ 1 LIMIT 5", "XTRIM t NOMKSTREAM MAXLEN 1", "XTRIM t MAXLEN -1",
	"XTRIM t MINID -", "XTRIM t MINID 1", "XTRIM not MAXLEN 1", "XTRIM not FOO 1", "XTRIM t MAXLEN ~ 1 MINID 1",
	"XTRIM t MAXLEN 1 *", "XTRIM t MINID ~ 1 LIMIT 0",
	// XRANGE / XREVRANGE
	"XRANGE s - +", "XREVRANGE s + -", "XRANGE s 1 1", "XRANGE s 1-1 1-2", "XRANGE s (1-1 +", "XRANGE s - (2-1", "XRANGE s (1-1 (5-5",
	"XRANGE s 2 5", "XRANGE s 5 2", "XREVRANGE s 5 2", "XREVRANGE s (5-5 (1-1", "XRANGE s - + COUNT 2", "XRANGE s - + COUNT 0",
	"XRANGE s - + COUNT -1", "XRANGE s - + COUNT x", "XRANGE s - + COUNT", "XRANGE s - + FOO 1", "XRANGE s - + COUNT 1 COUNT 3",
	"XREVRANGE s + - COUNT 3", "XREVRANGE s + - COUNT 0", "XRANGE s ( +", "XRANGE s (- +", "XRANGE s - (+", "XRANGE s x +",
	"XRANGE s - x", "XRANGE s (18446744073709551615-18446744073709551615 +", "XRANGE s - (0-0", "XRANGE s (0 +", "XRANGE s - (1",
	"XRANGE s -1 +", "XRANGE nos - +", "XRANGE nos - + COUNT 0", "XRANGE nos x +", "XREVRANGE nos + -", "XRANGE s",
	"XRANGE s 1-18446744073709551615 +", "XRANGE s (1-18446744073709551615 +", "XRANGE s - (2-0",
	// XDEL
	"XDEL s 1-1 2-0 2-0 99-9", "XDEL s 2-0", "XDEL s x", "XDEL s 1-2 x", "XRANGE s - +", "XDEL nos x", "XDEL nos 1-1",
	"XDEL s -", "XDEL s +", "XINFO STREAM s", "XADD d 1-1 a b", "XDEL d 1-1", "XLEN d", "EXISTS d", "XINFO STREAM d",
	"XADD d 1-2 a b", "XADD d 2-1 a b", "XDEL d 2-1", "XINFO STREAM d",
	// XSETID
	"XSETID s 100-1", "XINFO STREAM s", "XADD s 100-1 a b", "XADD s 100-* a b", "XSETID s 1-1", "XSETID s 100-2 ENTRIESADDED 1",
	"XSETID s 100-2 ENTRIESADDED 100 MAXDELETEDID 5-0", "XINFO STREAM s", "XSETID s 100-2 MAXDELETEDID 200-0",
	"XSETID s 100-2 MAXDELETEDID 4-0", "XSETID s 100-2 ENTRIESADDED -1", "XSETID s 100-2 ENTRIESADDED x", "XSETID s 100-2 FOO 1",
	"XSETID s 100-2 ENTRIESADDED", "XSETID s x", "XSETID s -", "XSETID nos 1-1", "XSETID nos x", "XSETID nos 1-1 FOO",
	"XSETID s 100-3 MAXDELETEDID x", "XSETID s 0-1", "XSETID s 100",
	// XLEN and wrong types
	"XLEN nos", "XLEN s", "SET str v", "XADD str 1-1 a b", "XLEN str", "XRANGE str - +", "XRANGE str x +", "XDEL str 1-1",
	"XTRIM str MAXLEN 1", "XSETID str 1-1", "XREAD STREAMS str 0", "XGROUP CREATE str g 0", "XINFO STREAM str",
	"XPENDING str g", "XACK str g 1-1", "XCLAIM str g c 0 1-1", "XAUTOCLAIM str g c 0 0", "XREADGROUP GROUP g c STREAMS str >",
	"LPUSH l a", "XADD s 200-1 a b", "TYPE s",
	"GET s", "SET s2 x GET", "LPUSH s a", "RPOP s", "LLEN s", "SADD s a", "SCARD s", "HSET s f v", "HGET s f", "HLEN s",
	"ZADD s 1 a", "ZCARD s", "SORT s", "SORT_RO s", "PFADD s a", "PFCOUNT s", "GETBIT s 0", "SETBIT s 0 1", "BITCOUNT s",
	"APPEND s x", "STRLEN s", "INCR s", "GETRANGE s 0 1", "GEOADD s 1 1 a", "GEOPOS s a", "LRANGE s 0 -1", "SMEMBERS s",
	"HGETALL s", "ZRANGE s 0 -1", "SINTER s", "SUNIONSTORE d s", "ZUNIONSTORE d 1 s", "GETDEL s", "GETEX s", "LPOS s a",
	"BLPOP s 0.01", "LMOVE s d LEFT LEFT", "EXISTS s", "TOUCH s", "PERSIST s", "TTL s", "TYPE s",
	// XREAD
	"XREAD STREAMS s 0", "XREAD COUNT 2 STREAMS s 0", "XREAD STREAMS s 100-1", "XREAD STREAMS s $", "XREAD STREAMS s 200-1",
	"XREAD STREAMS s nos 0 0", "XREAD STREAMS nos s 0 5-5", "XREAD STREAMS nos 0", "XREAD STREAMS s", "XREAD STREAMS s 0 0",
	"XREAD COUNT 0 STREAMS s 0", "XREAD COUNT -5 STREAMS s 0", "XREAD COUNT x STREAMS s 0", "XREAD BLOCK x STREAMS s 0",
	"XREAD BLOCK -1 STREAMS s 0", "XREAD BLOCK 0 STREAMS s 0", "XREAD BLOCK 10 STREAMS s 0", "XREAD FOO STREAMS s 0",
	"XREAD STREAMS s x", "XREAD STREAMS s >", "XREAD STREAMS s +", "XREAD STREAMS s -", "XREAD GROUP g c STREAMS s 0",
	"XREAD NOACK STREAMS s 0", "XREAD COUNT 1", "XREAD s 0", "XREAD STREAMS s str 0 0", "XREAD STREAMS str s 0 x",
	"XREAD STREAMS s l 0 0", "XREAD COUNT 1 COUNT 2 STREAMS s 0", "XREAD streams STREAMS s 0", "xread streams s 0 0", "xreadgroup GROUP g c streams s 0 0", "XREAD STREAMS s STREAMS 0 0",
	"XREAD BLOCK 9223372036854775807 STREAMS s 0", "XREAD STREAMS d 0", "XREAD STREAMS s 18446744073709551615-18446744073709551615",
	// consumer groups: XGROUP
	"XGROUP CREATE s g1 0", "XGROUP CREATE s g1 0", "XGROUP CREATE s g2 $", "XGROUP CREATE s g3 5-5 ENTRIESREAD 3",
	"XGROUP CREATE s g4 5-5 ENTRIESREAD -1", "XGROUP CREATE s g5 5-5 ENTRIESREAD -2", "XGROUP CREATE s g5 5-5 ENTRIESREAD x",
	"XGROUP CREATE s g5 5-5 FOO", "XGROUP CREATE s g5 x", "XGROUP CREATE s g5 -", "XGROUP CREATE s g5 +", "XGROUP CREATE s g5",
	"XGROUP CREATE nos g 0", "XGROUP CREATE nos g $ MKSTREAM", "XLEN nos", "TYPE nos", "XINFO STREAM nos", "XINFO GROUPS nos",
	"XGROUP CREATE mk g x MKSTREAM", "EXISTS mk", "XGROUP CREATE mk g 0 MKSTREAM ENTRIESREAD 5", "XINFO GROUPS mk",
	"XGROUP CREATE s g5 0 ENTRIESREAD", "XGROUP CREATE s g5 0 MKSTREAM MKSTREAM", "XINFO GROUPS s",
	"XGROUP SETID s g1 1-1", "XGROUP SETID s g1 $", "XGROUP SETID s g1 - ENTRIESREAD 0", "XGROUP SETID s g1 + ENTRIESREAD 2",
	"XGROUP SETID s g1 0 ENTRIESREAD", "XGROUP SETID s g1 0 FOO 1", "XGROUP SETID s g1 0 ENTRIESREAD -3", "XGROUP SETID s g1 x",
	"XGROUP SETID s nog 0", "XGROUP SETID nos2 g 0", "XGROUP SETID s g1 0 MKSTREAM", "XGROUP SETID s g1 0 ENTRIESREAD 1 X",
	"XINFO GROUPS s", "XGROUP SETID s g1 0", "XGROUP CREATECONSUMER s g1 c1", "XGROUP CREATECONSUMER s g1 c1",
	"XGROUP CREATECONSUMER s nog c1", "XGROUP CREATECONSUMER nos2 g c", "XGROUP DELCONSUMER s g1 nobody", "XGROUP DELCONSUMER s g1 c1",
	"XGROUP DELCONSUMER s nog c1", "XGROUP DESTROY s g5", "XGROUP DESTROY s g4", "XGROUP DESTROY s g4", "XGROUP DESTROY nos2 g",
	"XGROUP FOO s g", "XGROUP", "XGROUP CREATE s", "XGROUP CREATE s g", "XGROUP DESTROY s", "XGROUP DESTROY s g x",
	"XGROUP CREATECONSUMER s g1", "XGROUP DELCONSUMER s g1 c x", "XGROUP HELP", "XGROUP HELP x", "XGROUP help", "XGROUP setid s g1",
	// XREADGROUP, XACK, XPENDING
	"XREADGROUP GROUP g1 alice COUNT 2 STREAMS s >", "XREADGROUP GROUP g1 bob COUNT 1 STREAMS s >", "XINFO GROUPS s",
	"XREADGROUP GROUP g1 alice STREAMS s 0", "XREADGROUP GROUP g1 bob STREAMS s 0", "XREADGROUP GROUP g1 carol STREAMS s 0",
	"XREADGROUP GROUP g1 alice NOACK STREAMS s >", "XINFO GROUPS s", "XREADGROUP GROUP g1 alice STREAMS s >",
	"XREADGROUP GROUP g1 alice STREAMS s $", "XREADGROUP GROUP nog alice STREAMS s >", "XREADGROUP GROUP g1 alice STREAMS nos3 >",
	"XREADGROUP GROUP g1 alice STREAMS s", "XREADGROUP GROUP g1 STREAMS s >", "XREADGROUP COUNT 1 STREAMS s >",
	"XREADGROUP GROUP g1 alice STREAMS s x", "XREADGROUP GROUP g1 alice FOO STREAMS s >", "XREADGROUP GROUP g1 alice BLOCK x STREAMS s >",
	"XREADGROUP GROUP g1 alice STREAMS s str > >", "XREADGROUP GROUP g1 alice STREAMS s 18446744073709551615-18446744073709551615",
	"XREADGROUP GROUP g1 alice COUNT 1 STREAMS s 0", "XREADGROUP GROUP g1 alice COUNT 1 STREAMS s 1-2",
	"XACK s g1 1-2", "XACK s g1 1-2", "XACK s g1 x", "XACK s g1 2-1 x", "XACK s nog 1-1", "XACK nos3 g 1-1", "XACK nos3 g x", "XACK s nog x",
	"~XPENDING s g1 - + 10 alice FOO", "XPENDING s g1 - +", "XPENDING s g1 - + x", "XPENDING s g1 x + 10", "XPENDING s g1 - x 10",
	"XPENDING s nog", "XPENDING nos3 g", "XPENDING s g1 IDLE x - + 10", "XPENDING s g1 IDLE 10 - +", "XPENDING s g1 - + 0",
	"XPENDING s g1 (18446744073709551615-18446744073709551615 + 10", "XPENDING s g1 - (0-0 10", "XPENDING s g1 - + 10 nobody",
	"XPENDING s g2", "XGROUP CREATE s g6 0", "XPENDING s g6", "XPENDING s g6 - + 10", "XGROUP DELCONSUMER s g1 bob", "XPENDING s g1",
	// XCLAIM / XAUTOCLAIM (argument errors; the time-dependent ones are below)
	"XCLAIM s g1 bob x 1-1", "XCLAIM s g1 bob 0 1-1 FOO", "XCLAIM s g1 bob 0 1-1 IDLE x", "XCLAIM s g1 bob 0 1-1 TIME x",
	"XCLAIM s g1 bob 0 1-1 RETRYCOUNT x", "XCLAIM s g1 bob 0 1-1 LASTID x", "XCLAIM s nog bob 0 1-1", "XCLAIM nos3 g c 0 1-1",
	"XCLAIM s g1 bob 0 x", "XCLAIM s g1 bob 0 1-1 IDLE", "XAUTOCLAIM s g1 bob x 0", "XAUTOCLAIM s g1 bob 0 x",
	"XAUTOCLAIM s g1 bob 0 0 COUNT 0", "XAUTOCLAIM s g1 bob 0 0 COUNT x", "XAUTOCLAIM s g1 bob 0 0 COUNT -1",
	"XAUTOCLAIM s g1 bob 0 0 COUNT 9223372036854775807", "XAUTOCLAIM s g1 bob 0 0 FOO", "XAUTOCLAIM s nog bob 0 0",
	"XAUTOCLAIM nos3 g c 0 0", "XAUTOCLAIM s g1 bob 0 (18446744073709551615-18446744073709551615", "XAUTOCLAIM s g1 bob 0 0 COUNT",
	"XCLAIM s g1 bob 0 1-1 LASTID 500-0 JUSTID", "XINFO GROUPS s", "XCLAIM s g1 bob 0 99-99 FORCE JUSTID",
	// XINFO
	"XINFO GROUPS nos3", "XINFO STREAM nos3", "XINFO CONSUMERS nos3 g", "XINFO CONSUMERS s nog", "XINFO FOO s", "XINFO",
	"XINFO STREAM", "XINFO GROUPS", "XINFO GROUPS s x", "XINFO CONSUMERS s", "XINFO STREAM s FOO", "XINFO STREAM s FULL COUNT",
	"XINFO STREAM s FULL FOO 1", "XINFO STREAM s FULL COUNT x", "XINFO STREAM s FULL 1 2", "XINFO HELP", "XINFO HELP x",
	"XINFO STREAM mk", "XINFO STREAM mk FULL", "XINFO STREAM s", "XINFO GROUPS s",
	// keys
	"DEL nos", "EXISTS nos", "RENAME mk mk2", "TYPE mk2", "COPY s s3", "XRANGE s3 - +", "XINFO GROUPS s3", "XINFO STREAM s3",
	"EXPIRE s3 100", "TTL s3", "OBJECT ENCODING mk2", "DEL s3 mk2",
	// approximate trims over several nodes (100 entries per node)
	"XTRIM s MAXLEN 0",
}

// streamNodeScript fills streams past Redis's node limits (100 entries,
// 4096 bytes) and trims them with and without ~ and LIMIT, XINFO after
// each step (radix-tree-keys and -nodes follow Redis's node layout).
func streamNodeScript() []string {
	var out []string
	for i := 1; i <= 350; i++ {
		out = append(out, fmt.Sprintf("XADD n %d-1 f %d", i, i))
		if i%7 == 0 {
			out = append(out, fmt.Sprintf("XADD n %d-2 g %d h x", i, i))
		}
	}
	out = append(out, "XINFO STREAM n", "XTRIM n MAXLEN ~ 300", "XINFO STREAM n", "XTRIM n MAXLEN ~ 150", "XINFO STREAM n",
		"XTRIM n MAXLEN ~ 150 LIMIT 10", "XTRIM n MAXLEN ~ 10 LIMIT 120", "XINFO STREAM n", "XTRIM n MINID ~ 300", "XINFO STREAM n",
		"XDEL n 340-1 341-1 342-1", "XTRIM n MINID 341-1", "XINFO STREAM n", "XTRIM n MAXLEN 5", "XINFO STREAM n", "XRANGE n - +",
		"XADD n MAXLEN ~ 2 400-1 a b", "XINFO STREAM n")
	big := strings.Repeat("v", 1000)
	for i := 1; i <= 30; i++ {
		out = append(out, fmt.Sprintf("XADD b %d-1 f %s", i, big))
	}
	out = append(out, "XINFO STREAM b", "XTRIM b MAXLEN ~ 10", "XINFO STREAM b")
	for i := 1; i <= 250; i++ {
		out = append(out, fmt.Sprintf("XADD m %d-%d %d %d", i*1000, i%3, i, -i*100000))
	}
	for i := 1; i <= 250; i += 3 {
		out = append(out, fmt.Sprintf("XDEL m %d-%d", i*1000, i%3))
	}
	out = append(out, "XINFO STREAM m", "XTRIM m MAXLEN ~ 100", "XINFO STREAM m", "XTRIM m MINID ~ 200000", "XINFO STREAM m")
	return out
}

// streamTimedScript: ids from *, idle times, delivery and seen times
// ("~" lines are normalised).
var streamTimedScript = []string{
	"~XADD ts * a 1", "~XADD ts * a 2", "~XADD ts * a 3", "~XADD ts 1-* a 4", "~XADD ts MAXLEN 2 * a 5", "~XRANGE ts - +",
	"XGROUP CREATE ts g 0", "~XREADGROUP GROUP g c1 COUNT 1 STREAMS ts >", "~XREADGROUP GROUP g c2 STREAMS ts >",
	"~XPENDING ts g", "~XPENDING ts g - + 10", "~XPENDING ts g - + 10 c1", "~XPENDING ts g IDLE 100000 - + 10",
	"~XPENDING ts g IDLE 0 - + 10 c2", "~XINFO CONSUMERS ts g", "~XINFO STREAM ts FULL", "~XINFO STREAM ts FULL COUNT 1",
	"~XINFO STREAM ts FULL COUNT 0", "~XINFO GROUPS ts", "~XREADGROUP GROUP g c1 STREAMS ts 0", "~XPENDING ts g - + 10",
	"~XCLAIM ts g c3 0 0-1", "~XAUTOCLAIM ts g c3 0 0 COUNT 1", "~XPENDING ts g - + 10", "~XAUTOCLAIM ts g c3 0 0",
	"~XAUTOCLAIM ts g c1 0 0 JUSTID", "~XAUTOCLAIM ts g c1 100000 0", "~XPENDING ts g - + 10", "~XINFO CONSUMERS ts g",
	"~XCLAIM ts g c2 100000 0-1", "~XINFO STREAM ts FULL", "~XADD ts * a 6", "~XREADGROUP GROUP g c2 COUNT 5 STREAMS ts >",
	"~XINFO GROUPS ts", "~XPENDING ts g",
}

// streamClaimScript uses explicit ids with claims whose replies do not
// depend on time: FORCE, JUSTID, RETRYCOUNT, deleted entries.
var streamClaimScript = []string{
	"XADD c 1-1 a 1", "XADD c 2-1 a 2", "XADD c 3-1 a 3", "XADD c 4-1 a 4", "XGROUP CREATE c g 0",
	"XREADGROUP GROUP g x COUNT 3 STREAMS c >", "XCLAIM c g y 0 1-1 2-1 JUSTID", "XPENDING c g", "XCLAIM c g y 0 3-1",
	"XCLAIM c g y 0 9-9 FORCE", "XCLAIM c g y 0 4-1 FORCE RETRYCOUNT 7 JUSTID", "XPENDING c g", "XDEL c 2-1",
	"XCLAIM c g z 0 2-1 3-1 JUSTID", "XPENDING c g", "XDEL c 1-1", "XAUTOCLAIM c g z 0 0 COUNT 1 JUSTID",
	"XAUTOCLAIM c g z 0 0 COUNT 1 JUSTID", "XAUTOCLAIM c g z 0 0 JUSTID", "XAUTOCLAIM c g z 0 (3-1 JUSTID", "XPENDING c g",
	"XREADGROUP GROUP g z STREAMS c 0", "XADD c 5-1 a 5", "XREADGROUP GROUP g z STREAMS c >", "XDEL c 5-1",
	"XREADGROUP GROUP g z STREAMS c 0", "XREADGROUP GROUP g z COUNT 1 STREAMS c 4-1", "XINFO GROUPS c",
	"XGROUP SETID c g 0", "XREADGROUP GROUP g x STREAMS c >", "XPENDING c g", "XINFO GROUPS c", "XACK c g 3-1 4-1 3-1",
	"XPENDING c g", "XGROUP DELCONSUMER c g x", "XPENDING c g", "XINFO GROUPS c", "XGROUP CREATE c h $", "XINFO GROUPS c",
	"XADD c 6-1 a 6", "XDEL c 3-1", "XINFO GROUPS c", "XREADGROUP GROUP h w STREAMS c >", "XINFO GROUPS c", "XINFO STREAM c",
	"XADD c 7-1 a 7", "XINFO GROUPS c", "XREADGROUP GROUP h w NOACK STREAMS c >", "XINFO GROUPS c", "XPENDING c h",
	"XGROUP SETID c h 0 ENTRIESREAD 0", "XINFO GROUPS c", "XREADGROUP GROUP h w NOACK STREAMS c >", "XINFO GROUPS c",
	"XSETID c 7-1 ENTRIESADDED 20", "XINFO GROUPS c", "XREADGROUP GROUP g x COUNT 1 STREAMS c 0", "XACK c g 4-1",
	"XREADGROUP GROUP g x STREAMS c 0", "XREADGROUP GROUP g x STREAMS c (0", "XINFO STREAM c",
}

// streamRandomScript is a seeded random script of stream writes over a
// few keys with explicit ids, each write followed by XINFO STREAM of its
// key (the node layout and the counters compared).
func streamRandomScript(seed uint64, n int) []string {
	r := rand.New(rand.NewPCG(seed, 0))
	keys := []string{"r0", "r1", "r2"}
	next := map[string]int{}
	var out []string
	for len(out) < n {
		k := keys[r.IntN(len(keys))]
		switch r.IntN(10) {
		case 0, 1, 2, 3, 4:
			next[k] += 1 + r.IntN(3)
			f := strings.Repeat("x", r.IntN(3)*r.IntN(300))
			trim := ""
			switch r.IntN(6) {
			case 0:
				trim = fmt.Sprintf("MAXLEN ~ %d ", r.IntN(200))
			case 1:
				trim = fmt.Sprintf("MINID ~ %d ", next[k]-r.IntN(300))
			case 2:
				trim = fmt.Sprintf("MAXLEN %d ", 50+r.IntN(200))
			}
			out = append(out, fmt.Sprintf("XADD %s %s%d-%d f %d g%d %s", k, trim, next[k], r.IntN(2), r.IntN(1000), r.IntN(3), f+"v"))
		case 5, 6:
			var ids []string
			for range 1 + r.IntN(5) {
				ids = append(ids, fmt.Sprintf("%d-%d", r.IntN(next[k]+1), r.IntN(2)))
			}
			out = append(out, "XDEL "+k+" "+strings.Join(ids, " "), "XINFO STREAM "+k)
		case 7:
			l := fmt.Sprintf("XTRIM %s MAXLEN ~ %d", k, r.IntN(300))
			if r.IntN(2) == 0 {
				l = fmt.Sprintf("XTRIM %s MINID ~ %d LIMIT %d", k, next[k]-r.IntN(300), r.IntN(300))
			}
			out = append(out, l, "XINFO STREAM "+k)
		case 8:
			out = append(out, fmt.Sprintf("XRANGE %s %d + COUNT %d", k, r.IntN(next[k]+1), r.IntN(5)))
		default:
			out = append(out, "XINFO STREAM "+k, "XLEN "+k)
		}
	}
	return out
}

func TestStreamsAgainstRedis(t *testing.T) {
	conn, rd := startRedis(t)
	var script []string
	script = append(script, streamScript...)
	script = append(script, streamNodeScript()...)
	script = append(script, streamClaimScript...)
	script = append(script, streamTimedScript...)
	script = append(script, streamRandomScript(1, 1500)...)
	againstRedis(t, conn, rd, func(t *testing.T, engine string, proto int) {
		_, x := openDiffEngine(t, engine)
		mine, theirs := map[string]string{}, map[string]string{}
		fails := 0
		for _, l := range script {
			timed := strings.HasPrefix(l, "~")
			l = strings.TrimPrefix(l, "~")
			want := redisLine(t, conn, rd, l)
			got, _ := x.Exec(0, proto, false, toArgs(splitLine(l)), nil)
			g, w := string(got), want
			if timed {
				g, w = streamNormalise(t, g, mine), streamNormalise(t, want, theirs)
			}
			if g != w {
				t.Errorf("%s\n  got: %q\nredis: %q", l, g, w)
				if fails++; fails == 20 {
					t.Fatal("too many differences")
				}
			}
		}
	})
	t.Logf("%d command lines per engine and protocol", len(script))
}

var streamIDRe = regexp.MustCompile(`^\d+-\d+$`)

// streamNormalise parses a reply and prints it with the ids renamed in
// order of first appearance (ids: this side's names, kept across lines)
// and the times replaced by markers once checked to be plausible: an
// integer within a minute of now (a unix ms time) is TIME; the value of
// "idle" and the third element of a pending entry [id, consumer, idle,
// count] are IDLE when between 0 and a minute.
func streamNormalise(t *testing.T, raw string, ids map[string]string) string {
	t.Helper()
	v, rest, err := streamParse(raw)
	if err != nil || rest != "" {
		t.Fatalf("unparsable reply %q: %v", raw, err)
	}
	now := time.Now().UnixMilli()
	var walk func(v *streamVal)
	walk = func(v *streamVal) {
		switch v.kind {
		case '$', '+':
			if streamIDRe.MatchString(v.s) {
				if _, ok := ids[v.s]; !ok {
					ids[v.s] = fmt.Sprintf("ID%d", len(ids))
				}
				v.s = ids[v.s]
			}
		case ':':
			if n, _ := strconv.ParseInt(v.s, 10, 64); n > now-60000 && n < now+60000 {
				v.s = "TIME"
			}
		}
		for i := range v.kids {
			k := &v.kids[i]
			if i > 0 && v.kids[i-1].kind == '$' && v.kids[i-1].s == "idle" && k.kind == ':' {
				if n, _ := strconv.ParseInt(k.s, 10, 64); n >= 0 && n < 60000 {
					k.s = "IDLE"
				}
			}
		}
		if len(v.kids) == 4 && v.kids[0].kind == '$' && streamIDRe.MatchString(v.kids[0].s) && v.kids[1].kind == '$' && v.kids[2].kind == ':' {
			if n, _ := strconv.ParseInt(v.kids[2].s, 10, 64); n >= 0 && n < 60000 {
				v.kids[2].s = "IDLE"
			}
		}
		for i := range v.kids {
			walk(&v.kids[i])
		}
	}
	walk(&v)
	return v.String()
}

type streamVal struct {
	kind byte
	s    string
	kids []streamVal
}

func (v streamVal) String() string {
	if v.kids == nil {
		return string(v.kind) + v.s
	}
	var b strings.Builder
	b.WriteString(string(v.kind) + v.s + "[")
	for i, k := range v.kids {
		if i > 0 {
			b.WriteString(" ")
		}
		b.WriteString(k.String())
	}
	b.WriteString("]")
	return b.String()
}

// streamParse parses one RESP2/RESP3 reply.
func streamParse(s string) (streamVal, string, error) {
	i := strings.Index(s, "\r\n")
	if i < 1 {
		return streamVal{}, s, fmt.Errorf("no line")
	}
	kind, body, rest := s[0], s[1:i], s[i+2:]
	switch kind {
	case '$', '=', '!':
		n, err := strconv.Atoi(body)
		if err != nil {
			return streamVal{}, s, err
		}
		if n < 0 {
			return streamVal{kind: kind, s: "-1"}, rest, nil
		}
		return streamVal{kind: '$', s: rest[:n]}, rest[n+2:], nil
	case '*', '%', '~':
		n, err := strconv.Atoi(body)
		if err != nil {
			return streamVal{}, s, err
		}
		if n < 0 {
			return streamVal{kind: kind, s: "-1"}, rest, nil
		}
		v := streamVal{kind: kind, s: strconv.Itoa(n), kids: []streamVal{}}
		if kind == '%' {
			n *= 2
		}
		for range n {
			var k streamVal
			if k, rest, err = streamParse(rest); err != nil {
				return v, rest, err
			}
			v.kids = append(v.kids, k)
		}
		return v, rest, nil
	case '_':
		return streamVal{kind: '_'}, rest, nil
	}
	return streamVal{kind: kind, s: body}, rest, nil
}

// streamDumpSetup builds the same streams on both servers: "plain" (two
// nodes, groups, consumers, pending entries) and "holed" (deletions and
// trims, so Redis's listpacks hold tombstones).
var streamDumpSetup = func() []string {
	var out []string
	for i := 1; i <= 130; i++ {
		f := "f"
		if i%9 == 0 {
			f = "other"
		}
		out = append(out, fmt.Sprintf("XADD plain %d-%d %s %d g y%s", i, i%4, f, i*7, strings.Repeat("x", i%30)))
		out = append(out, fmt.Sprintf("XADD holed %d-1 f %d", i, i))
	}
	out = append(out, "XGROUP CREATE plain g1 0", "XGROUP CREATE plain g2 50 ENTRIESREAD 40", "XGROUP CREATE plain g3 $",
		"XREADGROUP GROUP g1 alice COUNT 7 STREAMS plain >", "XREADGROUP GROUP g1 bob COUNT 3 STREAMS plain >",
		"XREADGROUP GROUP g2 carol NOACK COUNT 2 STREAMS plain >", "XGROUP CREATECONSUMER plain g3 idle",
		"XACK plain g1 2-2", "XDEL holed 5-1 6-1 7-1 120-1", "XTRIM holed MINID 20", "XTRIM holed MAXLEN ~ 50",
		"XGROUP CREATE holed g 0", "XREADGROUP GROUP g c COUNT 3 STREAMS holed >", "XADD empty 1-1 f v", "XDEL empty 1-1",
		"XGROUP CREATE empty g $", "XGROUP CREATE mk g $ MKSTREAM")
	return out
}()

// TestStreamDumpRestoreWithRedis: a stream DUMPed by redis-server 7.0
// RESTOREs here to the same stream, and one DUMPed here RESTOREs into
// redis-server to the same stream (XINFO STREAM FULL, which has every
// entry, counter, group, pending entry, delivery and seen time, compared
// byte for byte; a payload's node layout is kept here, while a DUMP
// made here packs the live entries afresh, so for a stream whose
// listpacks hold tombstones the node counts of that direction only are
// normalised).
func TestStreamDumpRestoreWithRedis(t *testing.T) {
	conn, rd := startRedis(t)
	redisLine(t, conn, rd, "FLUSHALL")
	redisLine(t, conn, rd, "HELLO 2")
	for _, engine := range []string{rdb.Name, ldb.Name} {
		t.Run(engine, func(t *testing.T) {
			redisLine(t, conn, rd, "FLUSHALL")
			eng, err := engines.Open(engine, engines.Options{Dir: t.TempDir(), Sync: engines.SyncNone, SweepInterval: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			defer eng.Close()
			x := New(eng, Options{Buckets: 1, MaxValueSize: 512 << 20})
			tair := func(args ...[]byte) string {
				out, _ := x.Exec(0, 2, false, args, nil)
				return string(out)
			}
			redis := func(args ...[]byte) string { return redisDo(t, conn, rd, args) }
			for _, l := range streamDumpSetup {
				if g, w := tair(toArgs(splitLine(l))...), redis(toArgs(splitLine(l))...); strings.HasPrefix(g, "-") || g != w && !strings.HasPrefix(l, "XREADGROUP") {
					t.Fatalf("setup %s: %q, redis %q", l, g, w)
				}
			}
			payload := func(reply string) []byte {
				i := strings.Index(reply, "\r\n")
				if reply[0] != '$' || i < 0 {
					t.Fatalf("DUMP: %q", reply)
				}
				return []byte(reply[i+2 : len(reply)-2])
			}
			norm := regexp.MustCompile(`radix-tree-(keys|nodes)\r\n:\d+`)
			full := func(do func(...[]byte) string, key string, holed bool) string {
				r := do([]byte("XINFO"), []byte("STREAM"), []byte(key), []byte("FULL"), []byte("COUNT"), []byte("0"))
				if holed {
					r = norm.ReplaceAllString(r, "radix-tree-$1")
				}
				return r
			}
			for _, key := range []string{"plain", "holed", "empty", "mk"} {
				holed := key == "holed"
				// Redis's payload restored here
				p := payload(redis([]byte("DUMP"), []byte(key)))
				if r := tair([]byte("RESTORE"), []byte("from-redis-"+key), []byte("0"), p); r != "+OK\r\n" {
					t.Fatalf("RESTORE of redis-server's %s: %q", key, r)
				}
				if r := redis([]byte("RESTORE"), []byte("from-redis-"+key), []byte("0"), p); r != "+OK\r\n" {
					t.Fatalf("redis-server's RESTORE of its %s: %q", key, r)
				}
				if g, w := full(tair, "from-redis-"+key, false), full(redis, key, false); g != w {
					t.Errorf("%s restored from redis-server's DUMP:\n  got: %q\nredis: %q", key, g, w)
				}
				// this payload restored into redis-server
				p = payload(tair([]byte("DUMP"), []byte(key)))
				if r := redis([]byte("RESTORE"), []byte("from-tair-"+key), []byte("0"), p); r != "+OK\r\n" {
					t.Fatalf("redis-server's RESTORE of the DUMP of %s: %q", key, r)
				}
				if g, w := full(tair, key, holed), full(redis, "from-tair-"+key, holed); g != w {
					t.Errorf("%s restored into redis-server:\n  got: %q\nredis: %q", key, g, w)
				}
				// and both go on alike from the restored stream
				k := "from-redis-" + key
				for _, l := range []string{"XADD %s 500-1 a b", "XREADGROUP GROUP g1 dave STREAMS %s >", "XREADGROUP GROUP g alice STREAMS %s 0",
					"XINFO GROUPS %s", "XLEN %s", "XDEL %s 1-1 500-1", "XTRIM %s MAXLEN ~ 10"} {
					l = fmt.Sprintf(l, k)
					if g, w := tair(toArgs(splitLine(l))...), redis(toArgs(splitLine(l))...); g != w {
						t.Errorf("%s after RESTORE: %q, redis %q", l, g, w)
					}
				}
				// (the deliveries' times are the two servers' clocks)
				if g, w := streamNormalise(t, full(tair, k, false), map[string]string{}), streamNormalise(t, full(redis, k, false), map[string]string{}); g != w {
					t.Errorf("%s after RESTORE and writes:\n  got: %q\nredis: %q", k, g, w)
				}
			}
			if r := tair([]byte("RESTORE"), []byte("bad"), []byte("0"), []byte("\x13\x01\x10garbage\x0a\x00\x00\x00\x00\x00\x00\x00\x00\x00")); r != "-ERR DUMP payload version or checksum are wrong\r\n" {
				t.Errorf("RESTORE of garbage: %q", r)
			}
		})
	}
}

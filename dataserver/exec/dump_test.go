package exec

// DUMP and RESTORE against a real redis-server 7.0: values DUMPed there
// RESTORE here on every engine and read back the same, values DUMPed
// here RESTORE there and read back the same, the options' and errors'
// replies are Redis's byte for byte, slaves replaying what RESTORE
// propagates end equal, and a crafted payload never panics (FuzzRestore).

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tairkv/tair/engines"
	"github.com/tairkv/tair/engines/rdb"
	"github.com/tairkv/tair/internal/rdbcodec"
)

// dumpSetup builds a value of every type and encoding Redis 7.0 has:
// compact (listpack, intset, int strings) and not (quicklists of several
// nodes, hash tables, skiplists, LZF-compressed strings and nodes).
func dumpSetup() (lines [][]string, keys []string) {
	add := func(key string, args ...string) {
		lines = append(lines, args)
		keys = append(keys, key)
	}
	add("s:small", "SET", "s:small", "hello")
	add("s:int", "SET", "s:int", "12345")
	add("s:neg", "SET", "s:neg", "-100")
	add("s:i32", "SET", "s:i32", "-2147483648")
	add("s:i64", "SET", "s:i64", "9223372036854775807")
	add("s:zero", "SET", "s:zero", "007")
	add("s:empty", "SET", "s:empty", "")
	add("s:lzf", "SET", "s:lzf", strings.Repeat("abcdefgh", 500))
	add("s:bin", "SET", "s:bin", "\x00\xff\r\n binary \x01\x02 value that is longer than twenty bytes")
	var rnd []byte
	x := uint32(7)
	for i := 0; i < 3000; i++ {
		x = x*1103515245 + 12345
		rnd = append(rnd, byte(x>>16))
	}
	add("s:rand", "SET", "s:rand", string(rnd))
	add("l:small", "RPUSH", "l:small", "a", "1", "-5", "", "x y", "300000", "9223372036854775807")
	big := []string{"RPUSH", "l:big"}
	for i := 0; i < 3000; i++ {
		if i%3 == 0 {
			big = append(big, strconv.Itoa(i*i-4000))
		} else {
			big = append(big, fmt.Sprintf("element-%d-%s", i, strings.Repeat("z", i%70)))
		}
	}
	add("l:big", big...)
	add("l:huge", "RPUSH", "l:huge", strings.Repeat("H", 20000), "b", strings.Repeat("q", 9000))
	add("st:int", "SADD", "st:int", "1", "2", "-3", "70000", "-2147483649")
	add("st:str", "SADD", "st:str", "a", "b", "1", "")
	ints := []string{"SADD", "st:bigint"}
	strs := []string{"SADD", "st:bigstr"}
	for i := 0; i < 600; i++ {
		ints = append(ints, strconv.Itoa(i*37-1000))
		strs = append(strs, "m"+strconv.Itoa(i))
	}
	add("st:bigint", ints...)
	add("st:bigstr", strs...)
	add("z:small", "ZADD", "z:small", "1", "a", "2.5", "b", "-inf", "c", "+inf", "d", "0", "e", "-3", "f", "1e300", "g")
	zb := []string{"ZADD", "z:big"}
	for i := 0; i < 200; i++ {
		zb = append(zb, strconv.FormatFloat(float64(i)/7-10, 'g', -1, 64), "member"+strconv.Itoa(i))
	}
	add("z:big", zb...)
	add("z:long", "ZADD", "z:long", "1", strings.Repeat("m", 100), "2", "x")
	add("h:small", "HSET", "h:small", "f", "v", "n", "1", "e", "", "neg", "-7")
	hb := []string{"HSET", "h:big"}
	for i := 0; i < 200; i++ {
		hb = append(hb, "field"+strconv.Itoa(i), strings.Repeat("v", i%90))
	}
	add("h:big", hb...)
	add("h:long", "HSET", "h:long", "f", strings.Repeat("L", 100))
	return lines, keys
}

// dumpReads are the read commands that show key's content, in an order
// that does not depend on the encoding.
func dumpReads(key string) [][]string {
	switch key[:strings.IndexByte(key, ':')] {
	case "s":
		return [][]string{{"GET", key}, {"TYPE", key}}
	case "l":
		return [][]string{{"LRANGE", key, "0", "-1"}, {"TYPE", key}}
	case "st":
		return [][]string{{"SORT", key, "ALPHA"}, {"SCARD", key}, {"TYPE", key}}
	case "z":
		return [][]string{{"ZCARD", key}, {"TYPE", key}}
	default:
		return [][]string{{"HLEN", key}, {"TYPE", key}}
	}
}

// hashAll is key's HGETALL as sorted "field=value" lines.
func hashAll(t *testing.T, raw string) string {
	t.Helper()
	items := parseFlatArray(t, raw)
	var kv []string
	for i := 0; i+1 < len(items); i += 2 {
		kv = append(kv, items[i]+"="+items[i+1])
	}
	sort.Strings(kv)
	return strings.Join(kv, "\n")
}

// parseFlatArray parses a RESP2 array of bulk strings.
func parseFlatArray(t *testing.T, raw string) []string {
	t.Helper()
	r := bufio.NewReader(strings.NewReader(raw))
	line, _ := r.ReadString('\n')
	if len(line) < 3 || line[0] != '*' {
		t.Fatalf("not an array: %q", raw)
	}
	n, _ := strconv.Atoi(line[1 : len(line)-2])
	out := make([]string, 0, n)
	for i := 0; i < n; i++ {
		out = append(out, parseBulk(t, r))
	}
	return out
}

func parseBulk(t *testing.T, r *bufio.Reader) string {
	t.Helper()
	line, _ := r.ReadString('\n')
	if len(line) < 3 || line[0] != '$' {
		t.Fatalf("not a bulk: %q", line)
	}
	n, _ := strconv.Atoi(line[1 : len(line)-2])
	buf := make([]byte, n+2)
	if _, err := io_ReadFull(r, buf); err != nil {
		t.Fatal(err)
	}
	return string(buf[:n])
}

func io_ReadFull(r *bufio.Reader, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := r.Read(buf[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// bulkOf is the content of a raw bulk reply.
func bulkOf(t *testing.T, raw string) []byte {
	t.Helper()
	return []byte(parseBulk(t, bufio.NewReader(strings.NewReader(raw))))
}

func execRaw(x *Executor, args ...string) string {
	out, _ := x.Exec(0, 2, false, toArgs(args), nil)
	return string(out)
}

// compareContent fails unless key reads the same here and on Redis.
func compareContent(t *testing.T, conn net.Conn, rd *bufio.Reader, x *Executor, key, redisKey string) {
	t.Helper()
	for _, r := range dumpReads(key) {
		mine := execRaw(x, r...)
		rr := append([]string(nil), r...)
		rr[1] = redisKey
		theirs := redisDo(t, conn, rd, toArgs(rr))
		if mine != theirs {
			t.Errorf("%s %s: here %.300q, redis %.300q", r[0], key, mine, theirs)
		}
	}
	if strings.HasPrefix(key, "z:") {
		// Scores compared as numbers: Redis 7.0 replies them with %.17g
		// (1.0000000000000001e+300), ZRANGE here with the shortest form.
		mine := parseFlatArray(t, execRaw(x, "ZRANGE", key, "0", "-1", "WITHSCORES"))
		theirs := parseFlatArray(t, redisDo(t, conn, rd, toArgs([]string{"ZRANGE", redisKey, "0", "-1", "WITHSCORES"})))
		if len(mine) != len(theirs) {
			t.Fatalf("ZRANGE %s: %d items here, %d on redis", key, len(mine), len(theirs))
		}
		for i := range mine {
			a, _ := strconv.ParseFloat(mine[i], 64)
			b, _ := strconv.ParseFloat(theirs[i], 64)
			if i%2 == 0 && mine[i] != theirs[i] || i%2 == 1 && a != b {
				t.Errorf("ZRANGE %s item %d: here %q, redis %q", key, i, mine[i], theirs[i])
			}
		}
	}
	if strings.HasPrefix(key, "h:") {
		mine := hashAll(t, execRaw(x, "HGETALL", key))
		theirs := hashAll(t, redisDo(t, conn, rd, toArgs([]string{"HGETALL", redisKey})))
		if mine != theirs {
			t.Errorf("HGETALL %s differs:\nhere  %.300q\nredis %.300q", key, mine, theirs)
		}
	}
}

// TestDumpFromRedis: every value DUMPed by redis-server RESTOREs here,
// on every engine, with the same content.
func TestDumpFromRedis(t *testing.T) {
	conn, rd := startRedis(t)
	redisDo(t, conn, rd, toArgs([]string{"HELLO", "2"}))
	redisDo(t, conn, rd, toArgs([]string{"FLUSHALL"}))
	lines, keys := dumpSetup()
	for _, l := range lines {
		if r := redisDo(t, conn, rd, toArgs(l)); r[0] == '-' {
			t.Fatalf("%s: %q", l[0], r)
		}
	}
	payloads := map[string][]byte{}
	for _, k := range keys {
		enc := redisDo(t, conn, rd, toArgs([]string{"OBJECT", "ENCODING", k}))
		payloads[k] = bulkOf(t, redisDo(t, conn, rd, toArgs([]string{"DUMP", k})))
		t.Logf("%s: redis encoding %s, payload type %d, %d bytes", k, strings.TrimSpace(enc), payloads[k][0], len(payloads[k]))
	}
	for _, name := range allEngines {
		t.Run(name, func(t *testing.T) {
			_, x := openDiffEngine(t, name)
			for _, k := range keys {
				if r := execRaw(x, "RESTORE", k, "0", string(payloads[k])); r != "+OK\r\n" {
					t.Fatalf("RESTORE %s: %q", k, r)
				}
				compareContent(t, conn, rd, x, k, k)
				// with a TTL, and over the value with REPLACE
				if r := execRaw(x, "RESTORE", k, "100000", string(payloads[k]), "REPLACE"); r != "+OK\r\n" {
					t.Fatalf("RESTORE %s REPLACE: %q", k, r)
				}
				if r := execRaw(x, "TTL", k); r != ":100\r\n" {
					t.Errorf("TTL %s after RESTORE 100000: %q", k, r)
				}
				compareContent(t, conn, rd, x, k, k)
			}
		})
	}
}

// TestDumpToRedis: every value built here and DUMPed RESTOREs into
// redis-server with the same content (and RESTOREs here again).
func TestDumpToRedis(t *testing.T) {
	conn, rd := startRedis(t)
	redisDo(t, conn, rd, toArgs([]string{"HELLO", "2"}))
	lines, keys := dumpSetup()
	for _, name := range allEngines {
		t.Run(name, func(t *testing.T) {
			redisDo(t, conn, rd, toArgs([]string{"FLUSHALL"}))
			_, x := openDiffEngine(t, name)
			for _, l := range lines {
				if r := execRaw(x, l...); r[0] == '-' {
					t.Fatalf("%s: %q", l[0], r)
				}
			}
			for _, k := range keys {
				p := bulkOf(t, execRaw(x, "DUMP", k))
				if r := redisDo(t, conn, rd, toArgs([]string{"RESTORE", k, "0", string(p)})); r != "+OK\r\n" {
					t.Fatalf("redis RESTORE %s: %q (payload %q)", k, r, p)
				}
				compareContent(t, conn, rd, x, k, k)
				// and back: Redis's DUMP of what it restored
				back := bulkOf(t, redisDo(t, conn, rd, toArgs([]string{"DUMP", k})))
				if r := execRaw(x, "RESTORE", k, "0", string(back), "REPLACE"); r != "+OK\r\n" {
					t.Fatalf("RESTORE %s from redis: %q", k, r)
				}
				compareContent(t, conn, rd, x, k, k)
			}
		})
	}
}

// setFooter returns body with a footer of RDB version ver and a valid
// checksum.
func setFooter(body []byte, ver uint16) []byte {
	p := binary.LittleEndian.AppendUint16(bytes.Clone(body), ver)
	return binary.LittleEndian.AppendUint64(p, rdbcodec.CRC64(0, p))
}

// restorePayloads are the payloads the differential lines name as @name.
func restorePayloads(t *testing.T, conn net.Conn, rd *bufio.Reader) map[string][]byte {
	redisDo(t, conn, rd, toArgs([]string{"FLUSHALL"}))
	for _, l := range [][]string{
		{"SET", "ps", "hello"}, {"RPUSH", "pl", "a", "b", "1"}, {"SADD", "pset", "x", "y"},
		{"ZADD", "pz", "1", "a", "2", "b"}, {"HSET", "ph", "f", "v"},
	} {
		redisDo(t, conn, rd, toArgs(l))
	}
	p := map[string][]byte{}
	for _, k := range []string{"ps", "pl", "pset", "pz", "ph"} {
		p[k] = bulkOf(t, redisDo(t, conn, rd, toArgs([]string{"DUMP", k})))
	}
	redisDo(t, conn, rd, toArgs([]string{"FLUSHALL"}))
	str := p["ps"]
	body := str[:len(str)-10]
	bad := bytes.Clone(str)
	bad[len(bad)-1] ^= 1
	p["badcrc"] = bad
	p["v11"] = setFooter(body, 11)
	p["v9"] = setFooter(body, 9)
	p["v0"] = setFooter(body, 0)
	p["v65535"] = setFooter(body, 65535)
	p["short"] = []byte("abc")
	p["nine"] = str[1:]
	p["empty"] = nil
	p["stream"] = setFooter([]byte{15, 0}, 10)
	p["module"] = setFooter([]byte{7, 1, 2, 3}, 10)
	p["function"] = setFooter([]byte{246, 1, 2, 3}, 10)
	p["unknowntype"] = setFooter([]byte{8, 1, 'a'}, 10)
	p["trunc"] = setFooter([]byte{0, 50, 'a'}, 10)
	p["emptylist"] = setFooter([]byte{1, 0}, 10)
	p["emptyset"] = setFooter([]byte{2, 0}, 10)
	p["dupset"] = setFooter([]byte{2, 2, 1, 'a', 1, 'a'}, 10)
	p["duphash"] = setFooter([]byte{4, 2, 1, 'a', 1, 'b', 1, 'a', 1, 'c'}, 10)
	p["dupzset"] = setFooter([]byte{5, 2, 1, 'a', 0, 0, 0, 0, 0, 0, 0, 0, 1, 'a', 0, 0, 0, 0, 0, 0, 0, 0}, 10)
	p["nanzset"] = setFooter([]byte{5, 1, 1, 'a', 0, 0, 0, 0, 0, 0, 0xf8, 0x7f}, 10)
	p["oldzset"] = setFooter([]byte{3, 2, 1, 'a', 3, '1', '.', '5', 1, 'b', 254}, 10)
	p["oldlist"] = setFooter([]byte{1, 2, 1, 'a', 0xc0, 5}, 10)
	p["intstr"] = setFooter([]byte{0, 0xc1, 0x39, 0x30}, 10)
	p["int32str"] = setFooter([]byte{0, 0xc2, 0, 0, 0, 0x80}, 10)
	p["badenc"] = setFooter([]byte{0, 0xc4, 1}, 10)
	p["badlen"] = setFooter([]byte{0, 0x82, 1}, 10)
	// LZF: "aaaaaaaaaaaaaaaaaaaaaaaaa" (25 bytes): literal 'a', back
	// reference of 24 at distance 1
	p["lzf"] = setFooter([]byte{0, 0xc3, 4, 25, 0, 'a', 7 << 5, 24 - 9, 0}, 10)
	p["badlzf"] = setFooter([]byte{0, 0xc3, 4, 26, 0, 'a', 7 << 5, 24 - 9, 0}, 10)
	p["intset"] = setFooter([]byte{11, 12, 2, 0, 0, 0, 2, 0, 0, 0, 1, 0, 2, 0}, 10)
	p["badintset"] = setFooter([]byte{11, 12, 3, 0, 0, 0, 2, 0, 0, 0, 1, 0, 2, 0}, 10)
	p["emptyintset"] = setFooter([]byte{11, 8, 2, 0, 0, 0, 0, 0, 0, 0}, 10)
	p["qlbadcontainer"] = setFooter([]byte{18, 1, 3, 1, 'a'}, 10)
	return p
}

// restoreScript: @name stands for a payload of restorePayloads.
var restoreScript = []string{
	"RESTORE k 0 @ps", "GET k", "TYPE k", "TTL k", "RESTORE k 0 @ps", "RESTORE k 0 @pl", "GET k",
	"RESTORE k 0 @pl REPLACE", "LRANGE k 0 -1", "RESTORE k 0 @ps replace", "GET k",
	"RESTORE k 100000 @ps REPLACE", "TTL k", "RESTORE k 4102444800000 @ps REPLACE ABSTTL", "PEXPIRETIME k",
	"RESTORE k 1 @ps REPLACE ABSTTL", "EXISTS k", "RESTORE k 1 @ps ABSTTL", "EXISTS k",
	"RESTORE k 9223372036854775807 @ps", "EXISTS k", "RESTORE k 9223372036854775807 @ps ABSTTL", "PEXPIRETIME k",
	"RESTORE k 0 @ps REPLACE", "RESTORE k abc @ps", "RESTORE k2 abc @ps", "RESTORE k2 -1 @ps", "RESTORE k -1 @ps REPLACE",
	"RESTORE k2 -9223372036854775808 @ps", "RESTORE k2 1.5 @ps", "RESTORE k2 0 @ps FOO", "RESTORE k 0 @ps FOO",
	"RESTORE k2 0 @ps REPLACE REPLACE ABSTTL ABSTTL", "GET k2",
	"RESTORE k3 0 @ps IDLETIME 10", "RESTORE k4 0 @ps FREQ 10", "RESTORE k5 0 @ps IDLETIME -1", "RESTORE k5 0 @ps IDLETIME x",
	"RESTORE k5 0 @ps FREQ 256", "RESTORE k5 0 @ps FREQ -1", "RESTORE k5 0 @ps FREQ x", "RESTORE k5 0 @ps FREQ 1 IDLETIME 1",
	"RESTORE k5 0 @ps IDLETIME 1 FREQ 1", "RESTORE k5 0 @ps IDLETIME", "RESTORE k5 0 @ps FREQ", "RESTORE k5 0 @ps idletime 0 freq",
	"RESTORE k5 0 @ps IDLETIME 9223372036854775807", "RESTORE k6 0 @ps FREQ 255 REPLACE", "EXISTS k3 k4 k5 k6",
	"RESTORE k 0 @badcrc", "RESTORE k7 0 @badcrc", "RESTORE k7 0 @v11", "RESTORE k7 0 @v65535", "RESTORE k7 0 @v9", "GET k7",
	"RESTORE k8 0 @v0", "GET k8", "RESTORE k9 0 @short", "RESTORE k9 0 @nine", "RESTORE k9 0 @empty", "RESTORE k9 0 @stream",
	"RESTORE k9 0 @module", "RESTORE k9 0 @function", "RESTORE k9 0 @unknowntype", "RESTORE k9 0 @trunc",
	"RESTORE k9 0 @emptylist", "RESTORE k9 0 @emptyset", "RESTORE k9 0 @dupset",
	"RESTORE k9 0 @dupzset", "RESTORE k9 0 @nanzset", "RESTORE k9 0 @badenc", "RESTORE k9 0 @badlen", "RESTORE k9 0 @badlzf",
	"RESTORE k9 0 @badintset", "RESTORE k9 0 @emptyintset", "RESTORE k9 0 @qlbadcontainer", "EXISTS k9",
	"RESTORE z1 0 @oldzset", "ZRANGE z1 0 -1 WITHSCORES", "RESTORE l1 0 @oldlist", "LRANGE l1 0 -1",
	"RESTORE s1 0 @intstr", "GET s1", "RESTORE s2 0 @int32str", "GET s2", "RESTORE s3 0 @lzf", "GET s3",
	"RESTORE s4 0 @intset", "SORT s4", "RESTORE set 0 @pset", "SORT set ALPHA", "RESTORE z 0 @pz", "ZRANGE z 0 -1 WITHSCORES",
	"RESTORE h 0 @ph", "HGETALL h", "RESTORE h 0 @pz REPLACE", "TYPE h", "ZSCORE h b", "RESTORE set 0 @ph REPLACE", "HGET set f",
	"RESTORE set 100000 @pl REPLACE", "TTL set", "RESTORE h 1 @pl REPLACE ABSTTL", "EXISTS h",
	"SET dk hello", "DUMP dk", "SET dk 123", "DUMP dk", "SET dk -2147483648", "DUMP dk", "SET dk 2147483648", "DUMP dk",
	"SET dk ''", "DUMP dk", "SET dk 007", "DUMP dk", "DUMP nokey", "DUMP", "DUMP a b", "RESTORE", "RESTORE k", "RESTORE k 0",
	"RESTORE nokey", "SET dk 0123456789abcdefghij", "DUMP dk",
}

func restoreLine(t *testing.T, l string, p map[string][]byte) [][]byte {
	args := toArgs(splitLine(l))
	for i, a := range args {
		if len(a) > 1 && a[0] == '@' {
			v, ok := p[string(a[1:])]
			if !ok {
				t.Fatalf("no payload %s", a)
			}
			args[i] = v
		}
	}
	return args
}

// TestRestoreAgainstRedis: RESTORE's options, errors and TTLs and DUMP's
// small strings are Redis's replies byte for byte, on every engine, in
// RESP2 and RESP3.
func TestRestoreAgainstRedis(t *testing.T) {
	conn, rd := startRedis(t)
	p := restorePayloads(t, conn, rd)
	for _, name := range allEngines {
		for _, proto := range []int{2, 3} {
			t.Run(fmt.Sprintf("%s/RESP%d", name, proto), func(t *testing.T) {
				redisDo(t, conn, rd, toArgs([]string{"FLUSHALL"}))
				redisDo(t, conn, rd, toArgs([]string{"HELLO", strconv.Itoa(proto)}))
				_, x := openDiffEngine(t, name)
				for _, l := range restoreScript {
					sameAsRedis(t, conn, rd, x, proto, l, restoreLine(t, l, p))
				}
			})
		}
	}
	t.Logf("%d command lines per engine and protocol", len(restoreScript))
}

// TestRestoreRefusesDuplicates: a small hash with a field twice is
// accepted by Redis 7.0 (without sanitize-dump-payload it checks for
// duplicates only in hashes it builds as tables) and kept corrupt; a hash
// here cannot hold it, so the payload is refused as bad data, like the
// duplicate set members and zset members Redis refuses.
func TestRestoreRefusesDuplicates(t *testing.T) {
	onEngines(t, func(t *testing.T, engine string) {
		h := newHarnessOn(t, engine)
		dup := setFooter([]byte{4, 2, 1, 'a', 1, 'b', 1, 'a', 1, 'c'}, 10)
		if r := h.do("RESTORE", "k", "0", string(dup)); r != "-ERR Bad data format\r\n" {
			t.Fatalf("%q", r)
		}
		if r := h.do("EXISTS", "k"); r != ":0\r\n" {
			t.Fatalf("%q", r)
		}
	})
}

// TestRestoreTooLarge: a string over the value limit (decompressed or
// not) is refused with the limit's error before it is built.
func TestRestoreTooLarge(t *testing.T) {
	h := newHarness(t)
	h.x.opts.MaxValueSize = 100
	big := rdbcodec.Encode(rdbcodec.Value{Kind: rdbcodec.String, Str: bytes.Repeat([]byte("x"), 101)})
	if r := h.do("RESTORE", "k", "0", string(big)); r[0] != '-' {
		t.Fatalf("%q", r)
	}
	// LZF: 1 literal, then back references claiming 1000 bytes
	lzf := setFooter([]byte{0, 0xc3, 4, 0x40 | 0x03, 0xe8, 0, 'a', 7 << 5, 255, 0}, 10)
	if r := h.do("RESTORE", "k", "0", string(lzf)); r[0] != '-' {
		t.Fatalf("%q", r)
	}
}

// restoreReplScript: writes of RESTORE whose propagation slaves replay.
func restoreReplScript() [][]string {
	enc := func(v rdbcodec.Value) string { return string(rdbcodec.Encode(v)) }
	bs := func(ss ...string) [][]byte { return toArgs(ss) }
	str := enc(rdbcodec.Value{Kind: rdbcodec.String, Str: []byte("v")})
	list := enc(rdbcodec.Value{Kind: rdbcodec.List, Elems: bs("a", "1", "b")})
	set := enc(rdbcodec.Value{Kind: rdbcodec.Set, Elems: bs("a", "1", "b")})
	zset := enc(rdbcodec.Value{Kind: rdbcodec.ZSet, Elems: bs("a", "b"), Scores: []float64{1, 2.5}})
	hash := enc(rdbcodec.Value{Kind: rdbcodec.Hash, Elems: bs("f", "v", "g", "w")})
	zl := "\n\x17\x17\x00\x00\x00\x12\x00\x00\x00\x03\x00\x00\xc0\x01\x00\x04\xc0\x02\x00\x04\xc0\x03\x00\xff\x04\x00u#<\xc0;.\xe9\xdd"
	abs := strconv.FormatInt(testEpoch.UnixMilli()+500000, 10)
	past := strconv.FormatInt(testEpoch.UnixMilli()-1, 10)
	return [][]string{
		{"RESTORE", "s", "0", str}, {"RESTORE", "s", "0", str}, {"RESTORE", "s", "100000", str, "REPLACE"},
		{"RESTORE", "l", "0", list}, {"RESTORE", "l", "200000", zl, "REPLACE", "IDLETIME", "5"},
		{"RESTORE", "st", "300000", set, "FREQ", "3"}, {"RESTORE", "z", abs, zset, "ABSTTL"},
		{"RESTORE", "h", "0", hash}, {"RESTORE", "h", "100", hash, "REPLACE"}, {"RESTORE", "h2", "0", hash},
		{"RESTORE", "h2", past, str, "REPLACE", "ABSTTL"}, {"RESTORE", "h3", past, str, "ABSTTL"},
		{"RESTORE", "s", past, hash, "REPLACE", "ABSTTL"}, {"RESTORE", "z", "9223372036854775807", str, "REPLACE"},
		{"RESTORE", "st", "0", hash, "REPLACE"}, {"RESTORE", "l", "0", set, "REPLACE"},
		{"SET", "x", "1"}, {"RESTORE", "x", "0", list, "REPLACE"}, {"RESTORE", "y", "0", "bad"},
	}
}

// TestRestoreReplication: a slave replaying what RESTORE propagates ends
// with the master's records, on every engine; a relative TTL reaches it
// as an absolute one.
func TestRestoreReplication(t *testing.T) {
	for _, name := range allEngines {
		t.Run(name, func(t *testing.T) {
			clk := newTestClock()
			p := openReplPair(t, name, clk)
			for _, l := range restoreReplScript() {
				out, prop := p.mx.Exec(0, 2, false, toArgs(l), nil)
				if cmds := withoutVersions(prop); l[0] == "RESTORE" && l[2] == "100000" && string(out) == "+OK\r\n" {
					want := strconv.FormatInt(clk.Now().UnixMilli()+100000, 10)
					if len(cmds) != 1 || string(cmds[0][2]) != want || string(cmds[0][len(cmds[0])-1]) != "ABSTTL" {
						t.Errorf("RESTORE %s 100000 propagated %q", l[1], cmds)
					}
				}
				if pc, rep := replay(p.sx, 0, prop); pc != nil {
					t.Fatalf("%.40q: the slave refused %.60q: %q", l, pc, rep)
				}
				clk.Advance(time.Millisecond)
			}
			p.checkEqual(t)
			if r := execRaw(p.mx, "EXISTS", "h2", "h3", "s", "z"); r != ":0\r\n" {
				t.Errorf("expired RESTOREs left keys: %q", r)
			}
		})
	}
}

// FuzzRestore feeds random payloads to RESTORE on the rdb engine, as they
// come and with a valid footer (so that the object decoder sees them):
// no panic, one reply, the slave equal, and what was restored DUMPs and
// RESTOREs again.
func FuzzRestore(f *testing.F) {
	bs := func(ss ...string) [][]byte { return toArgs(ss) }
	for _, v := range []rdbcodec.Value{
		{Kind: rdbcodec.String, Str: []byte("hello")},
		{Kind: rdbcodec.String, Str: []byte("-123")},
		{Kind: rdbcodec.List, Elems: bs("a", "1", "-5000", "x y", "70000", "9223372036854775807")},
		{Kind: rdbcodec.Set, Elems: bs("a", "1")},
		{Kind: rdbcodec.ZSet, Elems: bs("a", "b"), Scores: []float64{1, -2.5}},
		{Kind: rdbcodec.Hash, Elems: bs("f", "v")},
	} {
		p := rdbcodec.Encode(v)
		f.Add(p)
		f.Add(p[:len(p)-10])
	}
	f.Add([]byte("\n\x17\x17\x00\x00\x00\x12\x00\x00\x00\x03\x00\x00\xc0\x01\x00\x04\xc0\x02\x00\x04\xc0\x03\x00\xff"))
	f.Add([]byte{0, 0xc3, 4, 25, 0, 'a', 7 << 5, 24 - 9, 0})
	f.Add([]byte{11, 12, 2, 0, 0, 0, 2, 0, 0, 0, 1, 0, 2, 0})
	f.Add([]byte{9, 16, 2, 1, 'a', 1, 0, 'b', 0xff})
	f.Add([]byte{13, 0x19, 0x19, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 1, 'f', 3, 0xf2, 0xff})
	fp := newFuzzPair(f, func(testing.TB) engines.Engine { return rdb.Open(fuzzEngineOptions) })
	f.Fuzz(func(t *testing.T, data []byte) {
		fp.reset(t)
		run := func(args ...[]byte) string { return fp.run(t, args) }
		for _, p := range [][]byte{data, setFooter(data, 10)} {
			if run([]byte("RESTORE"), []byte("k"), []byte("100"), p, []byte("REPLACE")) != "+OK\r\n" {
				continue
			}
			d := run([]byte("DUMP"), []byte("k"))
			if d[0] != '$' {
				t.Fatalf("DUMP after RESTORE: %q", d)
			}
			if r := run([]byte("RESTORE"), []byte("k2"), []byte("0"), bulkOf(t, d), []byte("REPLACE")); r != "+OK\r\n" {
				t.Fatalf("RESTORE of DUMP's payload: %q", r)
			}
		}
		fp.checkEqual(t)
	})
}

// TestDumpTairTypes: Tair's own types have no Redis serialization: DUMP
// refuses them (and changes nothing).
func TestDumpTairTypes(t *testing.T) {
	onEngines(t, func(t *testing.T, engine string) {
		h := newHarnessOn(t, engine)
		if r := h.do("EXHSET", "x", "f", "v"); r[0] == '-' {
			t.Fatalf("EXHSET: %q", r)
		}
		if r := h.do("DUMP", "x"); r != "-"+errTextDumpType+"\r\n" {
			t.Fatalf("DUMP of a TairHash: %q", r)
		}
		if r := h.do("EXHGET", "x", "f"); r != "$1\r\nv\r\n" {
			t.Fatalf("EXHGET after DUMP: %q", r)
		}
	})
}

package exec

// HyperLogLog tests: a differential test against redis-server on every
// engine (replies and the values' bytes, through GET, compared byte for
// byte; values moved between the two by GET and SET), the replication of
// the same scripts to a slave, and what each command propagates.

import (
	"bufio"
	"bytes"
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tairkv/tair/internal/hll"
	"github.com/tairkv/tair/resp"
)

// A script step is a command, or one of these pseudo-commands that move a
// value between the two sides of the differential test:
//
//	~FROMREDIS src dst: GET src on redis-server, SET dst to it on both
//	~FROMTAIR src dst:  GET src here, SET dst to it on both
//
// (the replication test runs both as GET src then SET dst here).
const (
	hllFromRedis = "~FROMREDIS"
	hllFromTair  = "~FROMTAIR"
)

func hllArgs(words ...string) [][]byte { return toArgs(words) }

// hllLines turns command lines (splitLine syntax) into steps.
func hllLines(lines ...string) [][][]byte {
	out := make([][][]byte, len(lines))
	for i, l := range lines {
		out[i] = toArgs(splitLine(l))
	}
	return out
}

// hllElems is PFADD key e<from> ... e<to-1>.
func hllElems(key string, from, to int) [][]byte {
	args := hllArgs("PFADD", key)
	for i := from; i < to; i++ {
		args = append(args, []byte("e"+strconv.Itoa(i)))
	}
	return args
}

// hllDenseValue is a dense HyperLogLog whose registers are reg(i), with a
// stale cache.
func hllDenseValue(reg func(i int) uint8) []byte {
	v := make([]byte, hll.DenseSize)
	copy(v, "HYLL")
	v[15] = 0x80
	for i := 0; i < hll.Registers; i++ {
		hll.DenseSetReg(v[hll.HdrSize:], i, reg(i))
	}
	return v
}

// hllSparseValue is a sparse HyperLogLog of the given opcodes, cache byte 7
// set to card7.
func hllSparseValue(card7 byte, ops ...byte) []byte {
	v := append([]byte("HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"), card7)
	return append(v, ops...)
}

// hllFixedScript covers each command's replies and errors, the sparse to
// dense promotion (by size and by a register above 32), merges of every
// kind, and crafted and corrupted values.
func hllFixedScript() [][][]byte {
	s := hllLines(
		// arity and types
		"PFADD", "PFCOUNT", "PFMERGE", "PFDEBUG", "PFDEBUG GETREG", "PFDEBUG GETREG a b",
		"PFADD h", "GET h", "PFCOUNT h", "GET h", "PFADD h", "PFADD h a", "GET h", "PFADD h a", "PFCOUNT h", "GET h",
		"PFADD h b c d e f g", "GET h", "PFCOUNT h", "PFCOUNT h", "PFCOUNT nothere", "PFCOUNT nothere h nothere2",
		"PFADD h2 \"\" \"\\x00\" \"a b\" h", "GET h2", "PFCOUNT h h2", "PFCOUNT h2 h2", "GET h2",
		"SET str abc", "PFADD str a", "PFCOUNT str", "PFCOUNT h str", "PFMERGE str h", "PFMERGE h str", "PFDEBUG ENCODING str",
		"SET num 12345", "PFADD num a", "SET long 0123456789abcdefghij", "PFCOUNT long",
		"LPUSH list a", "PFADD list a", "PFCOUNT list", "PFCOUNT h list", "PFMERGE list h", "PFMERGE h list", "PFMERGE h nothere list",
		"PFDEBUG ENCODING list", "PFDEBUG ENCODING nothere", "PFDEBUG FOO nothere", "PFDEBUG FOO h", "PFDEBUG FOO list",
		"HSET hash f v", "PFADD hash a", "PFCOUNT hash", "PFMERGE hash h", "PFMERGE d hash", "EXISTS d",
		"SADD set a", "PFADD set a", "ZADD zset 1 a", "PFCOUNT zset",
		"PFDEBUG ENCODING h", "PFDEBUG encoding h", "PFDEBUG DECODE h", "PFDEBUG GETREG h", "GET h", "PFDEBUG ENCODING h",
		"PFDEBUG DECODE h", "PFDEBUG TODENSE h", "PFDEBUG TODENSE h2", "PFDEBUG TODENSE h2", "GET h2", "PFCOUNT h2", "GET h2",
		"PFDEBUG \"getreg\\x00x\" h", "PFDEBUG \"foo\\x00bar\" h", "PFDEBUG \"a\\r\\nb\" h", "PFDEBUG \"\" h",
		// merges
		"PFADD m1 a b c", "PFADD m2 c d e", "PFMERGE m3 m1 m2", "GET m3", "PFCOUNT m3", "GET m3",
		"PFMERGE m1 m2", "GET m1", "PFMERGE m1", "GET m1", "PFMERGE m4", "GET m4", "PFCOUNT m4",
		"PFMERGE m5 nothere", "GET m5", "PFMERGE m6 m6", "EXISTS m6", "PFMERGE m3 h2", "GET m3", "PFCOUNT m3",
		"PFMERGE m1 m1", "GET m1",
		// expiry is kept
		"PFADD t a", "EXPIRE t 1000", "PFADD t b", "TTL t", "PFCOUNT t", "TTL t", "PFMERGE t m1", "TTL t", "GET t",
		"PFDEBUG TODENSE t", "TTL t", "PFADD t2 a", "PFMERGE t2 t", "TTL t2",
	)
	// Growth one element at a time while sparse, then in batches through
	// the promotion (hll-sparse-max-bytes) and beyond.
	for i := 0; i < 120; i++ {
		s = append(s, hllElems("big", i, i+1), hllArgs("GET", "big"))
		if i%10 == 0 {
			s = append(s, hllArgs("PFCOUNT", "big"), hllArgs("GET", "big"))
		}
	}
	for i := 120; i < 6000; i += 60 {
		s = append(s, hllElems("big", i, i+60), hllArgs("GET", "big"), hllArgs("PFCOUNT", "big"), hllArgs("PFDEBUG", "ENCODING", "big"))
	}
	for i := 0; i < 200000; i += 20000 {
		s = append(s, hllElems("huge", i, i+20000), hllArgs("PFCOUNT", "huge"), hllArgs("GET", "huge"))
	}
	s = append(s, hllLines(
		"PFCOUNT big h", "PFCOUNT big huge h2 nothere", "PFMERGE bh big h", "GET bh", "PFCOUNT bh",
		"PFMERGE h3 h h2", "PFMERGE h3 big", "GET h3", "PFMERGE hb h huge", "GET hb",
		"PFDEBUG DECODE big", "PFDEBUG TODENSE big", "PFDEBUG GETREG huge",
	)...)
	// A sparse destination that grows past the limit while merging.
	for i := 0; i < 6; i++ {
		k := "part" + strconv.Itoa(i)
		s = append(s, hllElems(k, i*300, i*300+300), hllArgs("PFMERGE", "acc", k), hllArgs("GET", "acc"), hllArgs("PFCOUNT", "acc"))
	}

	// Values moved between redis-server and here.
	s = append(s, hllLines(
		"~FROMREDIS big big.r", "PFCOUNT big.r", "PFADD big.r x y z", "GET big.r", "PFCOUNT big.r",
		"~FROMTAIR big big.t", "PFCOUNT big.t", "PFADD big.t x y z", "GET big.t",
		"~FROMREDIS h2 h2.r", "PFADD h2.r q", "GET h2.r", "~FROMTAIR h2 h2.t", "PFCOUNT h2.t h2.r", "PFMERGE h2.t big.r", "GET h2.t",
	)...)

	// Crafted values: registers above 32 (dense only), 51 (tau) and 63,
	// a fresh cache holding a large count, unused header bytes set, ZERO
	// opcodes only, no opcodes at all, a truncated XZERO.
	set := func(k string, v []byte) { s = append(s, [][]byte{[]byte("SET"), []byte(k), v}) }
	set("d63", hllDenseValue(func(int) uint8 { return 63 }))
	set("d51", hllDenseValue(func(int) uint8 { return 51 }))
	set("dmix", hllDenseValue(func(i int) uint8 { return uint8(i % 64) }))
	set("d50", hllDenseValue(func(i int) uint8 { return uint8(50 + i%2) }))
	set("dlow", hllDenseValue(func(i int) uint8 {
		if i%7 == 0 {
			return 0
		}
		return uint8(1 + i%5)
	}))
	fresh := hllDenseValue(func(i int) uint8 { return uint8(i % 3) })
	copy(fresh[8:], "\x01\x02\x03\x04\x05\x06\x07\x3f")
	set("dfresh", fresh)
	hdr := hllSparseValue(0x80, 0x7f, 0xff)
	copy(hdr[5:], "xyz")
	set("snotused", hdr)
	set("szeros", hllSparseValue(0x80, bytes.Repeat([]byte{0x00}, hll.Registers)...))
	set("sempty", hllSparseValue(0x80))
	set("strunc", hllSparseValue(0x80, 0x3f, 0x3f, 0x3f, 0x3e, 0x7f))           // 64*3+63, then XZERO 16129 cut short
	set("sover", hllSparseValue(0x80, 0x7f, 0xff, 0x80))                        // one register too many
	set("sunder", hllSparseValue(0x80, 0x7f, 0xfe))                             // one too few
	set("sval", hllSparseValue(0x80, 0x7f, 0xfb, 0x83, 0x9f, 0xff, 0xff, 0xff)) // VALs past the end
	set("s33", hllSparseValue(0x80, 0x00, 0xfc, 0x7f, 0xfd))                    // a VAL of 32
	for _, k := range []string{"d63", "d51", "dmix", "d50", "dlow", "dfresh", "snotused", "szeros", "sempty", "strunc", "sover", "sunder", "sval", "s33"} {
		s = append(s, hllLines(
			"PFCOUNT "+k, "GET "+k, "PFCOUNT "+k+" h", "PFDEBUG ENCODING "+k, "PFDEBUG DECODE "+k,
			"PFMERGE mm."+k+" "+k, "GET mm."+k, "PFMERGE mh."+k+" h "+k, "GET mh."+k, "PFMERGE "+k+" h", "GET "+k,
			"~FROMREDIS "+k+" c."+k, "PFADD c."+k+" a b c d e f g h i j", "GET c."+k, "PFCOUNT c."+k,
			"PFADD "+k+" a", "GET "+k, "PFCOUNT "+k, "PFDEBUG TODENSE "+k, "GET "+k,
		)...)
	}
	s = append(s, hllLines("PFADD sunder2 x", "SETRANGE sunder2 17 \"\\xfe\"", "PFADD sunder2 a b c d e f g h i j k", "GET sunder2")...)

	// Corrupted by SETRANGE and APPEND: a bad magic, encoding, length.
	s = append(s, hllLines(
		"PFADD c1 a b c", "SETRANGE c1 0 X", "PFADD c1 d", "PFCOUNT c1", "PFMERGE c1x c1", "PFDEBUG ENCODING c1",
		"PFADD c2 a b c", "SETRANGE c2 4 \"\\x02\"", "PFADD c2 d", "PFCOUNT c2",
		"PFADD c3 a b c", "SETRANGE c3 4 \"\\x00\"", "PFADD c3 d", "PFCOUNT c3", "PFCOUNT c3 h", "PFMERGE c3x c3",
		"PFADD c4 a", "PFDEBUG TODENSE c4", "APPEND c4 x", "PFADD c4 d", "PFCOUNT c4", "PFMERGE c4 h",
		"PFADD c5 a", "PFDEBUG TODENSE c5", "SETRANGE c5 4 \"\\x01\"", "PFADD c5 d", "PFCOUNT c5", "PFCOUNT c5 h", "PFMERGE c5x c5",
		"PFDEBUG GETREG c5", "PFDEBUG DECODE c5", "GET c5",
		"PFADD c6 a b c", "SETRANGE c6 16 \"\\x40\\x00\"", "PFADD c6 zz", "PFCOUNT c6", "PFCOUNT c6 h", "PFMERGE c6x c6", "GET c6",
		"PFDEBUG TODENSE c6", "PFDEBUG GETREG c6",
		"PFADD c7 a", "SETRANGE c7 15 \"\\x00\"", "PFCOUNT c7", "GET c7", "PFADD c7 a", "PFCOUNT c7",
		"SET c8 HYLL", "PFADD c8 a", "SET c9 HYLLHYLLHYLLHYL", "PFADD c9 a", "SET c10 \"HYLL\\x01\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\"",
		"PFADD c10 a", "PFCOUNT c10", "PFDEBUG DECODE c10", "GET c10",
	)...)
	return s
}

// hllRandomScript is n random steps over six keys: adds of a few or many
// elements, counts of one and several keys, merges, moves through GET and
// SET, conversions and, with corrupt, SETRANGEs of random bytes into the
// values.
func hllRandomScript(seed uint64, n int, corrupt bool) [][][]byte {
	r := rand.New(rand.NewPCG(seed, 0x4859_4c4c))
	key := func() string { return "r" + strconv.Itoa(r.IntN(6)) }
	elem := func() []byte {
		if r.IntN(8) == 0 {
			b := make([]byte, r.IntN(12))
			for i := range b {
				b[i] = byte(r.IntN(256))
			}
			return b
		}
		return []byte("x" + strconv.Itoa(r.IntN(50000)))
	}
	var s [][][]byte
	for len(s) < n {
		switch op := r.IntN(100); {
		case op < 30:
			args := hllArgs("PFADD", key())
			m := r.IntN(6)
			if r.IntN(10) == 0 {
				m = 100 + r.IntN(400)
			}
			for range m {
				args = append(args, elem())
			}
			s = append(s, args)
		case op < 45:
			s = append(s, hllArgs("PFCOUNT", key()))
		case op < 52:
			args := hllArgs("PFCOUNT", key())
			for range 1 + r.IntN(3) {
				args = append(args, []byte(key()))
			}
			s = append(s, args)
		case op < 60:
			args := hllArgs("PFMERGE", key())
			for range r.IntN(4) {
				args = append(args, []byte(key()))
			}
			s = append(s, args)
		case op < 80:
			s = append(s, hllArgs("GET", key()))
		case op < 84:
			s = append(s, hllArgs("PFDEBUG", []string{"ENCODING", "DECODE", "TODENSE", "ENCODING"}[r.IntN(4)], key()))
		case op < 86:
			s = append(s, hllArgs(hllFromRedis, key(), key()))
		case op < 88:
			s = append(s, hllArgs(hllFromTair, key(), key()))
		case op < 89:
			s = append(s, hllArgs("DEL", key()))
		case op < 90:
			s = append(s, hllArgs("SET", key(), "plain"))
		case corrupt:
			off := r.IntN(40)
			if r.IntN(2) == 0 {
				off = r.IntN(3200)
			}
			b := make([]byte, 1+r.IntN(2))
			for i := range b {
				b[i] = byte(r.IntN(256))
			}
			s = append(s, [][]byte{[]byte("SETRANGE"), []byte(key()), []byte(strconv.Itoa(off)), b})
		}
	}
	return s
}

// hllLabel shortens a step for messages.
func hllLabel(args [][]byte) string {
	parts := make([]string, len(args))
	for i, a := range args {
		if len(a) > 40 {
			parts[i] = fmt.Sprintf("<%d bytes %q...>", len(a), a[:20])
		} else {
			parts[i] = quoteArg(string(a))
		}
	}
	return strings.Join(parts, " ")
}

// hllShort shortens a reply for messages.
func hllShort(s string) string {
	if len(s) > 300 {
		return fmt.Sprintf("%q... (%d bytes)", s[:300], len(s))
	}
	return fmt.Sprintf("%q", s)
}

// hllExecutor is an executor over a fresh engine of the given name, one
// bucket (no CROSSSLOT), on a fake clock.
func hllExecutor(t *testing.T, name string) *Executor {
	clk := newTestClock()
	return New(openEngine(t, name, clk), Options{Now: clk.Now, Buckets: 1})
}

func TestHLLAgainstRedis(t *testing.T) {
	conn, rd := startRedis(t)
	script := hllFixedScript()
	script = append(script, hllRandomScript(1, 1500, false)...)
	script = append(script, hllRandomScript(2, 1500, true)...)
	t.Logf("%d steps per engine and protocol", len(script))
	for _, name := range allEngines {
		for _, proto := range []int{2, 3} {
			t.Run(fmt.Sprintf("%s/RESP%d", name, proto), func(t *testing.T) {
				_ = conn.SetDeadline(time.Now().Add(2 * time.Minute))
				hllDiff(t, conn, rd, hllExecutor(t, name), proto, script)
			})
		}
	}
}

// hllDiff runs script on a flushed redis-server and on x, comparing each
// raw reply; it stops at the 10th difference.
func hllDiff(t *testing.T, conn net.Conn, rd *bufio.Reader, x *Executor, proto int, script [][][]byte) {
	redis := func(args [][]byte) string { return redisDo(t, conn, rd, args) }
	tair := func(args [][]byte) string {
		out, _ := x.Exec(0, proto, false, args, nil)
		return string(out)
	}
	redis(hllArgs("FLUSHALL"))
	redis(hllArgs("HELLO", strconv.Itoa(proto)))
	fails := 0
	for i, args := range script {
		cmd := args
		switch string(args[0]) {
		case hllFromRedis, hllFromTair:
			get := hllArgs("GET", string(args[1]))
			reply := redis(get)
			if string(args[0]) == hllFromTair {
				reply = tair(get)
			}
			v, ok := bulkBody(reply)
			if !ok {
				continue // no string to move
			}
			cmd = [][]byte{[]byte("SET"), args[2], v}
		}
		want, got := redis(cmd), tair(cmd)
		if got != want {
			t.Errorf("step %d: %s\n  got: %s\nredis: %s", i, hllLabel(cmd), hllShort(got), hllShort(want))
			if fails++; fails == 10 {
				t.Fatal("too many differences")
			}
		}
	}
}

// bulkBody is the string of a raw bulk reply.
func bulkBody(reply string) ([]byte, bool) {
	if len(reply) < 4 || reply[0] != '$' || reply[1] == '-' {
		return nil, false
	}
	i := strings.IndexByte(reply, '\r')
	n, err := strconv.Atoi(reply[1:i])
	if err != nil || i+2+n > len(reply) {
		return nil, false
	}
	return []byte(reply[i+2 : i+2+n]), true
}

// TestHLLReplication runs the scripts on a master, replays what each
// command propagates on a slave (replica=true), and compares the two
// engines record by record, on every engine.
func TestHLLReplication(t *testing.T) {
	script := hllFixedScript()
	script = append(script, hllRandomScript(3, 1500, false)...)
	script = append(script, hllRandomScript(4, 1500, true)...)
	for _, name := range allEngines {
		t.Run(name, func(t *testing.T) {
			master, slave := hllExecutor(t, name), hllExecutor(t, name)
			for i, args := range script {
				if s := string(args[0]); s == hllFromRedis || s == hllFromTair {
					out, _ := master.Exec(0, 2, false, hllArgs("GET", string(args[1])), nil)
					v, ok := bulkBody(string(out))
					if !ok {
						continue
					}
					args = [][]byte{[]byte("SET"), args[2], v}
				}
				out, prop := master.Exec(0, 2, false, args, nil)
				if n, _, err := resp.ScanReply(out, resp.Limits{}); err != nil || n != len(out) {
					t.Fatalf("step %d: %s: reply %s is not one RESP reply (%v)", i, hllLabel(args), hllShort(string(out)), err)
				}
				if pc, rep := replay(slave, 0, prop); pc != nil {
					t.Fatalf("step %d: %s: the slave refused %s: %q", i, hllLabel(args), pc, rep)
				}
			}
			if m, s := dumpBucket(t, master.Engine()), dumpBucket(t, slave.Engine()); m != s {
				t.Fatalf("the slave diverged from the master\nmaster: %.2000s\nslave:  %.2000s", m, s)
			}
		})
	}
}

// TestHLLPropagation pins what each command propagates.
func TestHLLPropagation(t *testing.T) {
	for _, name := range allEngines {
		t.Run(name, func(t *testing.T) {
			h := newHarnessOn(t, name)
			h.x = New(h.eng, Options{Now: h.clock.Now, Buckets: 1})
			wantProp := func(cmd string, want ...string) {
				t.Helper()
				if got := h.prop(); strings.Join(got, "\n") != strings.Join(want, "\n") {
					t.Errorf("%s propagated %q, want %q", cmd, got, want)
				}
			}
			step := func(cmd string, want ...string) {
				t.Helper()
				h.line(cmd)
				wantProp(cmd, want...)
			}
			val := func(key string) string {
				t.Helper()
				e, err := h.eng.Get(h.x.keyOf(key))
				if err != nil {
					t.Fatal(err)
				}
				return quoteArg(string(e.Value))
			}
			step("PFADD h a b", "PFADD h a b")
			step("PFADD h a")
			step("PFADD h")
			step("PFADD n", "PFADD n")
			step("PFCOUNT h", "PFCOUNT h")
			step("PFCOUNT h")
			step("PFCOUNT nothere")
			step("PFCOUNT h n")
			h.line("PFMERGE d h n")
			wantProp("PFMERGE d h n", "SET d "+val("d"))
			step("PEXPIREAT d 4102444800000", "PEXPIREAT d 4102444800000")
			h.line("PFMERGE d h")
			wantProp("PFMERGE d h", "SET d "+val("d")+" PXAT 4102444800000")
			step("PFDEBUG ENCODING h")
			step("PFDEBUG DECODE h")
			step("PFDEBUG TODENSE h", "PFDEBUG TODENSE h")
			step("PFDEBUG TODENSE h")
			step("PFDEBUG GETREG h")
			step("PFDEBUG GETREG n", "PFDEBUG TODENSE n")
			step("SET str x", "SET str x")
			step("PFADD str")
			step("PFADD str a")
			// A corrupted sparse value: the first element's register is
			// reached, the second's is not; the first one's change stays
			// (as in Redis) and goes to the slave as a SET.
			h.do("SET", "bad", string(hllSparseValue(0x80, 0x7f, 0x7f))) // XZERO:16256 only
			var reached, unreached string
			for i := 0; reached == "" || unreached == ""; i++ {
				e := "e" + strconv.Itoa(i)
				idx, _ := hll.PatLen([]byte(e))
				switch {
				case idx < 16256 && reached == "":
					reached = e
				case idx >= 16256 && unreached == "":
					unreached = e
				}
			}
			step("PFADD bad " + unreached)
			if got := h.line("PFADD bad " + reached + " " + unreached); got != errReply(errTextInvalidHLL) {
				t.Errorf("PFADD on a corrupted value: %q", got)
			}
			wantProp("PFADD bad", "SET bad "+val("bad"))
		})
	}
}

// TestHLLFormat pins the format's constants and a few values computed
// by hand from hyperloglog.c's rules.
func TestHLLFormat(t *testing.T) {
	if hll.DenseSize != 12304 {
		t.Fatalf("dense size %d", hll.DenseSize)
	}
	if got := string(hll.New()); got != "HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x7f\xff" {
		t.Fatalf("empty HLL %q", got)
	}
	// Every register written and read back, neighbours untouched.
	regs := make([]byte, hll.DenseSize-hll.HdrSize)
	for i := 0; i < hll.Registers; i++ {
		hll.DenseSetReg(regs, i, uint8(i*7%64))
	}
	for i := 0; i < hll.Registers; i++ {
		if got := hll.DenseGet(regs, i); got != uint8(i*7%64) {
			t.Fatalf("register %d = %d, want %d", i, got, i*7%64)
		}
	}
	// The estimate of an empty HLL is 0; of registers all at 63, 2^63.
	var histo [64]int
	histo[0] = hll.Registers
	if n := hll.Estimate(&histo); n != 0 {
		t.Fatalf("empty estimate %d", n)
	}
	histo[0], histo[63] = 0, hll.Registers
	if n := hll.Estimate(&histo); n != 1<<63 {
		t.Fatalf("all-63 estimate %d", n)
	}
	// Sets that split an XZERO, extend a VAL and merge VALs.
	s := hll.New()
	for _, c := range []struct {
		index int
		count uint8
		want  string // the opcodes after the header
		ret   int
	}{
		{1000, 2, "\x43\xe7\x84\x7c\x16", 1}, // XZERO:1000 VAL:2,1 XZERO:15383
		{1000, 2, "\x43\xe7\x84\x7c\x16", 0},
		{1001, 2, "\x43\xe7\x85\x7c\x15", 1}, // VAL:2,2 merged
		{999, 2, "\x43\xe6\x86\x7c\x15", 1},  // XZERO:999 VAL:2,3
		{1002, 1, "\x43\xe6\x86\x80\x7c\x14", 1},
		{1003, 40, "", 1}, // dense
	} {
		var r int
		s, r = hll.SparseSet(s, c.index, c.count)
		if r != c.ret {
			t.Fatalf("set %d=%d returned %d, want %d", c.index, c.count, r, c.ret)
		}
		if c.want == "" {
			if s[hll.EncodingByte] != hll.Dense || len(s) != hll.DenseSize || hll.DenseGet(s[hll.HdrSize:], 1003) != 40 || hll.DenseGet(s[hll.HdrSize:], 999) != 2 {
				t.Fatalf("not promoted: %q", s[:20])
			}
			continue
		}
		if got := string(s[hll.HdrSize:]); got != c.want {
			t.Fatalf("set %d=%d: %q, want %q", c.index, c.count, got, c.want)
		}
	}
}

// TestHLLCrossSlot: PFCOUNT and PFMERGE of several keys need them in one
// bucket (hash tags), as the spec's Atomic says.
func TestHLLCrossSlot(t *testing.T) {
	h := newHarness(t)
	a, b := "a", "b"
	for i := 0; bucketOf(a, h.x) == bucketOf(b, h.x); i++ {
		b = "b" + strconv.Itoa(i)
	}
	h.run([]step{
		{"PFADD {t}a x", num(1)},
		{"PFADD {t}b y", num(1)},
		{"PFCOUNT {t}a {t}b", num(2)},
		{"PFMERGE {t}c {t}a {t}b", ok},
		{"PFCOUNT {t}c", num(2)},
		{"PFADD " + a + " x", num(1)},
		{"PFCOUNT " + a + " " + b, errReply(ErrTextCrossSlot)},
		{"PFMERGE " + a + " " + b, errReply(ErrTextCrossSlot)},
		{"PFMERGE " + b + " " + a, errReply(ErrTextCrossSlot)},
		{"EXISTS " + b, num(0)},
	})
}

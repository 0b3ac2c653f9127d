package exec

// The bitmap commands against a real redis-server (see redisdiff_test.go):
// the same lines, raw replies compared byte for byte, on every engine and
// in RESP2 and RESP3. A fixed script pins the edges and every error text;
// a seeded random script covers the arithmetic (offsets across byte
// boundaries, every BITFIELD width and overflow mode) with a GET of the
// key after each write, so the stored bytes are compared too.

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// bitScript is the fixed part. "double quoted" arguments take Go escapes.
var bitScript = []string{
	// SETBIT / GETBIT, growth, the stored bytes
	"SETBIT b 7 1", "GET b", "SETBIT b 7 1", "SETBIT b 7 0", "GET b", "SETBIT b 100 1", "GET b", "STRLEN b",
	"GETBIT b 100", "GETBIT b 99", "GETBIT b 101", "GETBIT b 1000000", "GETBIT nob 5", "EXISTS nob",
	"SETBIT b 0 1", "SETBIT b 1 1", "SETBIT b 15 1", "SETBIT b 8 1", "GET b", "SETBIT b 103 0", "GET b", "SETBIT b 104 0", "GET b",
	"SETBIT b0 0 0", "GET b0", "EXISTS b0", "SETBIT b0 0 0", "SETBIT b1 23 0", "GET b1",
	"SETBIT b 0 2", "SETBIT b 0 -1", "SETBIT b 0 x", "SETBIT b 0 01", "SETBIT b 0 +1", "SETBIT b 0 \"\"", "SETBIT b 0 1.0",
	"SETBIT b -1 1", "SETBIT b x 1", "SETBIT b \"\" 1", "SETBIT b #8 1", "SETBIT b 01 1", "SETBIT b +1 1", "SETBIT b \" 1\" 1",
	"SETBIT b 4294967296 1", "SETBIT b 4294967296 x", "SETBIT b x x", "SETBIT b 9223372036854775807 1",
	"SETBIT b 9223372036854775808 1", "SETBIT b -9223372036854775808 1", "GETBIT b 4294967296", "GETBIT b -1",
	"GETBIT b 4294967295", "GETBIT b x", "GETBIT b #8", "GETBIT nob x", "GETBIT nob 4294967296",
	"SETBIT b", "SETBIT b 1", "SETBIT b 1 1 1", "GETBIT b", "GETBIT b 1 2", "GETBIT",
	"SET s foobar", "GETBIT s 1", "GETBIT s 2", "GETBIT s 47", "GETBIT s 48", "SETBIT s 7 1", "GET s",
	"SET n 12345", "GETBIT n 2", "GETBIT n 3", "SETBIT n 6 0", "GET n", "SET n2 -1", "BITCOUNT n2", "BITPOS n2 0",
	"SET n3 99", "SETBIT n3 20 1", "GET n3", "INCR n3",
	// other types: WRONGTYPE, before or after the argument errors as Redis
	"LPUSH l a", "SETBIT l 0 1", "SETBIT l x 1", "SETBIT l 0 2", "GETBIT l 0", "GETBIT l x", "BITCOUNT l", "BITCOUNT l 0 x",
	"BITCOUNT l 0", "BITPOS l 0", "BITPOS l 2", "BITPOS l 0 x", "BITFIELD l GET u8 0", "BITFIELD l SET u8 0 1",
	"BITFIELD l GET u99 0", "BITFIELD_RO l GET u8 0", "BITFIELD_RO l SET u8 0 1", "BITFIELD l", "BITOP AND d l",
	"BITOP AND d s l", "BITOP AND d nos l", "BITOP NOT d l", "BITOP NOT l s", "TYPE l", "GET l", "EXISTS d",
	// TTL and overwrite
	"SET t abc EX 100", "SETBIT t 100 1", "TTL t", "SETBIT t 100 1", "TTL t", "BITFIELD t SET u8 0 1", "TTL t",
	"BITFIELD t INCRBY u8 200 1", "TTL t", "GET t", "BITOP NOT t s", "TTL t", "GET t", "SET t2 x EX 100", "BITOP AND t2 nos",
	"EXISTS t2",
	// BITCOUNT
	"SET mykey foobar", "BITCOUNT mykey", "BITCOUNT mykey 0 0", "BITCOUNT mykey 1 1", "BITCOUNT mykey 1 1 BYTE",
	"BITCOUNT mykey 5 30 BIT", "BITCOUNT mykey 5 30 bit", "BITCOUNT mykey 5 30 byte", "BITCOUNT mykey -1 -1",
	"BITCOUNT mykey -1 -5", "BITCOUNT mykey -5 -1", "BITCOUNT mykey 0 -1 BIT", "BITCOUNT mykey 0 100",
	"BITCOUNT mykey 100 200", "BITCOUNT mykey -100 -50", "BITCOUNT mykey -100 2", "BITCOUNT mykey 2 -100",
	"BITCOUNT mykey 0", "BITCOUNT mykey 0 1 FOO", "BITCOUNT mykey 0 1 BIT x", "BITCOUNT mykey x 1", "BITCOUNT mykey 1 x",
	"BITCOUNT mykey x x FOO", "BITCOUNT mykey -1 -5 FOO", "BITCOUNT mykey -1 -5 BIT", "BITCOUNT mykey 1 x FOO",
	"BITCOUNT nokey", "BITCOUNT nokey x 1", "BITCOUNT nokey 0", "BITCOUNT nokey 0 1 FOO", "BITCOUNT nokey 0 -1 BIT",
	"BITCOUNT mykey 9223372036854775807 -9223372036854775808", "BITCOUNT mykey -9223372036854775808 9223372036854775807",
	"BITCOUNT mykey -9223372036854775808 9223372036854775807 BIT", "BITCOUNT mykey -9223372036854775808 -9223372036854775808 BIT",
	"BITCOUNT mykey 3 3 BIT", "BITCOUNT mykey 1 1 BIT", "BITCOUNT mykey 7 8 BIT", "BITCOUNT mykey 47 47 BIT",
	"BITCOUNT mykey 48 100 BIT", "BITCOUNT mykey -3 -1 BIT", "BITCOUNT mykey -48 -48 BIT", "BITCOUNT mykey -49 -48 BIT",
	"BITCOUNT mykey 9 14 BIT", "BITCOUNT mykey 0 1 2", "BITCOUNT mykey 0 1 BIT BIT", "BITCOUNT",
	"SET long \"The quick brown fox jumps over the lazy dog, again and again\\xff\\x00\\x80\"",
	"BITCOUNT long", "BITCOUNT long 1 -2", "BITCOUNT long 3 40", "BITCOUNT long 13 451 BIT", "BITCOUNT long 0 -1 BIT",
	"BITCOUNT long -20 -9 BIT", "BITCOUNT long 8 63 BIT", "BITCOUNT long 9 62 BIT",
	"SET e \"\"", "BITCOUNT e", "BITCOUNT e 0 -1", "BITCOUNT e 0 0 BIT", "BITPOS e 0", "BITPOS e 1", "BITPOS e 0 0",
	"BITPOS e 0 0 -1", "BITPOS e 1 0 -1 BIT", "GETBIT e 0", "BITFIELD e GET u8 0",
	// BITPOS
	"SET p \"\\xff\\xf0\\x00\"", "BITPOS p 0", "BITPOS p 1", "BITPOS p 0 2", "BITPOS p 1 2", "BITPOS p 0 0 -1",
	"BITPOS p 0 8 -1 BIT", "BITPOS p 1 7 15 BIT", "BITPOS p 0 7 15 BIT", "BITPOS p 0 2 -1 BYTE", "BITPOS p 1 2 -1 BYTE",
	"BITPOS p 0 1 1", "BITPOS p 1 1 1", "BITPOS p 0 0 0", "BITPOS p 0 0 0 BIT", "BITPOS p 1 12 13 BIT", "BITPOS p 0 12 13 BIT",
	"BITPOS p 1 11 11 BIT", "BITPOS p 0 11 11 BIT", "BITPOS p 0 3 BIT", "BITPOS p 1 -1", "BITPOS p 0 -1", "BITPOS p 1 -8 -1 BIT",
	"BITPOS p 2", "BITPOS p -1", "BITPOS p x", "BITPOS p 01", "BITPOS p 1 x", "BITPOS p 1 0 x", "BITPOS p 1 0 1 FOO",
	"BITPOS p 1 0 1 BIT x", "BITPOS p 1 x 1 FOO", "BITPOS p 1 0 x FOO", "BITPOS p 0 100", "BITPOS p 1 100", "BITPOS p 0 -100",
	"BITPOS p 0 1 -100", "BITPOS p 0 5 2", "BITPOS p 0 -1 -3", "BITPOS p 1 9223372036854775807", "BITPOS p 0 -9223372036854775808",
	"BITPOS p 0 -9223372036854775808 9223372036854775807 BIT", "BITPOS p 1 9223372036854775807 -9223372036854775808 BIT",
	"BITPOS nop 0", "BITPOS nop 1", "BITPOS nop 1 x", "BITPOS nop 2", "BITPOS nop x", "BITPOS nop 0 1 2 FOO", "BITPOS",
	"BITPOS p", "BITPOS p 1 0 1 BIT 5",
	"SET z \"\\x00\\x00\\x00\"", "BITPOS z 1", "BITPOS z 0", "BITPOS z 1 1", "BITPOS z 0 3", "BITPOS z 1 0 -1 BIT",
	"SET f \"\\xff\\xff\\xff\"", "BITPOS f 0", "BITPOS f 0 0", "BITPOS f 0 1", "BITPOS f 0 0 -1", "BITPOS f 0 0 -1 BIT",
	"BITPOS f 1 100", "BITPOS f 0 100", "BITPOS f 0 2", "BITPOS f 0 -1", "BITPOS f 0 -1 -1",
	"BITPOS long 1 8", "BITPOS long 0 8", "BITPOS long 1 -2", "BITPOS long 0 -3", "BITPOS long 0 -3 -1", "BITPOS long 0 100 400 BIT",
	"SET zz \"\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x01\"", "BITPOS zz 1",
	"BITPOS zz 1 3", "BITPOS zz 1 3 16", "BITPOS zz 1 3 17", "BITPOS zz 1 0 142 BIT", "BITPOS zz 1 0 143 BIT", "BITPOS zz 0 3",
	// BITOP
	"SET key1 foobar", "SET key2 abcdef", "BITOP AND dest key1 key2", "GET dest", "BITOP OR dest key1 key2", "GET dest",
	"BITOP XOR dest key1 key2", "GET dest", "BITOP NOT dest key1", "GET dest", "BITOP not dest key1", "BITOP Or dest key1",
	"GET dest", "BITOP NOT dest key1 key2", "BITOP NOT dest", "BITOP NOT dest nokey", "EXISTS dest", "BITOP FOO dest key1",
	"BITOP FOO dest key1 key2", "BITOP AND dest", "BITOP AND", "BITOP ANDX dest key1", "BITOP DIFF dest key1 key2",
	"BITOP ONE dest key1 key2", "SET dest x", "BITOP and dest key1 nokey", "GET dest",
	"BITOP OR dest nokey nokey2", "EXISTS dest", "BITOP OR dest nokey", "BITOP XOR dest nokey nokey",
	"SET short ab", "BITOP AND dest key1 short", "GET dest", "BITOP AND dest short key1", "GET dest", "BITOP OR dest short key1",
	"GET dest", "BITOP XOR dest key1 short", "GET dest", "BITOP XOR dest key1 key1", "GET dest", "BITOP AND dest key1 key1 short",
	"GET dest", "BITOP NOT dest e", "EXISTS dest", "BITOP AND dest e key1", "GET dest", "BITOP OR dest e e", "EXISTS dest",
	"SET dest x", "BITOP OR dest e", "EXISTS dest", "BITOP AND key1 key1 key2", "GET key1", "BITOP OR key2 key2", "GET key2",
	"LPUSH l2 a", "BITOP AND l2 key2", "TYPE l2", "GET l2", "BITOP NOT n n", "GET n", "BITOP XOR dest n long", "GET dest",
	"BITOP AND dest long long key2", "GET dest", "BITOP OR dest long long key2 zz", "GET dest", "BITOP NOT dest long", "GET dest",
	"BITOP XOR dest long zz f", "GET dest", "BITOP AND dest long zz", "GET dest",
	// BITFIELD
	"BITFIELD bf SET i8 0 100 GET i8 0", "GET bf", "BITFIELD bf INCRBY i5 100 1 GET u4 0", "GET bf",
	"BITFIELD bf INCRBY u2 100 1 OVERFLOW SAT INCRBY i8 200 -900", "GET bf", "BITFIELD bf OVERFLOW FAIL INCRBY u2 102 1",
	"BITFIELD bf OVERFLOW FAIL INCRBY u2 102 1", "BITFIELD bf OVERFLOW FAIL INCRBY u2 102 1", "BITFIELD bf OVERFLOW FAIL INCRBY u2 102 1",
	"BITFIELD bf OVERFLOW FAIL INCRBY u2 102 1", "GET bf", "BITFIELD bf GET i64 0", "BITFIELD bf SET i64 0 -1", "GET bf",
	"BITFIELD bf GET u63 0", "BITFIELD bf GET u63 1", "BITFIELD bf GET i64 1", "BITFIELD bf GET u64 0", "BITFIELD bf GET i65 0",
	"BITFIELD bf GET i0 0", "BITFIELD bf GET u0 0", "BITFIELD bf GET x8 0", "BITFIELD bf GET \"\" 0", "BITFIELD bf GET I8 0",
	"BITFIELD bf GET U8 0", "BITFIELD bf GET i 0", "BITFIELD bf GET i-1 0", "BITFIELD bf GET i08 0", "BITFIELD bf GET i+8 0",
	"BITFIELD bf GET \"i8\\x00x\" 0", "BITFIELD bf GET \"u\\x008\" 0", "BITFIELD bf GET i8 -1", "BITFIELD bf GET i8 #1",
	"BITFIELD bf SET u8 #2 255", "GET bf", "BITFIELD bf GET i8 #-1", "BITFIELD bf GET i8 #x", "BITFIELD bf GET u8 #",
	"BITFIELD bf GET u8 ##1", "BITFIELD bf GET u8 #01", "BITFIELD bf SET i8 0 x", "BITFIELD bf SET i8 0", "BITFIELD bf GET i8",
	"BITFIELD bf FOO", "BITFIELD bf FOO i8 0", "BITFIELD bf OVERFLOW", "BITFIELD bf OVERFLOW FOO GET i8 0",
	"BITFIELD bf OVERFLOW wrap", "BITFIELD bf OVERFLOW Sat GET i8 0", "BITFIELD bf GET i8 0 GET", "BITFIELD bf GET i8 0 SET i8 0",
	"BITFIELD bf GET i8 0 SET x8 0 1", "BITFIELD bf SET i8 0 1 GET x8 0", "BITFIELD bf SET i8 4294967296 1",
	"BITFIELD bf SET i8 x 1 GET i8 x", "BITFIELD bf INCRBY i8 0 9223372036854775808", "BITFIELD bf INCRBY i8 0 -9223372036854775808",
	"BITFIELD bf", "BITFIELD nobf", "EXISTS nobf", "BITFIELD nobf GET i8 100 GET u16 3", "EXISTS nobf",
	"BITFIELD nf OVERFLOW FAIL SET u2 0 7", "EXISTS nf", "GET nf", "BITFIELD nf2 OVERFLOW FAIL INCRBY i8 16 200", "GET nf2",
	"BITFIELD bf GET u8 4294967288", "BITFIELD bf GET u8 4294967289", "BITFIELD bf GET u8 4294967296",
	"BITFIELD bf GET i64 #67108864", "BITFIELD bf GET i64 #67108863", "BITFIELD bf GET i64 #9223372036854775807",
	"BITFIELD bf GET i2 #9223372036854775807", "BITFIELD bf GET i64 #-9223372036854775808", "BITFIELD bf GET i64 #288230376151711744",
	"BITFIELD_RO bf GET i8 0", "BITFIELD_RO bf GET i8 0 GET u4 4", "BITFIELD_RO bf SET i8 0 1", "BITFIELD_RO bf INCRBY i8 0 1",
	"BITFIELD_RO bf OVERFLOW FAIL GET i8 0", "BITFIELD_RO bf GET i8 0 SET x8 0 1", "BITFIELD_RO bf SET i8 0 x",
	"BITFIELD_RO bf", "BITFIELD_RO bf FOO", "BITFIELD_RO nobf GET u8 0", "EXISTS nobf", "BITFIELD_RO", "BITFIELD",
	"BITFIELD bf SET u8 0 0 SET u8 8 0 SET u8 16 0 SET u8 24 0", "GET bf", "BITFIELD bf SET u8 0 0", "GET bf",
	// overflow matrix
	"BITFIELD ov SET i8 0 127 SET i8 0 128 SET i8 0 -128 SET i8 0 -129 SET i8 0 255 SET i8 0 -256 GET i8 0",
	"BITFIELD ov OVERFLOW SAT SET i8 0 127 SET i8 0 128 SET i8 0 -128 SET i8 0 -129 GET i8 0",
	"BITFIELD ov OVERFLOW FAIL SET i8 0 127 SET i8 0 128 SET i8 0 -128 SET i8 0 -129 GET i8 0",
	"BITFIELD ov SET u8 8 255 SET u8 8 256 SET u8 8 -1 SET u8 8 511 GET u8 8",
	"BITFIELD ov OVERFLOW SAT SET u8 8 255 SET u8 8 256 SET u8 8 -1 GET u8 8",
	"BITFIELD ov OVERFLOW FAIL SET u8 8 255 SET u8 8 256 SET u8 8 -1 GET u8 8",
	"BITFIELD ov SET i8 0 120 INCRBY i8 0 10 INCRBY i8 0 -300 INCRBY i8 0 9223372036854775807 INCRBY i8 0 -9223372036854775808",
	"BITFIELD ov OVERFLOW SAT SET i8 0 120 INCRBY i8 0 10 INCRBY i8 0 -300 INCRBY i8 0 9223372036854775807 INCRBY i8 0 -9223372036854775808",
	"BITFIELD ov OVERFLOW FAIL SET i8 0 120 INCRBY i8 0 10 INCRBY i8 0 -300 INCRBY i8 0 7 INCRBY i8 0 -255",
	"BITFIELD ov SET u8 8 250 INCRBY u8 8 10 INCRBY u8 8 -300 INCRBY u8 8 9223372036854775807 INCRBY u8 8 -9223372036854775808",
	"BITFIELD ov OVERFLOW SAT SET u8 8 250 INCRBY u8 8 10 INCRBY u8 8 -300 INCRBY u8 8 9223372036854775807 INCRBY u8 8 -9223372036854775808",
	"BITFIELD ov OVERFLOW FAIL SET u8 8 250 INCRBY u8 8 10 INCRBY u8 8 -251 INCRBY u8 8 5",
	"BITFIELD ov SET i64 16 9223372036854775807 INCRBY i64 16 1 INCRBY i64 16 -1 INCRBY i64 16 -9223372036854775808",
	"BITFIELD ov OVERFLOW SAT SET i64 16 9223372036854775807 INCRBY i64 16 1 SET i64 16 -9223372036854775808 INCRBY i64 16 -1",
	"BITFIELD ov OVERFLOW FAIL SET i64 16 9223372036854775807 INCRBY i64 16 1 SET i64 16 -9223372036854775808 INCRBY i64 16 -1",
	"BITFIELD ov SET i64 16 -5 INCRBY i64 16 -9223372036854775808 INCRBY i64 16 9223372036854775807",
	"BITFIELD ov SET u63 80 9223372036854775807 INCRBY u63 80 1 INCRBY u63 80 -1 SET u63 80 -1 GET u63 80",
	"BITFIELD ov OVERFLOW SAT SET u63 80 9223372036854775807 INCRBY u63 80 1 SET u63 80 -1 INCRBY u63 80 -9223372036854775808",
	"BITFIELD ov OVERFLOW FAIL SET u63 80 9223372036854775807 INCRBY u63 80 1 SET u63 80 -1 INCRBY u63 80 -9223372036854775808",
	"BITFIELD ov SET i1 200 -1 GET i1 200 SET i1 200 1 GET i1 200 INCRBY i1 200 1 OVERFLOW SAT INCRBY i1 200 1 INCRBY i1 200 -5",
	"BITFIELD ov SET u1 201 1 INCRBY u1 201 1 OVERFLOW SAT INCRBY u1 201 5 OVERFLOW FAIL INCRBY u1 201 1 INCRBY u1 201 -1",
	"BITFIELD ov SET i63 300 -1 GET i63 300 GET u63 300 INCRBY i63 300 -4611686018427387904 INCRBY i63 300 -4611686018427387904",
	"BITFIELD ov OVERFLOW WRAP INCRBY i8 0 1 OVERFLOW SAT INCRBY i8 0 1000 OVERFLOW FAIL INCRBY i8 0 1 OVERFLOW WRAP INCRBY i8 0 1",
	"GET ov", "STRLEN ov",
	"BITFIELD ovf OVERFLOW FAIL SET i8 0 300", "EXISTS ovf", "GET ovf", "BITFIELD ovf OVERFLOW FAIL SET i8 100 300", "GET ovf",
	"BITFIELD ovf OVERFLOW FAIL SET i8 0 1", "BITFIELD ovf OVERFLOW FAIL SET i8 0 1", "GET ovf",
	"BITFIELD ovf GET u8 #0 GET u8 #1 SET u8 #1 7 GET u16 #0", "GET ovf", "BITFIELD ovf GET i8 1000 SET u8 0 1", "STRLEN ovf",
}

// bitRandomScript is a seeded random script over a few keys (small
// offsets, every width and overflow mode), a GET after each write.
func bitRandomScript(seed uint64, n int) []string {
	r := rand.New(rand.NewPCG(seed, 0))
	keys := []string{"r0", "r1", "r2", "r3"}
	key := func() string { return keys[r.IntN(len(keys))] }
	off := func() string {
		if r.IntN(8) == 0 {
			return strconv.Itoa(r.IntN(400) - 20)
		}
		return strconv.Itoa(r.IntN(200))
	}
	idx := func() string {
		return strconv.Itoa(r.IntN(60) - 30)
	}
	typ := func() string {
		if r.IntN(2) == 0 {
			return "i" + strconv.Itoa(1+r.IntN(64))
		}
		return "u" + strconv.Itoa(1+r.IntN(63))
	}
	val := func() string {
		switch r.IntN(5) {
		case 0:
			return strconv.FormatInt(int64(r.Uint64()), 10)
		case 1:
			return strconv.Itoa(r.IntN(600) - 300)
		case 2:
			return []string{"9223372036854775807", "-9223372036854775808", "-1", "0", "1"}[r.IntN(5)]
		default:
			return strconv.FormatInt(int64(r.Uint64())>>r.IntN(64), 10)
		}
	}
	var out []string
	for len(out) < n {
		k := key()
		switch r.IntN(8) {
		case 0:
			out = append(out, fmt.Sprintf("SETBIT %s %s %d", k, off(), r.IntN(2)), "GET "+k)
		case 1:
			out = append(out, fmt.Sprintf("GETBIT %s %s", k, off()))
		case 2:
			l := fmt.Sprintf("BITCOUNT %s %s %s", k, idx(), idx())
			if r.IntN(2) == 0 {
				l = fmt.Sprintf("BITCOUNT %s %d %d BIT", k, r.IntN(300)-150, r.IntN(300)-150)
			}
			out = append(out, l)
		case 3:
			l := fmt.Sprintf("BITPOS %s %d", k, r.IntN(2))
			switch r.IntN(4) {
			case 1:
				l += " " + idx()
			case 2:
				l += " " + idx() + " " + idx()
			case 3:
				l += fmt.Sprintf(" %d %d BIT", r.IntN(300)-150, r.IntN(300)-150)
			}
			out = append(out, l)
		case 4:
			op := []string{"AND", "OR", "XOR", "NOT"}[r.IntN(4)]
			srcs := " " + key()
			if op != "NOT" {
				for range r.IntN(3) {
					srcs += " " + key()
				}
			}
			out = append(out, "BITOP "+op+" "+k+srcs, "GET "+k)
		default:
			var b strings.Builder
			b.WriteString("BITFIELD " + k)
			write := false
			for range 1 + r.IntN(5) {
				switch r.IntN(5) {
				case 0:
					b.WriteString(" OVERFLOW " + []string{"WRAP", "SAT", "FAIL"}[r.IntN(3)])
				case 1:
					fmt.Fprintf(&b, " GET %s %s", typ(), off())
				case 2:
					t := typ()
					fmt.Fprintf(&b, " GET %s #%d", t, r.IntN(8))
				case 3:
					fmt.Fprintf(&b, " SET %s %s %s", typ(), off(), val())
					write = true
				default:
					fmt.Fprintf(&b, " INCRBY %s %s %s", typ(), off(), val())
					write = true
				}
			}
			out = append(out, b.String())
			if write {
				out = append(out, "GET "+k)
			}
		}
	}
	return out
}

func TestBitmapsAgainstRedis(t *testing.T) {
	conn, rd := startRedis(t)
	script := append(append([]string(nil), bitScript...), bitRandomScript(1, 1500)...)
	againstRedis(t, conn, rd, func(t *testing.T, engine string, proto int) {
		_, x := openDiffEngine(t, engine)
		fails := 0
		for _, l := range script {
			want := redisLine(t, conn, rd, l)
			if got, _ := x.Exec(0, proto, false, toArgs(splitLine(l)), nil); string(got) != want {
				t.Errorf("%s\n  got: %q\nredis: %q", l, got, want)
				if fails++; fails == 20 {
					t.Fatal("too many differences")
				}
			}
		}
	})
	t.Logf("%d command lines per engine and protocol", len(script))
}

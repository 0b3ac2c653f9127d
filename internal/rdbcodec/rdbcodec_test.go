package rdbcodec

import (
	"bytes"
	"math"
	"strconv"
	"strings"
	"testing"
)

func TestCRC64(t *testing.T) {
	// crc64.c's own test vector.
	if got := CRC64(0, []byte("123456789")); got != 0xe9c6d914c4b8d9ca {
		t.Fatalf("crc64 = %#x", got)
	}
}

// TestDecodeRedisDocExample is the payload of Redis's RESTORE page: a
// ziplist-encoded list at RDB version 4.
func TestDecodeRedisDocExample(t *testing.T) {
	p := []byte("\n\x17\x17\x00\x00\x00\x12\x00\x00\x00\x03\x00\x00\xc0\x01\x00\x04\xc0\x02\x00\x04\xc0\x03\x00\xff\x04\x00u#<\xc0;.\xe9\xdd")
	v, err := Decode(p, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if v.Kind != List || len(v.Elems) != 3 || string(bytes.Join(v.Elems, []byte(","))) != "1,2,3" {
		t.Fatalf("%+v", v)
	}
}

func TestRoundTrip(t *testing.T) {
	big := strings.Repeat("x", 10000)
	var many [][]byte
	for i := -70000; i < 70000; i += 7 {
		many = append(many, []byte(strconv.Itoa(i*i*(i%5))))
	}
	for _, v := range []Value{
		{Kind: String, Str: []byte("")},
		{Kind: String, Str: []byte("-128")},
		{Kind: String, Str: []byte("2147483647")},
		{Kind: String, Str: []byte("2147483648")},
		{Kind: String, Str: []byte("007")},
		{Kind: String, Str: []byte(big)},
		{Kind: List, Elems: [][]byte{[]byte("a"), []byte(big), []byte("-4096"), []byte("4095"), []byte("9223372036854775807"), []byte("-9223372036854775808"), []byte("")}},
		{Kind: List, Elems: many},
		{Kind: Set, Elems: [][]byte{[]byte("a"), []byte("1")}},
		{Kind: ZSet, Elems: [][]byte{[]byte("a"), []byte("b")}, Scores: []float64{math.Inf(-1), 1.5}},
		{Kind: Hash, Elems: [][]byte{[]byte("f"), []byte("v"), []byte("g"), []byte("")}},
	} {
		p := Encode(v)
		got, err := Decode(p, Limits{})
		if err != nil {
			t.Fatalf("%v: %v", v.Kind, err)
		}
		if got.Kind != v.Kind || !bytes.Equal(got.Str, v.Str) || len(got.Elems) != len(v.Elems) {
			t.Fatalf("kind %v: got %d elems", v.Kind, len(got.Elems))
		}
		for i := range v.Elems {
			if !bytes.Equal(got.Elems[i], v.Elems[i]) {
				t.Fatalf("kind %v elem %d: %q != %q", v.Kind, i, got.Elems[i], v.Elems[i])
			}
		}
		for i := range v.Scores {
			if got.Scores[i] != v.Scores[i] {
				t.Fatalf("score %d", i)
			}
		}
	}
}

func TestLZF(t *testing.T) {
	// literal "abc", then a back reference of 5 bytes at distance 3
	out := make([]byte, 8)
	if !lzfDecompress([]byte{2, 'a', 'b', 'c', 3 << 5, 2}, out) || string(out) != "abcabcab" {
		t.Fatalf("%q", out)
	}
	if lzfDecompress([]byte{2, 'a', 'b', 'c', 3 << 5, 9}, out) {
		t.Fatal("reference before the start accepted")
	}
}

func TestLZFCompressRoundTrip(t *testing.T) {
	x := uint32(1)
	for _, n := range []int{21, 40, 100, 1000, 9000, 70000} {
		for _, kind := range []int{0, 1, 2} {
			in := make([]byte, n)
			for i := range in {
				x = x*1103515245 + 12345
				switch kind {
				case 0:
					in[i] = byte(i % 7)
				case 1:
					in[i] = byte(x >> 16)
				default:
					in[i] = "ab"[x>>16&1]
				}
			}
			c := lzfCompress(in)
			if c == nil {
				if kind == 0 || kind == 2 && n >= 100 {
					t.Fatalf("n=%d kind=%d did not compress", n, kind)
				}
				continue
			}
			if len(c) > n-4 {
				t.Fatalf("n=%d: %d bytes", n, len(c))
			}
			out := make([]byte, n)
			if !lzfDecompress(c, out) || !bytes.Equal(out, in) {
				t.Fatalf("n=%d kind=%d: round trip failed", n, kind)
			}
		}
	}
}

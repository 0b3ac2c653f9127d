package generic

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/tairkv/tair/internal/errs"
)

func TestItemsRoundTrip(t *testing.T) {
	for _, items := range [][][]byte{
		nil,
		{{}},
		{[]byte("a"), {}, []byte("ccc")},
		{bytes.Repeat([]byte("x"), 300), []byte("y")},
	} {
		enc := EncodeItems(items)
		got, err := DecodeItems(enc)
		if err != nil {
			t.Fatalf("decode of %q: %v", enc, err)
		}
		if len(got) != len(items) {
			t.Fatalf("round trip of %d items gave %d", len(items), len(got))
		}
		for i := range items {
			if !bytes.Equal(got[i], items[i]) {
				t.Fatalf("item %d: %q, want %q", i, got[i], items[i])
			}
		}
	}
	if got, err := DecodeItems(nil); err != nil || len(got) != 0 {
		t.Fatalf("empty value: %v %v", got, err)
	}
}

func TestDecodeItemsCorrupt(t *testing.T) {
	for _, v := range [][]byte{
		{0x80},           // truncated count
		{5},              // count beyond the value
		{1, 3, 'a'},      // item beyond the value
		{1, 1, 'a', 'b'}, // trailing bytes
		{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, // huge count
	} {
		if _, err := DecodeItems(v); errs.CodeOf(err) != errs.InvalidArgument {
			t.Fatalf("DecodeItems(%q) = %v, want InvalidArgument", v, err)
		}
	}
}

func FuzzDecodeItems(f *testing.F) {
	f.Add(EncodeItems([][]byte{[]byte("a"), []byte("bb")}))
	f.Add([]byte{0x80})
	f.Fuzz(func(t *testing.T, v []byte) {
		// No input panics; what decodes re-encodes to the same items
		// (varints need not be canonical, so the bytes may differ).
		items, err := DecodeItems(v)
		if err != nil {
			return
		}
		again, err := DecodeItems(EncodeItems(items))
		if err != nil || len(again) != len(items) {
			t.Fatalf("re-decode of %q: %d items, %v; want %d", v, len(again), err, len(items))
		}
		for i := range items {
			if !bytes.Equal(again[i], items[i]) {
				t.Fatalf("item %d of %q changed: %q -> %q", i, v, items[i], again[i])
			}
		}
	})
}

func TestItemWindow(t *testing.T) {
	for _, c := range []struct {
		n, off, cnt int
		lo, hi      int
	}{
		{5, 0, 2, 0, 2},
		{5, 3, 10, 3, 5},
		{5, 5, 1, 5, 5},
		{5, 9, 1, 5, 5},
		{5, -1, 1, 4, 5},
		{5, -9, 2, 0, 2},
		{5, 2, 0, 2, 2},
		{0, 0, 3, 0, 0},
		{0, -1, 3, 0, 0},
		{5, math.MinInt, math.MaxInt, 0, 5},
		{5, math.MaxInt, math.MaxInt, 5, 5},
	} {
		lo, hi, err := itemWindow(c.n, c.off, c.cnt)
		if err != nil || lo != c.lo || hi != c.hi {
			t.Fatalf("itemWindow(%d, %d, %d) = [%d, %d) %v, want [%d, %d)", c.n, c.off, c.cnt, lo, hi, err, c.lo, c.hi)
		}
	}
	if _, _, err := itemWindow(5, 0, -1); errs.CodeOf(err) != errs.InvalidArgument {
		t.Fatalf("negative count: %v", err)
	}
}

func TestParseInt(t *testing.T) {
	ok := map[string]int64{"0": 0, "1": 1, "-1": -1, "9223372036854775807": math.MaxInt64, "-9223372036854775808": math.MinInt64}
	for s, want := range ok {
		if got, good := ParseInt([]byte(s)); !good || got != want {
			t.Fatalf("ParseInt(%q) = %d %v", s, got, good)
		}
	}
	for _, s := range []string{"", "-", "+1", "01", "-0", " 1", "1 ", "1e3", "0x1", "9223372036854775808", strings.Repeat("1", 30)} {
		if _, good := ParseInt([]byte(s)); good {
			t.Fatalf("ParseInt(%q) accepted", s)
		}
	}
}

func TestAddInt64(t *testing.T) {
	for _, c := range []struct {
		a, b     int64
		overflow bool
	}{
		{1, 2, false},
		{math.MaxInt64, 0, false},
		{math.MaxInt64, 1, true},
		{math.MinInt64, -1, true},
		{math.MinInt64, math.MaxInt64, false},
		{-1, math.MinInt64, true},
		{math.MaxInt64, math.MinInt64, false},
	} {
		if _, of := addInt64(c.a, c.b); of != c.overflow {
			t.Fatalf("addInt64(%d, %d) overflow %v, want %v", c.a, c.b, of, c.overflow)
		}
	}
}

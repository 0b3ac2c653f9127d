package envelope

import (
	"bytes"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/tairkv/tair/resp"
)

func TestAppendIsTheCommandParseReads(t *testing.T) {
	for _, h := range []Header{
		{Kind: Master, Area: 0, Version: 1, Proto: 2},
		{Kind: SlaveOK, Area: 9, Version: 12345, Proto: 3},
		{Kind: Forwarded, Area: 1023, Version: 1<<63 - 1, Proto: 2},
		{Kind: Master, Area: 3, Version: 7, Proto: 2, NoTouch: true},
		{Kind: SlaveOK, Area: 0, Version: 7, Proto: 3, NoTouch: true},
		{Kind: Master, Area: 5, Version: 7, Proto: 2, Track: 42},
		{Kind: Master, Area: 5, Version: 7, Proto: 3, NoTouch: true, Track: 1<<62 + 7},
	} {
		cmd := [][]byte{[]byte("SET"), []byte("k"), []byte("v")}
		got := Append(nil, h, cmd)
		proto := itoa(uint64(h.Proto))
		if h.NoTouch {
			proto += "n"
		}
		if h.Track != 0 {
			proto += "t" + itoa(h.Track)
		}
		args := append([][]byte{[]byte(h.Kind.Name()),
			[]byte(itoa(uint64(h.Area))), []byte(itoa(uint64(h.Version))), []byte(proto)}, cmd...)
		if a := Args(h, cmd); !reflect.DeepEqual(a, args) {
			t.Fatalf("Args(%+v) = %q, want %q", h, a, args)
		}
		if want := resp.AppendCommand(nil, args...); !bytes.Equal(got, want) {
			t.Fatalf("Append(%+v) = %q, want %q", h, got, want)
		}
		back, rest, err := Parse(args)
		if err != nil || back != h || len(rest) != 3 || string(rest[0]) != "SET" {
			t.Fatalf("Parse(Append(%+v)) = %+v %q %v", h, back, rest, err)
		}
	}
}

func itoa(n uint64) string { return strconv.FormatUint(n, 10) }

// TestNoFlagsIsTheOldEnvelope: a request without flags is byte for byte
// the envelope of before flags, which older dataservers read.
func TestNoFlagsIsTheOldEnvelope(t *testing.T) {
	got := Append(nil, Header{Area: 1, Version: 2, Proto: 3}, [][]byte{[]byte("GET"), []byte("k")})
	want := "*6\r\n$6\r\nTAIR.X\r\n$1\r\n1\r\n$1\r\n2\r\n$1\r\n3\r\n$3\r\nGET\r\n$1\r\nk\r\n"
	if string(got) != want {
		t.Fatalf("Append = %q, want %q", got, want)
	}
	got = Append(nil, Header{Area: 1, Version: 2, Proto: 2, NoTouch: true}, [][]byte{[]byte("GET"), []byte("k")})
	want = "*6\r\n$6\r\nTAIR.X\r\n$1\r\n1\r\n$1\r\n2\r\n$2\r\n2n\r\n$3\r\nGET\r\n$1\r\nk\r\n"
	if string(got) != want {
		t.Fatalf("Append with NoTouch = %q, want %q", got, want)
	}
}

func TestKindOf(t *testing.T) {
	cases := map[string]struct {
		k  Kind
		ok bool
	}{
		"TAIR.X": {Master, true}, "tair.x": {Master, true}, "Tair.Xr": {SlaveOK, true},
		"TAIR.XF": {Forwarded, true}, "TAIR.XX": {0, false}, "TAIR.REPL": {0, false},
		"GET": {0, false}, "TAIR.": {0, false}, "TAIR.Y": {0, false},
	}
	for name, c := range cases {
		k, ok := KindOf([]byte(name))
		if k != c.k || ok != c.ok {
			t.Errorf("KindOf(%q) = %v %v, want %v %v", name, k, ok, c.k, c.ok)
		}
	}
}

func TestParseRefusesBadFields(t *testing.T) {
	for _, args := range []string{
		"TAIR.X 0 1 2",                        // no command
		"TAIR.X a 1 2 GET",                    // area not a number
		"TAIR.X 1024 1 2 GET",                 // area out of range
		"TAIR.X 0 -1 2 GET",                   // negative version
		"TAIR.X 0 1 4 GET",                    // no such protocol
		"TAIR.X 0 1 4n GET",                   // no such protocol, with a flag
		"TAIR.X 0 1 2x GET",                   // no such flag
		"TAIR.X 0 1 n GET",                    // a flag without a protocol
		"TAIR.X 0 1 02 GET",                   // not the protocol's digit
		"TAIR.X 0 1 2t GET",                   // a tracker flag without its id
		"TAIR.X 0 1 2t0 GET",                  // tracker id 0
		"TAIR.X 0 1 2t5n GET",                 // the tracker flag is last
		"TAIR.X 0 99999999999999999999 2 GET", // version overflows
	} {
		_, _, err := Parse(bytesFields(args))
		if err == nil {
			t.Errorf("Parse(%q) accepted", args)
		}
	}
	if _, _, err := Parse(bytesFields("TAIR.X 0 1 2")); err != ErrEnvelopeArity {
		t.Errorf("short envelope: %v", err)
	}
}

func bytesFields(s string) [][]byte {
	var out [][]byte
	for _, f := range strings.Fields(s) {
		out = append(out, []byte(f))
	}
	return out
}

func TestRefusalsRoundTrip(t *testing.T) {
	cases := []struct {
		r    Refusal
		text string
	}{
		{*NotMasterOf(7, 12), "-NOTMASTER bucket 7 table 12 (tair -3986)\r\n"},
		{Refusal{Reason: NotMaster, Bucket: 0, HasBucket: true, Table: 1, LeaseLapsed: true},
			"-NOTMASTER bucket 0 table 1: master lease lapsed (tair -3986)\r\n"},
		{Refusal{Reason: NotMaster, Table: 9, Note: "dataserver stopping"},
			"-NOTMASTER table 9 (dataserver stopping) (tair -3986)\r\n"},
		{Refusal{Reason: NotMaster, Bucket: 3, HasBucket: true, Table: 4, Note: "new master 127.0.0.1:1 unreachable"},
			"-NOTMASTER bucket 3 table 4 (new master 127.0.0.1:1 unreachable) (tair -3986)\r\n"},
		{*TryAgainOf(1023), "-TRYAGAIN bucket 1023 is migrating (tair -3984)\r\n"},
		{*ScriptConnOf(5), "-TRYSCRIPTCONN bucket 5 runs this script on a script connection (tair -20100)\r\n"},
	}
	for _, c := range cases {
		wire := resp.AppendErr(nil, c.r.Err())
		if string(wire) != c.text {
			t.Errorf("%+v encodes as %q, want %q", c.r, wire, c.text)
		}
		back, ok := Decode(wire)
		c.r.Note = "" // for people only: not decoded
		if !ok || back != c.r {
			t.Errorf("Decode(%q) = %+v %v, want %+v", wire, back, ok, c.r)
		}
	}
	for _, other := range []string{"+OK\r\n", "-ERR NOTMASTER\r\n", "-CLUSTERDOWN x\r\n", "$3\r\nabc\r\n", "-TIMEOUT x; the write may have applied\r\n"} {
		if r, ok := Decode([]byte(other)); ok {
			t.Errorf("Decode(%q) = %+v, want no refusal", other, r)
		}
	}
}

func TestUnsureSaysTheWriteMayHaveApplied(t *testing.T) {
	got := string(resp.AppendErr(nil, Unsure("slave x is unreachable")))
	if got != "-TIMEOUT slave x is unreachable; the write may have applied (tair -3989)\r\n" {
		t.Fatalf("Unsure = %q", got)
	}
}

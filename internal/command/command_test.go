package command

import (
	"reflect"
	"strings"
	"testing"
)

func TestNumKeysAt(t *testing.T) {
	split := func(s string) [][]byte {
		var out [][]byte
		for _, f := range strings.Fields(s) {
			out = append(out, []byte(f))
		}
		return out
	}
	for _, c := range []struct {
		cmd  string
		want []int
	}{
		{"LMPOP 2 a b LEFT", []int{2, 3}},
		{"ZUNION 2 a b", []int{2, 3}},
		{"ZUNIONSTORE d 2 a b WEIGHTS 1 2", []int{1, 3, 4}},
		// numkeys past the arguments: a syntax error, not keys
		{"LMPOP 5 a LEFT", nil},
		{"ZUNIONSTORE d 3 a b", []int{1}},
		{"LMPOP 0 a LEFT", nil},
		{"LMPOP x a LEFT", nil},
	} {
		args := split(c.cmd)
		if got := Lookup(args[0]).KeyIndexes(args); !reflect.DeepEqual(got, c.want) && !(len(got) == 0 && len(c.want) == 0) {
			t.Errorf("%s: keys %v, want %v", c.cmd, got, c.want)
		}
	}
}

func TestLowerASCII(t *testing.T) {
	var buf [32]byte
	if got, ok := LowerASCII(&buf, []byte("TAIR.Stat")); string(got) != "tair.stat" || !ok {
		t.Errorf("LowerASCII(TAIR.Stat) = %q, %v", got, ok)
	}
	full := strings.Repeat("A", 32)
	if got, ok := LowerASCII(&buf, []byte(full)); string(got) != strings.ToLower(full) || !ok {
		t.Errorf("LowerASCII of 32 bytes = %q, %v", got, ok)
	}
	// Longer than buf: as it is, for the caller to lower another way.
	long := []byte(strings.Repeat("X", 33))
	if got, ok := LowerASCII(&buf, long); &got[0] != &long[0] || ok {
		t.Errorf("LowerASCII of 33 bytes = %q, %v; want the name itself", got, ok)
	}
	if Lookup([]byte("GeT")) == nil || Lookup([]byte("GEORADIUSBYMEMBER_RO")) == nil {
		t.Error("Lookup does not fold the case")
	}
}

package dataserver

import (
	"slices"
	"testing"

	"github.com/tairkv/tair/resp"
)

// TestEntryNames: the names a stream entry's commands write, as its
// receiver would read them; unknown when a command's keys are.
func TestEntryNames(t *testing.T) {
	entryOf := func(area uint16, kind byte, p payload) *entry {
		e := &entry{kind: kind, payload: p.data}
		h := resp.AppendBulkInt(e.hdrBuf[:0], 7)
		h = resp.AppendBulkInt(h, 3)
		h = resp.AppendBulkInt(h, int64(area))
		e.hdr = resp.AppendBulk(h, []byte{kind})
		return e
	}
	cmds := [][][]byte{
		{[]byte("TAIR.REPLVER"), []byte("5")},
		{[]byte("SET"), []byte("k1"), []byte("v")},
		{[]byte("mset"), []byte("k2"), []byte("a"), []byte("k1"), []byte("b")},
		{[]byte("SMOVE"), []byte("s1"), []byte("s2"), []byte("m")},
	}
	names, ok := entryNames(entryOf(9, kindCmds, cmdsPayload(cmds)))
	want := []walkName{{9, "k1"}, {9, "k2"}, {9, "s1"}, {9, "s2"}}
	if !ok || !slices.Equal(names, want) {
		t.Fatalf("entryNames = %v, %v; want %v", names, ok, want)
	}
	for _, c := range [][][]byte{
		{[]byte("NOSUCHCOMMAND"), []byte("k")},
		{[]byte("FLUSHALL")},
	} {
		if names, ok := entryNames(entryOf(0, kindCmds, cmdsPayload([][][]byte{c}))); ok {
			t.Errorf("entryNames of %q = %v, want unknown", c[0], names)
		}
	}
	if _, ok := entryNames(entryOf(0, kindRecords, payload{data: resp.AppendBulk(nil, []byte("x"))})); ok {
		t.Error("a snapshot item's names are known")
	}
	if _, ok := decodeBulks([]byte("$5\r\nab")); ok {
		t.Error("decodeBulks took a cut bulk string")
	}
}

// TestRepairRequestBadInput: TAIR.REPAIR checks its arguments and leaves
// the connection usable.
func TestRepairRequestBadInput(t *testing.T) {
	_, nodes := cluster2(t, nil)
	c := dial(t, nodes[0].Addr())
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"TAIR.REPAIR", "0", "x"}, "-ERR wrong number of arguments for 'tair.repair' command"},
		{[]string{"TAIR.REPAIR", "0", "x", "0"}, "-ERR wrong number of arguments for 'tair.repair' command"},
		{[]string{"TAIR.REPAIR", "99999999", "x", "0", "k"}, "-ERR bad bucket"},
		{[]string{"TAIR.REPAIR", "-1", "x", "0", "k"}, "-ERR bad bucket"},
		{[]string{"TAIR.REPAIR", "0", "x", "70000", "k"}, "-ERR bad area"},
		{[]string{"TAIR.REPAIR", "1", "127.0.0.1:1", "0", "k"}, "-NOTMASTER"},
	} {
		if got := c.do(tc.args...); got != tc.want && !(tc.want == "-NOTMASTER" && len(got) > 10 && got[:10] == "-NOTMASTER") {
			t.Errorf("%q = %q, want %q", tc.args, got, tc.want)
		}
	}
	if got := c.do("PING"); got != "+PONG" {
		t.Fatalf("PING after bad TAIR.REPAIRs = %q", got)
	}
}

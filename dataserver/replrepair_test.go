package dataserver

import (
	"slices"
	"testing"
	"time"

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

// TestDroppedCopysNewHolderGetsTheWrite: a write that the bucket's old
// slave refuses because a newer table dropped its copy, while the master
// is still on the older table, never reached the slave that newer table
// names in its place. Once the master learns the table it brings that
// slave its records of the write's keys and waits for them: the write
// stands (+OK, not -TIMEOUT), and the new slave holds it at the master's
// version.
func TestDroppedCopysNewHolderGetsTheWrite(t *testing.T) {
	cs, nodes := clusterN(t, 3, func(_ int, c *Config) { c.ReplicationTimeout = 5 * time.Second })
	a, b, c := nodes[0], nodes[1], nodes[2]
	v2 := cs.getTable().Clone()
	v2.Version = 2
	v2.Serving[0] = []string{a.Addr(), b.Addr()}
	cs.setTable(v2)
	waitVersion(t, 2, a, b, c)
	// Table 3 gives b's copy to c; b and c learn it before a does.
	v3 := v2.Clone()
	v3.Version = 3
	v3.Serving[0] = []string{a.Addr(), c.Addr()}
	b.applyTable(v3)
	c.applyTable(v3)
	go func() {
		time.Sleep(30 * time.Millisecond)
		cs.setTable(v3)
	}()
	k := keyIn("moved-copy", 0, q, 0)
	if got := dial(t, a.Addr()).do(x(2, "SET", k, "1")...); got != "+OK" {
		t.Fatalf("a write refused by the dropped copy, its new holder repaired: %q", got)
	}
	if v, ok := engineGet(c, k); !ok || v != "1" {
		t.Fatalf("the new slave c holds %q, %v after the acknowledged write", v, ok)
	}
	ea, err1 := a.Engine().Get(engineKey(0, k))
	ec, err2 := c.Engine().Get(engineKey(0, k))
	if err1 != nil || err2 != nil || ea.Version != ec.Version {
		t.Fatalf("versions: master %d (%v), new slave %d (%v)", ea.Version, err1, ec.Version, err2)
	}
	if hasKey(b, k) {
		t.Fatal("the dropped copy b applied the write")
	}
	if a.bucket(0).diverged.Load() {
		t.Fatal("the master's copy is marked diverged: every copy the table names has the write")
	}
	if n := counterValue(t, a.m.repairedWrites); n != 1 {
		t.Fatalf("%v writes repaired, want 1", n)
	}
}

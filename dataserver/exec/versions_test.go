package exec

import (
	"testing"
	"time"
)

// TestReplicaTakesTheMastersVersions: a replica's stores take the versions
// the master's write gave the records (versions.go), whatever its own
// copy's were: a copy that missed a write, one whose clock expired the
// record before the master's did, and every key of a multi-key write.
// Without the versions entry each of these leaves the replica's version
// behind the master's, and after a failover a client's versioned write
// (Tair's optimistic lock) would be judged against the wrong version.
func TestReplicaTakesTheMastersVersions(t *testing.T) {
	onEngines(t, testReplicaTakesTheMastersVersions)
}

func testReplicaTakesTheMastersVersions(t *testing.T, engine string) {
	mclk, sclk := newTestClock(), newTestClock()
	m, s := openEngine(t, engine, mclk), openEngine(t, engine, sclk)
	mx, sx := New(m, Options{Now: mclk.Now}), New(s, Options{Now: sclk.Now})
	run := func(replicate bool, line string) {
		t.Helper()
		out, prop := mx.Exec(0, 2, false, toArgs(splitLine(line)), nil)
		if len(out) > 0 && out[0] == '-' {
			t.Fatalf("%s on the master: %q", line, out)
		}
		if !replicate {
			return
		}
		if pc, rep := replay(sx, 0, prop); pc != nil {
			t.Fatalf("%s: the replica refused %q: %q", line, pc, rep)
		}
	}
	same := func(when string, keys ...string) {
		t.Helper()
		for _, k := range keys {
			if mv, sv := recordVersion(t, m, mx, k), recordVersion(t, s, sx, k); mv != sv || mv == 0 {
				t.Errorf("%s: %s is at version %d on the master, %d on the replica", when, k, mv, sv)
			}
		}
	}

	// A write the replica missed: the next one brings it level.
	run(true, "SET a 1")
	run(false, "SET a 2")
	run(true, "SET a 3")
	same("after a write the replica missed", "a")

	// The replica's clock is ahead: it replays a write to a record it
	// has already expired, which the master still held.
	run(true, "SET b 1 PX 1000")
	mclk.Advance(900 * time.Millisecond)
	sclk.Advance(1100 * time.Millisecond)
	run(true, "TAIR.PUTV b 2 0")
	same("after a write the replica replayed past the record's expiry", "b")
	if got, want := execRaw(sx, "TAIR.GETV", "b"), execRaw(mx, "TAIR.GETV", "b"); got != want {
		t.Errorf("TAIR.GETV b on the replica %q, on the master %q", got, want)
	}

	// Every key of a multi-key write, one of them new to the replica.
	run(false, "SET c 1")
	run(true, "MSET c 2 d 1 a 4")
	same("after MSET", "a", "c", "d")

}

// TestVersionsEntryScope: a short entry gives its version to the next
// command alone; a long one to the commands after it, by key, up to the
// next entry.
func TestVersionsEntryScope(t *testing.T) {
	clk := newTestClock()
	x := New(openEngine(t, "rdb", clk), Options{Now: clk.Now})
	cmd := func(l string) [][]byte { return toArgs(splitLine(l)) }
	prop := [][][]byte{
		cmd("TAIR.REPLVER 7"), cmd("SET a 1"), cmd("SET b 1"),
		cmd("TAIR.REPLVER c 9 d 4"), cmd("SET c 1"), cmd("SET e 1"), cmd("SET d 1"),
		cmd("TAIR.REPLVER 3"), cmd("SET c 2"), cmd("SET d 2"),
	}
	if pc, rep := replay(x, 0, prop); pc != nil {
		t.Fatalf("the replica refused %q: %q", pc, rep)
	}
	for k, want := range map[string]int64{"a": 7, "b": 1, "c": 3, "e": 1, "d": 5} {
		if got := recordVersion(t, x.eng, x, k); got != want {
			t.Errorf("%s at version %d, want %d", k, got, want)
		}
	}
}

package dataserver

import (
	"strings"
	"testing"
	"time"

	"github.com/tairkv/tair/internal/luascript"
)

// scriptConn is the TAIR.SCRIPT form of a command (a proxy's script
// connection), for bucket 0.
func scriptConn(args ...string) []string {
	return append([]string{"TAIR.SCRIPT", "0"}, x(1, args...)...)
}

// Scripts in an envelope (a proxy's pipelined connection): one the node
// has not cached is refused with TRYSCRIPTCONN, unrun; a cached one runs
// there and its writes reach the slave; one that runs past the budget
// before writing is stopped, writes nothing and is refused, and stays
// refused; one that wrote within the budget runs to its end.
func TestScriptPipelined(t *testing.T) {
	_, nodes := cluster2(t, nil)
	a, b := nodes[0], nodes[1]
	k := keyIn("sp", 0, q, 0) // bucket 0: master a, slave b
	ca := dial(t, a.Addr())
	refused := "-TRYSCRIPTCONN bucket 0 runs this script on a script connection (tair -20100)"

	incr := "local v = tonumber(redis.call('GET', KEYS[1]) or '0') + 1 redis.call('SET', KEYS[1], v) return v"
	sha := luascript.Sha1Hex([]byte(incr))
	if got := ca.do(x(1, "EVALSHA", sha, "1", k)...); got != refused {
		t.Fatalf("EVALSHA of a script the node does not hold: %q, want %q", got, refused)
	}
	if got := ca.do(x(1, "EVAL", incr, "1", k)...); got != refused {
		t.Fatalf("EVAL of a script the node does not hold: %q, want %q", got, refused)
	}
	if got := ca.do(scriptConn("SCRIPT", "LOAD", incr)...); got != "$40\r\n"+sha {
		t.Fatalf("SCRIPT LOAD: %q", got)
	}
	for i := 1; i <= 3; i++ {
		want := ":" + strconvFormat(int64(i))
		if got := ca.do(x(1, "EVALSHA", sha, "1", k)...); got != want {
			t.Fatalf("pipelined EVALSHA %d: %q, want %q", i, got, want)
		}
	}
	if got := ca.do(x(1, "EVAL", incr, "1", k)...); got != ":4" {
		t.Fatalf("pipelined EVAL of the cached script: %q", got)
	}
	if v, ok := engineGet(b, k); !ok || v != "4" {
		t.Fatalf("the slave holds %q %v, want 4", v, ok)
	}
	// Without keys, or FCALL: the script connection's (never run here).
	if got := ca.do(x(1, "EVALSHA", sha, "0")...); !strings.HasPrefix(got, "-TRYSCRIPTCONN ") {
		t.Fatalf("pipelined EVALSHA without keys: %q", got)
	}

	// Past the budget before writing: stopped, nothing written, refused
	// (the proxy then runs it on a script connection); found slow after
	// slowRuns such runs, and refused unrun from then on.
	late := "local x = 0 for i = 1, 3e7 do x = x + 1 end redis.call('SET', KEYS[1], 'late') return x"
	lateSha := luascript.Sha1Hex([]byte(late))
	ca.do(scriptConn("SCRIPT", "LOAD", late)...)
	for i := 0; i < slowRuns; i++ {
		start := time.Now()
		if got := ca.do(x(1, "EVALSHA", lateSha, "1", k)...); got != refused {
			t.Fatalf("a script past the budget: %q, want %q", got, refused)
		}
		if took := time.Since(start); took > time.Second {
			t.Fatalf("the script past the budget was stopped after %v", took)
		}
	}
	if v, _ := engineGet(a, k); v != "4" {
		t.Fatalf("the stopped script wrote: %q", v)
	}
	if a.scripting().cached(lateSha).pipelinable(time.Now) {
		t.Fatalf("a script stopped %d times in a row is not found slow", slowRuns)
	}
	if got := ca.do(x(1, "EVALSHA", lateSha, "1", k)...); got != refused {
		t.Fatalf("the slow script again: %q", got)
	}

	// Wrote within the budget: it runs to its end, once each time.
	early := "redis.call('INCR', KEYS[1]) local x = 0 for i = 1, 3e6 do x = x + 1 end return redis.call('GET', KEYS[1])"
	earlySha := luascript.Sha1Hex([]byte(early))
	ca.do(scriptConn("SCRIPT", "LOAD", early)...)
	for i := 5; i < 5+slowRuns; i++ {
		want := "$1\r\n" + strconvFormat(int64(i))
		if got := ca.do(x(1, "EVALSHA", earlySha, "1", k)...); got != want {
			t.Fatalf("a script that wrote before the budget: %q, want %q", got, want)
		}
	}
	if v, ok := engineGet(b, k); !ok || v != strconvFormat(int64(4+slowRuns)) {
		t.Fatalf("the slave holds %q %v after it, want %d", v, ok, 4+slowRuns)
	}
	if got := ca.do(x(1, "EVALSHA", earlySha, "1", k)...); got != refused {
		t.Fatalf("the script that ran long is not refused after: %q", got)
	}
}

// One slow run among quick ones (a descheduled thread) does not take a
// script off the pipelined connections; slowRuns in a row do.
func TestScriptFoundSlow(t *testing.T) {
	sc := &cachedScript{}
	for i := 0; i < 10; i++ {
		sc.ended(2 * pipelinedBudget)
		sc.ended(pipelinedBudget / 2)
	}
	if !sc.pipelinable(time.Now) {
		t.Fatal("alternating slow and quick runs found slow")
	}
	for i := 0; i < slowRuns; i++ {
		sc.ended(2 * pipelinedBudget)
	}
	if sc.pipelinable(time.Now) {
		t.Fatal("slowRuns slow runs in a row not found slow")
	}
	if !sc.pipelinable(func() time.Time { return time.Now().Add(slowFor + time.Second) }) {
		t.Fatal("still found slow after slowFor")
	}
}

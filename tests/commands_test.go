package tests

import (
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tairkv/tair/cluster"
	"github.com/tairkv/tair/internal/testcluster"
	"github.com/tairkv/tair/internal/testutil"
)

// The cluster-wide commands and the Tair commands, through a real proxy
// in front of three replicated dataservers.
func TestClusterCommandsThroughProxy(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{Options: cluster.Options{DataServers: 3, Copies: 2, Buckets: 64}})
	p := c.Client(0)
	x := ctx(t)

	// DBSIZE counts the area exactly (masters only, not the slave copies)
	// and SCAN walks every bucket of every node, each key once.
	want := map[string]bool{}
	for i := 0; i < 500; i++ {
		k := fmt.Sprintf("scan:%d", i)
		want[k] = true
		if err := p.Set(x, k, "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := p.DBSize(x).Result(); err != nil || n != 500 {
		t.Fatalf("DBSIZE = %d, %v; want 500", n, err)
	}
	seen := map[string]int{}
	var cursor uint64
	for {
		keys, next, err := p.Scan(x, cursor, "scan:*", 50).Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			seen[k]++
		}
		if cursor = next; cursor == 0 {
			break
		}
	}
	if len(seen) != 500 {
		t.Fatalf("SCAN returned %d distinct keys, want 500", len(seen))
	}
	for k, n := range seen {
		if n != 1 || !want[k] {
			t.Fatalf("SCAN returned %s %d times", k, n)
		}
	}

	// Atomic commands across buckets are refused; hash tags keep keys together.
	if err := p.MSetNX(x, "cross:a", "1", "cross:b", "2").Err(); err == nil ||
		err.Error() != "CROSSSLOT Keys in request don't hash to the same slot" {
		t.Fatalf("MSETNX across buckets = %v", err)
	}
	if ok, err := p.MSetNX(x, "{t}a", "1", "{t}b", "2").Result(); err != nil || !ok {
		t.Fatalf("MSETNX with a hash tag = %v, %v", ok, err)
	}

	// Tair commands.
	do := func(args ...any) any {
		t.Helper()
		v, err := p.Do(x, args...).Result()
		if err != nil && err != redis.Nil {
			return "ERR:" + err.Error()
		}
		return v
	}
	checks := []struct {
		args []any
		want string
	}{
		{[]any{"tair.putv", "lock", "a", 9}, "OK"},
		{[]any{"tair.putv", "lock", "b", 9}, "ERR:VERERROR version mismatch (tair -3997)"},
		{[]any{"tair.getv", "lock"}, "[a 1]"},
		{[]any{"tair.incr", "cnt", 5, "INIT", 10, "MAX", 16}, "15"},
		{[]any{"tair.incr", "cnt", 5, "MAX", 16}, "ERR:COUNTEROUTOFRANGE counter out of range (tair -5114)"},
		{[]any{"tair.pput", "user", "b", "2"}, "OK"},
		{[]any{"tair.pput", "user", "a", "1"}, "OK"},
		{[]any{"tair.pput", "user", "c", "3"}, "OK"},
		{[]any{"tair.prange", "user", "", "b"}, "[a 1 b 2]"},
		{[]any{"tair.prange", "user", "", "", "REV", "LIMIT", 2}, "[c 3 b 2]"},
		{[]any{"tair.itemadd", "q", 3, "x", "y", "z", "w"}, "3"},
		{[]any{"tair.itemget", "q", 0, 10}, "[y z w]"},
		{[]any{"tair.itemgetdel", "q", 0, 1}, "[y]"},
		{[]any{"tair.hide", "lock"}, "1"},
		{[]any{"get", "lock"}, "<nil>"},
		{[]any{"tair.gethidden", "lock"}, "a"},
		{[]any{"hset", "h", "f1", "v1", "f2", "v2"}, "2"},
		{[]any{"hget", "h", "f2"}, "v2"},
		{[]any{"rpush", "l", "a", "b", "c"}, "3"},
		{[]any{"lrange", "l", 0, -1}, "[a b c]"},
		{[]any{"zadd", "z", 2, "b", 1, "a"}, "2"},
		// RESP3 (go-redis says HELLO 3): member/score pairs, as Redis 7.
		{[]any{"zrange", "z", 0, -1, "withscores"}, "[[a 1] [b 2]]"},
		{[]any{"get", "h"}, "ERR:WRONGTYPE Operation against a key holding the wrong kind of value"},
	}
	for _, ch := range checks {
		if got := fmt.Sprint(do(ch.args...)); got != ch.want {
			t.Errorf("%v = %s, want %s", ch.args, got, ch.want)
		}
	}
}

// WATCH aborts EXEC when another client changed a watched key.
func TestWatchMultiExecThroughProxy(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{Options: cluster.Options{DataServers: 3, Copies: 2, Buckets: 64}})
	p := c.Client(0)
	x := ctx(t)
	if err := p.Set(x, "{acct}:balance", "100", 0).Err(); err != nil {
		t.Fatal(err)
	}
	// Untouched: the transaction commits.
	err := p.Watch(x, func(tx *redis.Tx) error {
		_, err := tx.TxPipelined(x, func(pipe redis.Pipeliner) error {
			pipe.DecrBy(x, "{acct}:balance", 30)
			pipe.Incr(x, "{acct}:ops")
			return nil
		})
		return err
	}, "{acct}:balance")
	if err != nil {
		t.Fatalf("uncontended transaction: %v", err)
	}
	// Changed by another client between WATCH and EXEC: aborted.
	err = p.Watch(x, func(tx *redis.Tx) error {
		if err := c.Client(0).Set(x, "{acct}:balance", "0", 0).Err(); err != nil {
			return err
		}
		_, err := tx.TxPipelined(x, func(pipe redis.Pipeliner) error {
			pipe.DecrBy(x, "{acct}:balance", 30)
			return nil
		})
		return err
	}, "{acct}:balance")
	if err != redis.TxFailedErr {
		t.Fatalf("contended transaction = %v, want redis.TxFailedErr", err)
	}
	vals, _ := p.MGet(x, "{acct}:balance", "{acct}:ops").Result()
	got := fmt.Sprint(vals)
	if got != "[0 1]" {
		t.Fatalf("after the transactions: %s, want [0 1]", got)
	}
}

// TAIR.HOTKEYS names a key that takes most of the traffic, with its rate.
func TestHotKeysThroughProxy(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{Options: cluster.Options{DataServers: 3, Copies: 2, Buckets: 64}})
	p := c.Client(0)
	x := ctx(t)
	if err := p.Set(x, "hot:key", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	for round := 0; round < 6; round++ {
		pipe := p.Pipeline()
		for i := 0; i < 5000; i++ {
			pipe.Get(x, "hot:key")
			if i%100 == 0 {
				pipe.Get(x, fmt.Sprintf("cold:%d", i))
			}
		}
		if _, err := pipe.Exec(x); err != nil && err != redis.Nil {
			t.Fatal(err)
		}
	}
	// The detector publishes per 1 s window: within 1.1 s the window
	// that saw the traffic is out.
	testutil.EventuallyErr(t, 1100*time.Millisecond, func() error {
		res, err := p.Do(x, "tair.hotkeys").Slice()
		if err != nil {
			t.Fatal(err)
		}
		if len(res) != 2 || res[0] != "hot:key" {
			return fmt.Errorf("TAIR.HOTKEYS = %v, want [hot:key <rate>]", res)
		}
		if rate, ok := res[1].(int64); !ok || rate < 1000 {
			return fmt.Errorf("hot:key rate %v, want at least 1000/s", res[1])
		}
		return nil
	})
	if other, err := p.Do(x, "tair.hotkeys", 7).Slice(); err != nil || len(other) != 0 {
		t.Fatalf("TAIR.HOTKEYS 7 = %v, %v; want empty", other, err)
	}
}

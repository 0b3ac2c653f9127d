package tests

// Streams through the real proxy with go-redis: XREAD BLOCK and
// XREADGROUP BLOCK woken by an XADD from another connection, consumer
// groups end to end, keys of several buckets refused, and a stream (its
// entries, groups and pending entries) surviving the kill of its master
// (copy count 2).

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tairkv/tair/cluster"
	"github.com/tairkv/tair/internal/route"
	"github.com/tairkv/tair/internal/testcluster"
	"github.com/tairkv/tair/internal/testutil"
)

func TestStreamsThroughProxy(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{Options: cluster.Options{DataServers: 3, Copies: 2, Buckets: 64}})
	a, b := c.Client(0), c.Client(0)
	x := ctx(t)

	// XREAD BLOCK with $ is woken by an XADD on another connection, and
	// gets that entry (not the ones before the call).
	if _, err := a.XAdd(x, &redis.XAddArgs{Stream: "{st}s", ID: "1-1", Values: []string{"old", "1"}}).Result(); err != nil {
		t.Fatal(err)
	}
	type res struct {
		s   []redis.XStream
		err error
		d   time.Duration
	}
	done := make(chan res, 1)
	go func() {
		start := time.Now()
		s, err := a.XRead(context.Background(), &redis.XReadArgs{Streams: []string{"{st}s", "$"}, Block: 5 * time.Second}).Result()
		done <- res{s, err, time.Since(start)}
	}()
	time.Sleep(300 * time.Millisecond)
	id, err := b.XAdd(x, &redis.XAddArgs{Stream: "{st}s", Values: []string{"new", "2"}}).Result()
	if err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-done:
		if r.err != nil || len(r.s) != 1 || len(r.s[0].Messages) != 1 || r.s[0].Messages[0].ID != id ||
			!reflect.DeepEqual(r.s[0].Messages[0].Values, map[string]any{"new": "2"}) {
			t.Fatalf("XREAD BLOCK $ = %+v, %v", r.s, r.err)
		}
		if r.d > 2*time.Second {
			t.Errorf("XREAD BLOCK woke %v after the call", r.d)
		}
	case <-time.After(4 * time.Second):
		t.Fatal("XREAD BLOCK was not woken by XADD")
	}

	// A timeout answers a null (go-redis: redis.Nil) after about BLOCK.
	start := time.Now()
	if _, err := a.XRead(x, &redis.XReadArgs{Streams: []string{"{st}s", "$"}, Block: 300 * time.Millisecond}).Result(); err != redis.Nil {
		t.Fatalf("XREAD BLOCK 300 on nothing new = %v, want redis.Nil", err)
	}
	if d := time.Since(start); d < 250*time.Millisecond || d > 2*time.Second {
		t.Errorf("XREAD BLOCK 300 answered after %v", d)
	}
	// $ on a missing key: the first entry ever added wakes it.
	go func() {
		s, err := a.XRead(context.Background(), &redis.XReadArgs{Streams: []string{"{st}new", "$"}, Block: 5 * time.Second}).Result()
		done <- res{s, err, 0}
	}()
	time.Sleep(200 * time.Millisecond)
	if err := b.XAdd(x, &redis.XAddArgs{Stream: "{st}new", ID: "5-5", Values: []string{"f", "v"}}).Err(); err != nil {
		t.Fatal(err)
	}
	if r := <-done; r.err != nil || len(r.s) != 1 || r.s[0].Messages[0].ID != "5-5" {
		t.Fatalf("XREAD BLOCK $ of a missing key = %+v, %v", r.s, r.err)
	}
	// Without BLOCK: one attempt, and errors as Redis.
	if s, err := a.XRead(x, &redis.XReadArgs{Streams: []string{"{st}s", "0"}, Count: 1, Block: -1}).Result(); err != nil || len(s[0].Messages) != 1 || s[0].Messages[0].ID != "1-1" {
		t.Fatalf("XREAD COUNT 1 = %+v, %v", s, err)
	}
	if err := a.Do(x, "XREAD", "BLOCK", "-1", "STREAMS", "{st}s", "$").Err(); err == nil || err.Error() != "ERR timeout is negative" {
		t.Fatalf("XREAD BLOCK -1 = %v", err)
	}
	if err := a.Do(x, "XREAD", "BLOCK", "10", "STREAMS", "{st}s").Err(); err == nil || !strings.HasPrefix(err.Error(), "ERR") {
		t.Fatalf("XREAD with no id = %v", err)
	}
	// Keys of two buckets: CROSSSLOT, as other atomic multi-key commands.
	k1, k2 := twoBuckets(t, c)
	if err := a.Do(x, "XREAD", "STREAMS", k1, k2, "0", "0").Err(); err == nil || !strings.HasPrefix(err.Error(), "CROSSSLOT") {
		t.Fatalf("XREAD over two buckets = %v", err)
	}

	// Consumer groups end to end.
	if err := a.XGroupCreateMkStream(x, "{st}q", "g", "$").Err(); err != nil {
		t.Fatal(err)
	}
	if err := a.XGroupCreate(x, "{st}q", "g", "$").Err(); err == nil || err.Error() != "BUSYGROUP Consumer Group name already exists" {
		t.Fatalf("second XGROUP CREATE = %v", err)
	}
	gdone := make(chan res, 1)
	go func() {
		s, err := a.XReadGroup(context.Background(), &redis.XReadGroupArgs{Group: "g", Consumer: "alice", Streams: []string{"{st}q", ">"}, Block: 5 * time.Second}).Result()
		gdone <- res{s, err, 0}
	}()
	time.Sleep(300 * time.Millisecond)
	for i := 1; i <= 3; i++ {
		if err := b.XAdd(x, &redis.XAddArgs{Stream: "{st}q", ID: fmt.Sprintf("%d-0", i), Values: []string{"job", fmt.Sprint(i)}}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	r := <-gdone
	if r.err != nil || len(r.s) != 1 || len(r.s[0].Messages) == 0 || r.s[0].Messages[0].ID != "1-0" {
		t.Fatalf("XREADGROUP BLOCK = %+v, %v", r.s, r.err)
	}
	got := len(r.s[0].Messages)
	s, err := b.XReadGroup(x, &redis.XReadGroupArgs{Group: "g", Consumer: "bob", Streams: []string{"{st}q", ">"}, Block: -1}).Result()
	bobs := 0
	if err == nil && len(s) == 1 {
		bobs = len(s[0].Messages)
	} else if err != redis.Nil {
		t.Fatalf("bob's XREADGROUP = %+v, %v", s, err)
	}
	if got+bobs != 3 {
		t.Fatalf("alice got %d entries and bob %d, want 3 in all", got, bobs)
	}
	if n, err := a.XAck(x, "{st}q", "g", "1-0").Result(); err != nil || n != 1 {
		t.Fatalf("XACK = %d, %v", n, err)
	}
	p, err := a.XPending(x, "{st}q", "g").Result()
	if err != nil || p.Count != 2 || p.Lower != "2-0" || p.Higher != "3-0" {
		t.Fatalf("XPENDING = %+v, %v", p, err)
	}
	if ids, err := a.XClaimJustID(x, &redis.XClaimArgs{Stream: "{st}q", Group: "g", Consumer: "carol", MinIdle: 0, Messages: []string{"2-0", "3-0"}}).Result(); err != nil || !reflect.DeepEqual(ids, []string{"2-0", "3-0"}) {
		t.Fatalf("XCLAIM JUSTID = %v, %v", ids, err)
	}
	msgs, next, err := a.XAutoClaim(x, &redis.XAutoClaimArgs{Stream: "{st}q", Group: "g", Consumer: "dave", Start: "0", Count: 1}).Result()
	if err != nil || len(msgs) != 1 || msgs[0].ID != "2-0" || next != "3-0" {
		t.Fatalf("XAUTOCLAIM = %+v %q, %v", msgs, next, err)
	}
	ext, err := a.XPendingExt(x, &redis.XPendingExtArgs{Stream: "{st}q", Group: "g", Start: "-", End: "+", Count: 10}).Result()
	if err != nil || len(ext) != 2 || ext[0].Consumer != "dave" || ext[0].RetryCount != 2 || ext[1].Consumer != "carol" || ext[1].RetryCount != 1 {
		t.Fatalf("XPENDING - + 10 = %+v, %v", ext, err)
	}
	groups, err := a.XInfoGroups(x, "{st}q").Result()
	if err != nil || len(groups) != 1 || groups[0].Pending != 2 || groups[0].LastDeliveredID != "3-0" || groups[0].EntriesRead != 3 || groups[0].Lag != 0 {
		t.Fatalf("XINFO GROUPS = %+v, %v", groups, err)
	}
	if err := a.Do(x, "XREADGROUP", "GROUP", "nog", "c", "BLOCK", "100", "STREAMS", "{st}q", ">").Err(); err == nil ||
		err.Error() != "NOGROUP No such key '{st}q' or consumer group 'nog' in XREADGROUP with GROUP option" {
		t.Fatalf("XREADGROUP of a missing group = %v", err)
	}
	if typ, err := a.Type(x, "{st}q").Result(); err != nil || typ != "stream" {
		t.Fatalf("TYPE = %q, %v", typ, err)
	}

	if s1, err := a.XRange(x, "{st}s", "-", "+").Result(); err != nil || len(s1) != 2 {
		t.Fatalf("XRANGE = %+v, %v", s1, err)
	}

	// COMMAND GETKEYS finds the keys where redis-server does (cluster
	// clients route XREAD and XREADGROUP by it). Not compared: an
	// unbalanced STREAMS list ("XREAD STREAMS a b 0"), where the table
	// finds no key (as Redis's xreadGetKeys, what Redis Cluster routes by)
	// and Redis's GETKEYS, which follows the key spec, takes half of what
	// follows; and an option value spelled "streams" before STREAMS
	// ("XREADGROUP GROUP streams c STREAMS a >"), where the key spec's
	// keyword search stops early: the keys here are the ones the command
	// reads.
	rd := redis.NewClient(&redis.Options{Addr: testutil.StartRedis(t), MaxRetries: -1})
	t.Cleanup(func() { _ = rd.Close() })
	for _, l := range []string{
		"XREAD STREAMS a b 0 0", "XREAD COUNT 5 BLOCK 10 STREAMS a 0", "XREAD BLOCK 0 STREAMS streams 0",
		"XREAD STREAMS a", "XREADGROUP GROUP g c NOACK STREAMS a b > >", "xread count 1 streams a b c 0 0 0",
		"XREADGROUP GROUP g c COUNT 1 BLOCK 5 STREAMS a 0", "XADD a * f v", "XGROUP CREATE a g $", "XINFO STREAM a",
		"XCLAIM a g c 0 1-1", "XAUTOCLAIM a g c 0 0", "XPENDING a g", "XSETID a 1-1", "XTRIM a MAXLEN 1",
	} {
		args := []any{"COMMAND", "GETKEYS"}
		for _, w := range strings.Fields(l) {
			args = append(args, w)
		}
		got, gerr := a.Do(x, args...).Result()
		want, werr := rd.Do(x, args...).Result()
		if fmt.Sprint(got, gerr) != fmt.Sprint(want, werr) {
			t.Errorf("COMMAND GETKEYS %s: %v %v, redis-server %v %v", l, got, gerr, want, werr)
		}
	}
}

// twoBuckets returns two keys of different buckets.
func twoBuckets(t *testing.T, c *testcluster.Cluster) (string, string) {
	t.Helper()
	q := c.Table().Buckets
	b0 := route.BucketOf([]byte("st:0"), q)
	for i := 1; ; i++ {
		k := fmt.Sprintf("st:%d", i)
		if route.BucketOf([]byte(k), q) != b0 {
			return "st:0", k
		}
	}
}

// TestStreamSurvivesMasterFailover: with two copies, a stream with
// groups and pending entries reads the same from the slave promoted when
// its master is killed.
func TestStreamSurvivesMasterFailover(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{Options: cluster.Options{DataServers: 3, Copies: 2, Buckets: 64}})
	p := c.Client(0)
	x := ctx(t)
	const key = "failover:stream"
	for i := 0; i < 120; i++ {
		args := &redis.XAddArgs{Stream: key, Values: []string{"n", fmt.Sprint(i)}}
		if i%40 == 39 {
			args.MaxLen, args.Approx = 50, true
		}
		if err := p.XAdd(x, args).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.XGroupCreate(x, key, "g", "0").Err(); err != nil {
		t.Fatal(err)
	}
	if err := p.XReadGroup(x, &redis.XReadGroupArgs{Group: "g", Consumer: "c1", Streams: []string{key, ">"}, Count: 10, Block: -1}).Err(); err != nil {
		t.Fatal(err)
	}
	if err := p.XReadGroup(x, &redis.XReadGroupArgs{Group: "g", Consumer: "c2", Streams: []string{key, ">"}, Count: 5, Block: -1, NoAck: true}).Err(); err != nil {
		t.Fatal(err)
	}
	snapshot := func() (any, error) {
		e, err := p.XRange(x, key, "-", "+").Result()
		if err != nil {
			return nil, err
		}
		pe, err := p.XPendingExt(x, &redis.XPendingExtArgs{Stream: key, Group: "g", Start: "-", End: "+", Count: 100}).Result()
		if err != nil {
			return nil, err
		}
		for i := range pe {
			pe[i].Idle = 0
		}
		g, err := p.XInfoGroups(x, key).Result()
		if err != nil {
			return nil, err
		}
		info, err := p.XInfoStream(x, key).Result()
		return []any{e, pe, g, info}, err
	}
	before, err := snapshot()
	if err != nil {
		t.Fatal(err)
	}
	tb := c.Table()
	master := c.Node(tb.Master(route.BucketOf([]byte(key), tb.Buckets)))
	if master == "" {
		t.Fatal("no master for the stream's bucket")
	}
	c.Kill(master)
	var after any
	testutil.EventuallyErr(t, 20*time.Second, func() error {
		var err error
		after, err = snapshot()
		return err
	})
	if !reflect.DeepEqual(before, after) {
		t.Fatalf("the stream after the failover differs:\nbefore %v\nafter  %v", before, after)
	}
	// The promoted master goes on with the group where the old one was.
	s, err := p.XReadGroup(x, &redis.XReadGroupArgs{Group: "g", Consumer: "c1", Streams: []string{key, ">"}, Count: 1, Block: -1}).Result()
	if err != nil || len(s) != 1 || len(s[0].Messages) != 1 {
		t.Fatalf("XREADGROUP after the failover = %+v, %v", s, err)
	}
	if id, err := p.XAdd(x, &redis.XAddArgs{Stream: key, Values: []string{"n", "after"}}).Result(); err != nil || id == "" {
		t.Fatalf("XADD after the failover = %q, %v", id, err)
	}
}

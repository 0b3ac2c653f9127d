package dataserver

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/tairkv/tair/engines"
	"github.com/tairkv/tair/internal/route"
	"github.com/tairkv/tair/internal/testutil"
)

// digestBlob is d as a digest item's record (the payload's bulk string).
func digestBlob(t *testing.T, d *digestItem) []byte {
	t.Helper()
	p := d.payload().data
	i := bytes.Index(p, []byte("\r\n"))
	if i < 0 || !bytes.HasSuffix(p, []byte("\r\n")) {
		t.Fatalf("digest payload %q is not a bulk string", p)
	}
	return p[i+2 : len(p)-2]
}

// TestResumeDigestApply: a destination resuming its copy applies digest
// items in order: a name of its own in an item's interval (lo, hi] that
// the item does not list is deleted, in both namespaces (a name exactly
// at hi included, one exactly at lo left to the item before); a listed
// name whose digest differs, or that it lacks, is reported (by index,
// on the ACK); an equal name, and one the item says is sent whole, are
// left as they are. The first item covers from -inf, the last to +inf.
func TestResumeDigestApply(t *testing.T) {
	_, nodes := cluster2(t, nil)
	s := nodes[0]
	const b = route.BucketID(3)
	put := func(key, v string) {
		if _, err := s.Engine().Put(engineKey(b, key), []byte(v), engines.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range []string{"a", "b", "c", "d", "e", "f", "g", "z"} {
		put(k, "v-"+k)
	}
	put("p", "plain") // a name in both namespaces
	if _, err := s.Engine().PrefixPut(engineKey(b, "p"), []byte("s1"), []byte("x"), engines.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	var h xxhash.Digest
	sum := func(key string) uint64 {
		v, held, _, _, err := s.nameDigest(&h, b, walkName{0, key}, false)
		if err != nil || !held {
			t.Fatalf("digest of %q: %v held %v", key, err, held)
		}
		return v
	}
	name := func(k string) *walkName { return &walkName{0, k} }
	const session = "mig-test"
	bk := s.bucket(b)
	bk.lock()
	defer bk.unlock()
	bk.inMig = session
	s.beginResumeLocked(bk, session)
	if got := len(bk.resume.names); got != 9 {
		t.Fatalf("the resumed copy lists %d names, want 9", got)
	}
	held := func(k string) bool {
		_, err := s.Engine().Get(engineKey(b, k))
		kvs, _ := s.Engine().PrefixRange(engineKey(b, k), engines.RangeOptions{})
		return err == nil || len(kvs) > 0
	}
	apply := func(seq uint64, d *digestItem) string {
		t.Helper()
		dec, err := decodeDigest(digestBlob(t, d))
		if err != nil {
			t.Fatal(err)
		}
		var needs []string
		if !s.applyDigestItem(bk, item{seq: seq, bucket: b, kind: kindDigest, record: digestBlob(t, dec)}, session, &needs) {
			t.Fatalf("digest item %d refused", seq)
		}
		return strings.Join(needs, ";")
	}
	sumA, sumC := sum("a"), sum("c")

	// (-inf, c]: a equal, bb lacking here, c different; b unlisted.
	got := apply(7, &digestItem{hi: name("c"), names: []digestName{
		{name: walkName{0, "a"}, sum: sumA}, {name: walkName{0, "bb"}, sum: 1}, {name: walkName{0, "c"}, sum: sumC + 1}}})
	if got != "7:1-2" {
		t.Fatalf("report of the first item = %q, want 7:1-2 (bb lacking, c different)", got)
	}
	// (c, e]: d sent whole; e, exactly at hi, unlisted; c, exactly at
	// lo, is the first item's (unlisted here, kept).
	if got := apply(8, &digestItem{lo: name("c"), hi: name("e"), names: []digestName{{name: walkName{0, "d"}, whole: true}}}); got != "" {
		t.Fatalf("report of the second item = %q, want none", got)
	}
	// (e, +inf): f equal; g, p (both namespaces) and z unlisted.
	if got := apply(9, &digestItem{lo: name("e"), names: []digestName{{name: walkName{0, "f"}, sum: sum("f")}}}); got != "" {
		t.Fatalf("report of the last item = %q, want none", got)
	}
	for k, want := range map[string]bool{"a": true, "b": false, "c": true, "d": true, "e": false, "f": true, "g": false, "p": false, "z": false} {
		if held(k) != want {
			t.Fatalf("after the digests, %q held = %v, want %v", k, !want, want)
		}
	}
	for _, k := range []string{"a", "c", "d", "f"} {
		e, err := s.Engine().Get(engineKey(b, k))
		if err != nil || string(e.Value) != "v-"+k {
			t.Fatalf("%q = %q %v after the digests, want it untouched", k, e.Value, err)
		}
	}
	if sum("a") != sumA || sum("c") != sumC {
		t.Fatal("a digest item changed a name it compared")
	}
	if bk.resume != nil {
		t.Fatal("the resumed copy's list was kept after the last digest (to +inf)")
	}
	// An item after the last one finds no resumed copy: refused.
	var needs []string
	if s.applyDigestItem(bk, item{seq: 10, bucket: b, kind: kindDigest, record: digestBlob(t, &digestItem{})}, session, &needs) {
		t.Fatal("a digest item after the last was applied")
	}
}

// TestDigestCodec: digest items and their reports survive their
// encodings, and an item whose names are out of walk order, or outside
// its interval, is malformed.
func TestDigestCodec(t *testing.T) {
	d := &digestItem{lo: &walkName{1, "k\x00"}, hi: &walkName{2, "b"}, names: []digestName{
		{name: walkName{1, "k\x00\x01"}, sum: 42}, {name: walkName{1, "l"}, whole: true}, {name: walkName{2, "b"}, sum: 1 << 63}}}
	got, err := decodeDigest(digestBlob(t, d))
	if err != nil {
		t.Fatal(err)
	}
	if *got.lo != *d.lo || *got.hi != *d.hi || !slices.Equal(got.names, d.names) {
		t.Fatalf("decoded %+v, want %+v", got, d)
	}
	for _, bad := range []*digestItem{
		{names: []digestName{{name: walkName{0, "b"}}, {name: walkName{0, "a"}}}},      // out of order
		{lo: &walkName{0, "b"}, names: []digestName{{name: walkName{0, "b"}}}},         // at lo
		{hi: &walkName{0, "b"}, names: []digestName{{name: walkName{0, "c"}, sum: 1}}}, // past hi
		{names: []digestName{{name: walkName{0, "a"}}, {name: walkName{0, "a"}}}},      // twice
		{lo: &walkName{0, "a"}, names: []digestName{{name: walkName{0, "0"}, sum: 1}}}, // before lo
	} {
		if _, err := decodeDigest(digestBlob(t, bad)); err == nil {
			t.Fatalf("decoded %+v without an error", bad)
		}
	}
	if _, err := decodeDigest(digestBlob(t, d)[:5]); err == nil {
		t.Fatal("decoded a cut digest item")
	}
	if r := string(appendRanges(nil, []int{0, 1, 2, 5, 7, 8})); r != "0-2,5,7-8" {
		t.Fatalf("ranges %q", r)
	}
	needs, err := parseNeeds("12:0-2,5,7-8;13:4")
	if err != nil || !slices.Equal(needs[12], []int{0, 1, 2, 5, 7, 8}) || !slices.Equal(needs[13], []int{4}) {
		t.Fatalf("parseNeeds = %v %v", needs, err)
	}
	last, _, _, needs, err := parseAck([]byte("+ACK 13 0 - 12:0-2,5,7-8;13:4\r\n"))
	if err != nil || last != 13 || len(needs) != 2 {
		t.Fatalf("parseAck with reports = %d %v %v", last, needs, err)
	}
	if _, _, _, needs, err = parseAck([]byte("+ACK 13 0 -\r\n")); err != nil || needs == nil || len(needs) != 0 {
		t.Fatalf("parseAck without reports = %v %v (want an empty, known report)", needs, err)
	}
	for _, bad := range []string{"x:1", "1:", "1:3-2", "1:a"} {
		if _, err := parseNeeds(bad); err == nil {
			t.Fatalf("parseNeeds(%q) without an error", bad)
		}
	}
}

// TestMigHeld: TAIR.MIGHELD answers how many keys of a bucket the node
// holds; bad arguments get an error and the connection goes on.
func TestMigHeld(t *testing.T) {
	_, nodes := cluster2(t, nil)
	c := dial(t, nodes[0].Addr())
	const bucket = 0
	preload(t, c, "held", bucket, 321, strconv.Itoa)
	if _, err := nodes[0].Engine().PrefixPut(engineKey(bucket, keyIn("pk", bucket, q, 0)), []byte("s"), []byte("v"), engines.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	for args, want := range map[string]string{
		"TAIR.MIGHELD":                    "-ERR wrong number of arguments for 'tair.migheld' command",
		"TAIR.MIGHELD 0 1":                "-ERR wrong number of arguments for 'tair.migheld' command",
		"TAIR.MIGHELD x":                  "-ERR bad bucket",
		"TAIR.MIGHELD -1":                 "-ERR bad bucket",
		"TAIR.MIGHELD " + strconv.Itoa(q): "-ERR bad bucket",
		"TAIR.MIGHELD 0":                  ":322",
		"tair.migheld 1":                  ":0",
	} {
		if got := c.do(strings.Fields(args)...); got != want {
			t.Fatalf("%s = %q, want %q", args, got, want)
		}
		if got := c.do("PING"); got != "+PONG" {
			t.Fatalf("PING after %s = %q", args, got)
		}
	}
}

// runningMove waits for node's outgoing move of bucket b and returns it.
func runningMove(t *testing.T, node *Server, b route.BucketID) *migration {
	t.Helper()
	var m *migration
	testutil.Eventually(t, 10*time.Second, func() bool {
		node.mu.Lock()
		defer node.mu.Unlock()
		m = node.mu.migs[b]
		return m != nil
	}, "the move did not start")
	return m
}

// TestResumedMoveMakesStaleCopyExact: a destination holds a stale copy
// of the bucket (as a move long ago left it: records equal to the
// source's, others with another value, another expiry only, or missing,
// and keys the source deleted since). The move resumes it and sends
// only what differs (exact counts), and the copy ends exactly as the
// source's: the stale keys gone, the checksum passing at once. A big key
// (a hash of more than a piece) is not digested, which would read all of
// it in one hold of the lock: it goes whole, in pieces.
func TestResumedMoveMakesStaleCopyExact(t *testing.T) {
	defer func(p int) { pieceElems = p }(pieceElems)
	pieceElems = 100
	cs, nodes, t1 := moveCluster(t, func(int, *Config) {})
	a, b, c := nodes[0], nodes[1], nodes[2]
	const bucket = 0
	ca := dial(t, a.Addr())
	const n = 3000
	preload(t, ca, "pre", bucket, n, strconv.Itoa)
	const ttls = 50 // keys 0..49 get an expiry at the source
	for i := range ttls {
		if r := ca.do(x(1, "PEXPIRE", keyIn("pre", bucket, q, i), "3600000")...); r != ":1" {
			t.Fatalf("PEXPIRE: %q", r)
		}
	}
	if r := ca.do(x(1, "HSET", keyIn("h", bucket, q, 0), "f1", "1", "f2", "2")...); r != ":2" {
		t.Fatalf("HSET: %q", r)
	}
	big := x(1, "HSET", keyIn("big", bucket, q, 0))
	for i := range 250 {
		big = append(big, "f"+strconv.Itoa(i), strconv.Itoa(i))
	}
	if r := ca.do(big...); r != ":250" {
		t.Fatalf("HSET big: %q", r)
	}
	testutil.Eventually(t, 5*time.Second, func() bool {
		_, ok := engineGet(b, keyIn("pre", bucket, q, n-1))
		return ok
	}, "the slave did not take the preload")

	// The stale copy: the source's records (copies: an in-memory
	// engine's objects are not to be shared), then changed.
	err := a.Engine().ForEach(bucket, func(r *engines.Record) error {
		enc, err := engines.AppendRecord(nil, r)
		if err != nil {
			return err
		}
		cp, err := engines.DecodeRecord(enc)
		if err != nil {
			return err
		}
		if cp.Prefix == nil && cp.Entry.ExpireAt != 0 {
			cp.Entry.ExpireAt = 0 // the expiry the copy missed
		}
		return c.Engine().Restore(bucket, cp)
	})
	if err != nil {
		t.Fatal(err)
	}
	const changed, missing, gone = 300, 200, 500
	for i := ttls; i < ttls+changed; i++ {
		if _, err := c.Engine().Put(engineKey(bucket, keyIn("pre", bucket, q, i)), []byte("stale"), engines.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for i := ttls + changed; i < ttls+changed+missing; i++ {
		if err := c.Engine().Remove(engineKey(bucket, keyIn("pre", bucket, q, i)), 0); err != nil {
			t.Fatal(err)
		}
	}
	for i := range gone {
		if _, err := c.Engine().Put(engineKey(bucket, keyIn("gone", bucket, q, i)), []byte("x"), engines.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := c.bucketKeys(bucket), int64(n+2-missing+gone); got != want {
		t.Fatalf("the stale copy holds %d keys, want %d", got, want)
	}

	mismatches := counterValue(t, a.m.migSumMismatches)
	skippedBefore := counterValue(t, a.m.migSkipped)
	piecesBefore := a.walkPieces.Load()
	startMove(cs, t1, bucket, a.Addr(), c.Addr())
	m := runningMove(t, a, bucket)
	waitMoved(t, cs, bucket, c.Addr(), 20*time.Second)
	waitVersion(t, cs.getTable().Version, nodes...)

	// Needed: the keys with another expiry, another value, or missing;
	// sent: those and the big hash.
	wantNeeded := int64(ttls + changed + missing)
	if !m.resumed.Load() || m.skipped.Load() != n+1-wantNeeded || m.needed.Load() != wantNeeded || m.sent.Load() != wantNeeded+1 {
		t.Fatalf("resumed %v, skipped %d, needed %d, sent %d; want resumed, %d, %d, %d",
			m.resumed.Load(), m.skipped.Load(), m.needed.Load(), m.sent.Load(), n+1-wantNeeded, wantNeeded, wantNeeded+1)
	}
	if d := a.walkPieces.Load() - piecesBefore; d != 1 {
		t.Fatalf("%d keys went in pieces, want the big hash", d)
	}
	if d := counterValue(t, a.m.migSkipped) - skippedBefore; d != float64(n+1-wantNeeded) {
		t.Fatalf("the skipped counter grew by %v, want %d", d, n+1-wantNeeded)
	}
	if d := counterValue(t, a.m.migSumMismatches) - mismatches; d != 0 {
		t.Fatalf("%v checksum mismatches", d)
	}
	for i := range gone {
		if _, ok := engineGet(c, keyIn("gone", bucket, q, i)); ok {
			t.Fatalf("the new master kept %s, which the source had deleted", keyIn("gone", bucket, q, i))
		}
	}
	if d, s := sortedDigests(recordDigests(t, c, bucket)), sortedDigests(recordDigests(t, b, bucket)); !slices.Equal(d, s) {
		t.Fatalf("the new master (%d records) and the slave (%d) differ", len(d), len(s))
	}
}

// TestMoveResumesAfterDestinationRestart: a persistent destination
// (ldb; kdb) restarts in the middle of a move's walk; the next attempt
// resumes the copy it kept and sends only the names it lacks or holds
// otherwise, and the copy ends equal to the source's with every write
// made during and after the interruption (overwrites, deletes, new keys,
// and keys the source deleted while the destination was down, which it
// held).
func TestMoveResumesAfterDestinationRestart(t *testing.T) {
	n := 20_000
	if testing.Short() || testutil.Race {
		n = 5_000
	}
	t.Run("ldb", func(t *testing.T) { runResumeAfterRestart(t, "ldb", n) })
	t.Run("kdb", func(t *testing.T) { runResumeAfterRestart(t, "kdb", n/4) })
}

func runResumeAfterRestart(t *testing.T, eng string, n int) {
	defer func(w, n int) { walkWindow, walkSliceNames = w, n }(walkWindow, walkSliceNames)
	walkWindow, walkSliceNames = 1, 256 // a walk of many slices, one in flight
	cs := newFakeCS(t)
	cfgs := make([]Config, 3)
	nodes := make([]*Server, 3)
	for i := range nodes {
		c := testConfig(cs.addr())
		c.Engine, c.Dir = eng, t.TempDir()
		c.ReplicationMode = ReplicationStrict
		c.ReplicationTimeout = 2 * time.Second
		c.Listen = fmt.Sprintf("127.0.0.1:%d", testutil.FreePort(t))
		c.MigrateBytesPerSec = int64(n) * 40 // a copy of about 4 s
		cfgs[i] = c
		nodes[i] = startNode(t, c)
	}
	a, sl := nodes[0], nodes[1]
	t1 := ringTable(1, q, 2, a.Addr(), sl.Addr())
	cs.setTable(t1)
	waitVersion(t, 1, nodes...)
	const bucket = 0
	val := func(i int) string { return fmt.Sprintf("%d-%s", i, strings.Repeat("v", 100)) }
	preload(t, dial(t, a.Addr()), "pre", bucket, n, val)
	model := map[string]string{} // what every key must be at the end ("" absent)
	for i := range n {
		model[keyIn("pre", bucket, q, i)] = val(i)
	}

	startMove(cs, t1, bucket, a.Addr(), cfgs[2].Listen)
	m := runningMove(t, a, bucket)
	testutil.Eventually(t, 30*time.Second, func() bool { return nodes[2].bucketKeys(bucket) >= int64(n*3/4) },
		"the destination did not take three quarters of the bucket")
	if m.done.Load() {
		t.Fatal("the move was done before the destination restarted")
	}
	if err := nodes[2].Close(); err != nil {
		t.Fatal(err)
	}
	held := storedKeys(t, eng, cfgs[2].Dir, bucket) // what the destination kept
	if len(held) >= n {
		t.Fatalf("the destination held all %d keys at its restart: the walk was through", len(held))
	}
	var inHeld, notHeld []string
	for _, k := range slices.Sorted(maps.Keys(model)) {
		if v, ok := held[k]; ok {
			if v != model[k] {
				t.Fatalf("the destination held %s = %q, want %q", k, v, model[k])
			}
			inHeld = append(inHeld, k)
		} else {
			notHeld = append(notHeld, k)
		}
	}

	// While the destination is down: overwrites and deletes of keys it
	// holds, deletes of keys it lacks, new keys.
	wr := newWriter(t, cs)
	writes := 0
	do := func(args ...string) {
		t.Helper()
		writes++
		r, unknown := wr.do(args...)
		switch {
		case unknown:
			t.Fatalf("%v: outcome unknown (%q)", args, r)
		case strings.HasPrefix(r, "-"):
			t.Fatalf("%v: %q", args, r)
		}
		if args[0] == "DEL" {
			model[args[1]] = ""
		} else {
			model[args[1]] = args[2]
		}
	}
	// (100, 100, 50, 100 and at most 400 writes after, of 20k keys.)
	over, dels, delsLacking, fresh, maxAfter := n/200, n/200, n/400, n/200, n/50
	for _, k := range inHeld[:over] {
		do("SET", k, "new-"+k)
	}
	for _, k := range inHeld[over : over+dels] {
		do("DEL", k)
	}
	for _, k := range notHeld[:delsLacking] {
		do("DEL", k)
	}
	for i := range fresh {
		k := keyIn("fresh", bucket, q, i)
		do("SET", k, "f"+k)
	}
	writesDown := writes

	var mu sync.Mutex
	nodes[2] = startNode(t, cfgs[2])
	c := nodes[2]
	testutil.Eventually(t, 20*time.Second, func() bool {
		bk := a.bucket(bucket)
		bk.lock()
		defer bk.unlock()
		return bk.mig == m && m.walk != nil && m.walk.resume
	}, "the move did not resume its walk after the restart")
	// During the resumed walk: writes to keys the destination did not
	// hold (so the skipped count stays exact) and new ones.
	after := notHeld[delsLacking:]
	var writesAfter int
	stop := writeUntilStopped(t, cs, 1, func(_, i int, wr *writer) bool {
		if i >= len(after) || i > maxAfter {
			return false
		}
		mu.Lock()
		defer mu.Unlock()
		writes++
		writesAfter++
		var args []string
		switch {
		case i%3 == 0:
			args = []string{"DEL", after[i]}
		case i%3 == 1:
			args = []string{"SET", after[i], "again"}
		default:
			k := keyIn("late", bucket, q, i)
			args = []string{"SET", k, "l" + k}
		}
		r, unknown := wr.do(args...)
		if unknown || strings.HasPrefix(r, "-") {
			t.Errorf("%v: %q (unknown %v)", args, r, unknown)
			return false
		}
		if args[0] == "DEL" {
			model[args[1]] = ""
		} else {
			model[args[1]] = args[2]
		}
		time.Sleep(time.Millisecond)
		return true
	})
	waitMoved(t, cs, bucket, c.Addr(), 60*time.Second)
	stop()
	waitVersion(t, cs.getTable().Version, a, sl, c)
	// After the move: through the new master.
	post := max(n/1000, 1)
	for _, k := range inHeld[over+dels : over+dels+post] {
		do("SET", k, "post")
	}
	for _, k := range inHeld[over+dels+post : over+dels+2*post] {
		do("DEL", k)
	}
	if t.Failed() {
		return
	}

	// The resumed attempt sent the names the destination lacked when it
	// restarted or held otherwise: at most the n-len(held) keys it
	// lacked and one name a write made since it stopped (each writes
	// one key), under n/4 + 0.04n as it held 3/4 of the bucket or more;
	// it skipped every key it held that no write changed.
	sent, skipped, needed := m.sent.Load(), m.skipped.Load(), m.needed.Load()
	t.Logf("n %d, held at the restart %d, writes %d down + %d after: resumed %v, sent %d, skipped %d, needed %d",
		n, len(held), writesDown, writesAfter, m.resumed.Load(), sent, skipped, needed)
	if !m.resumed.Load() {
		t.Fatal("the attempt after the restart did not resume the destination's copy")
	}
	if bound := int64(n - len(held) + writesDown + writesAfter); sent > bound || sent >= int64(n/2) {
		t.Fatalf("the resumed attempt sent %d names, want at most %d (and far fewer than %d)", sent, bound, n)
	}
	if want := int64(len(held) - over - dels); skipped != want {
		t.Fatalf("the resumed attempt skipped %d names, want %d (held, not written since)", skipped, want)
	}
	if counterValue(t, a.m.migSumMismatches) != 0 {
		t.Fatal("the resumed copy failed its checksum")
	}
	// Every key, read on the new master.
	cc := dial(t, c.Addr())
	ver := strconv.FormatUint(uint64(cs.getTable().Version), 10)
	for k, want := range model {
		got := cc.do("TAIR.X", "0", ver, "2", "GET", k)
		if want == "" && got != "$-1" || want != "" && got != fmt.Sprintf("$%d\r\n%s", len(want), want) {
			t.Fatalf("GET %s on the new master = %q, want %q", k, got, want)
		}
	}
	if d, s := sortedDigests(recordDigests(t, c, bucket)), sortedDigests(recordDigests(t, sl, bucket)); !slices.Equal(d, s) {
		t.Fatalf("the new master (%d records) and the slave (%d) differ", len(d), len(s))
	}
}

// storedKeys reads the plain keys of bucket b, with their values, from
// the data directory of a stopped node of engine eng.
func storedKeys(t *testing.T, eng, dir string, b route.BucketID) map[string]string {
	t.Helper()
	e, err := engines.Open(eng, engines.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = e.Close() }()
	out := map[string]string{}
	err = e.ForEach(uint32(b), func(r *engines.Record) error {
		if r.Prefix == nil && !r.Entry.Hidden {
			out[string(r.Key)] = string(r.Entry.Value)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestResumedWalkConfirms: a resumed walk counts a slice's names as sent
// only once the destination's report on its digest is read. Before, a
// write to one of them makes its keys dirty (the destination's copy of
// the name may be wrong until then); the names reported needed become
// dirty; an item acknowledged without its report (a reconnect's hello)
// makes all its names dirty; a refused one fails the attempt.
func TestResumedWalkConfirms(t *testing.T) {
	_, nodes := cluster2(t, nil)
	m := &migration{s: nodes[0], move: route.Move{Bucket: 0}}
	names := []walkName{{0, "a"}, {0, "b"}, {0, "c"}, {0, "d"}, {0, "e"}, {0, "f"}}
	var noted atomic.Int64
	w := newBucketWalk(&noted, true)
	w.names = names
	pushed := func(from, to int) *entry {
		e := &entry{kind: kindDigest}
		w.digests = append(w.digests, sentDigest{e: e, names: names[from:to], count: to - from, end: to})
		return e
	}
	acked := func(e *entry, rep *digestReport) {
		e.report = rep
		e.fin.Store(true)
	}
	dirty := func() string {
		var out []string
		for _, n := range w.dirtySorted() {
			out = append(out, n.key)
		}
		return strings.Join(out, ",")
	}
	e1, e2, e3 := pushed(0, 2), pushed(2, 4), pushed(4, 6)
	// "b" was digested, its report not read: a write naming it and "a"
	// (whose report is not read either) makes both dirty.
	w.noteLocked(0, [][][]byte{{[]byte("SMOVE"), []byte("b"), []byte("a"), []byte("m")}})
	if got := dirty(); got != "a,b" {
		t.Fatalf("dirty after a write to unconfirmed names: %q, want a,b", got)
	}
	delete(w.dirty, walkName{0, "a"})
	delete(w.dirty, walkName{0, "b"})
	acked(e1, &digestReport{needs: []int{1}, known: true}) // "b" needed
	acked(e2, &digestReport{known: false})                 // a hello's: unknown
	if err := m.confirmDigestsLocked(w); err != nil {
		t.Fatal(err)
	}
	if got := dirty(); got != "b,c,d" || w.pos != 4 || len(w.digests) != 1 {
		t.Fatalf("after two reports: dirty %q, pos %d, %d digests left; want b,c,d, 4, 1", got, w.pos, len(w.digests))
	}
	if m.skipped.Load() != 1 || m.needed.Load() != 3 {
		t.Fatalf("skipped %d, needed %d; want 1, 3", m.skipped.Load(), m.needed.Load())
	}
	// Confirmed names are sent: a write to "a" alone leaves it clean;
	// "e" is not confirmed yet.
	w.noteLocked(0, [][][]byte{{[]byte("SET"), []byte("a"), []byte("1")}})
	w.noteLocked(0, [][][]byte{{[]byte("SET"), []byte("e"), []byte("1")}})
	if got := dirty(); got != "b,c,d,e" {
		t.Fatalf("dirty after writes to a confirmed and an unconfirmed name: %q, want b,c,d,e", got)
	}
	e3.err = errRefused
	e3.fin.Store(true)
	if err := m.confirmDigestsLocked(w); err == nil {
		t.Fatal("a refused digest did not fail the walk")
	}
}

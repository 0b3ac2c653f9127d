package dataserver

import (
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/panjf2000/gnet/v2"

	"github.com/tairkv/tair/internal/route"
)

// sink is a tracker's connection in these tests: it keeps what is
// pushed to it.
type sink struct {
	gnet.Conn // only AsyncWrite is used
	mu        sync.Mutex
	got       strings.Builder
}

func (s *sink) AsyncWrite(b []byte, cb gnet.AsyncCallback) error {
	s.mu.Lock()
	s.got.Write(b)
	s.mu.Unlock()
	if cb != nil {
		_ = cb(s, nil)
	}
	return nil
}

func (s *sink) take() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.got.String()
	s.got.Reset()
	return out
}

func inval(area, key string) string {
	return "*3\r\n$10\r\ninvalidate\r\n$" + strconv.Itoa(len(area)) + "\r\n" + area + "\r\n$" + strconv.Itoa(len(key)) + "\r\n" + key + "\r\n"
}

func cmds(lines ...string) [][][]byte {
	var out [][][]byte
	for _, l := range lines {
		var c [][]byte
		for _, f := range strings.Fields(l) {
			c = append(c, []byte(f))
		}
		out = append(out, c)
	}
	return out
}

func TestTrackerPushesOnceToEachTracker(t *testing.T) {
	tr := newTracker(100)
	a, b := &sink{}, &sink{}
	tr.addSink(1, a)
	tr.addSink(2, b)
	if tr.register(3, 0, []byte("k"), 0) {
		t.Fatal("registered for a tracker without a sink")
	}
	for _, id := range []uint64{1, 2, 1} {
		if !tr.register(id, 0, []byte("k"), 0) {
			t.Fatal("register refused")
		}
	}
	tr.register(1, 5, []byte("k"), 0) // another area
	tr.register(1, 0, []byte("other"), 0)
	if n := tr.count.Load(); n != 3 {
		t.Fatalf("%d keys tracked, want 3", n)
	}
	// A write's propagation: the versions entry first, a key not
	// tracked, then k.
	ch := tr.keysChanged(0, cmds("TAIR.REPLVER 7", "SET nope v", "SET k v2 PXAT 99"))
	if ch == nil {
		t.Fatal("nothing pushed")
	}
	select {
	case <-ch:
	case <-time.After(time.Second):
		t.Fatal("the pushes' channel never closed")
	}
	if got, want := a.take(), inval("0", "k"); got != want {
		t.Fatalf("tracker 1 got %q, want %q", got, want)
	}
	if got, want := b.take(), inval("0", "k"); got != want {
		t.Fatalf("tracker 2 got %q, want %q", got, want)
	}
	// One-shot: the next write of k pushes nothing.
	if ch := tr.keysChanged(0, cmds("SET k v3")); ch != nil || a.take() != "" {
		t.Fatal("a second push without a new registration")
	}
	// A multi-key write, then a keyless one of area 5.
	tr.register(2, 0, []byte("m1"), 0)
	tr.keysChanged(0, cmds("MSET m1 x other y"))
	if got := a.take(); got != inval("0", "other") {
		t.Fatalf("tracker 1 after MSET: %q", got)
	}
	if got := b.take(); got != inval("0", "m1") {
		t.Fatalf("tracker 2 after MSET: %q", got)
	}
	tr.keysChanged(5, cmds("TAIR.SOMETHINGNEW"))
	if got := a.take(); got != inval("5", "k") {
		t.Fatalf("tracker 1 after an unknown write of area 5: %q", got)
	}
	if n := tr.count.Load(); n != 0 {
		t.Fatalf("%d keys still tracked", n)
	}
}

func TestTrackerCapEvictsByPushing(t *testing.T) {
	tr := newTracker(2)
	a := &sink{}
	tr.addSink(1, a)
	for _, k := range []string{"k1", "k2", "k3", "k4"} {
		tr.register(1, 0, []byte(k), 0)
		if n := tr.count.Load(); n > 2 {
			t.Fatalf("%d keys tracked with room for 2", n)
		}
	}
	got := a.take()
	if n := strings.Count(got, "invalidate"); n != 2 || tr.evicts.Load() != 2 {
		t.Fatalf("%d invalidations pushed (%d evictions) for 2 keys over the cap: %q", n, tr.evicts.Load(), got)
	}
	if strings.Contains(got, "k4") {
		t.Fatalf("the key just registered was evicted: %q", got)
	}
}

func TestTrackerBucketsAreaAllExpiry(t *testing.T) {
	tr := newTracker(100)
	a := &sink{}
	tr.addSink(1, a)
	tr.register(1, 0, []byte("b1"), 1)
	tr.register(1, 0, []byte("b2"), 2)
	tr.bucketsLost(map[route.BucketID]bool{2: true})
	if got := a.take(); got != inval("0", "b2") {
		t.Fatalf("bucket 2 lost: %q", got)
	}
	tr.register(1, 3, []byte("x"), 1)
	tr.areaChanged(3)
	if got := a.take(); got != inval("3", "x") {
		t.Fatalf("area 3 changed: %q", got)
	}
	tr.allChanged()
	if got := a.take(); got != "*1\r\n$14\r\ninvalidate-all\r\n" || tr.count.Load() != 0 {
		t.Fatalf("all changed: %q, %d tracked", got, tr.count.Load())
	}
	tr.register(1, 0, []byte("e"), 0)
	tr.expireAt(0, []byte("e"), 30*time.Millisecond)
	deadline := time.Now().Add(2 * time.Second)
	for {
		if got := a.take(); got != "" {
			if got != inval("0", "e") {
				t.Fatalf("expiry pushed %q", got)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the expiry was never pushed")
		}
		time.Sleep(5 * time.Millisecond)
	}
	// A sink that goes: nothing more is sent to it.
	tr.register(1, 0, []byte("z"), 0)
	tr.removeSink(1, a)
	if ch := tr.keysChanged(0, cmds("DEL z")); ch != nil || a.take() != "" {
		t.Fatal("pushed to a removed sink")
	}
}

package hotkey

import (
	"fmt"
	"math/rand"
	"sync"
	"testing"
	"time"
)

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (f *fakeClock) Now() time.Time { f.mu.Lock(); defer f.mu.Unlock(); return f.t }
func (f *fakeClock) Add(d time.Duration) {
	f.mu.Lock()
	f.t = f.t.Add(d)
	f.mu.Unlock()
}

func TestDetectorFindsHotKeysInSkewedLoad(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1000, 0)}
	d := NewDetector(Options{Capacity: 64, Window: time.Second, MinRate: 100, MinShare: 0.05, Now: clk.Now})
	rng := rand.New(rand.NewSource(1))
	// 100k requests in one window: two hot keys (20% and 10%), the rest
	// spread over 50k cold keys — far more keys than counters.
	for i := 0; i < 100000; i++ {
		switch r := rng.Intn(100); {
		case r < 20:
			d.Touch(0, []byte("hot:a"))
		case r < 30:
			d.Touch(3, []byte("hot:b"))
		default:
			d.Touch(0, []byte(fmt.Sprintf("cold:%d", rng.Intn(50000))))
		}
	}
	if got := d.Hot(); len(got) != 0 {
		t.Fatalf("nothing is published before the window ends, got %v", got)
	}
	clk.Add(time.Second)
	hot := d.Hot()
	if len(hot) != 2 {
		t.Fatalf("want exactly the 2 hot keys, got %v", hot)
	}
	if hot[0].Key != (Key{0, "hot:a"}) || hot[1].Key != (Key{3, "hot:b"}) {
		t.Fatalf("order/identity wrong: %v", hot)
	}
	// Space-Saving overestimates by at most the smallest count, so the
	// share stays close to the true 20%.
	if hot[0].Share < 0.19 || hot[0].Share > 0.23 {
		t.Fatalf("hot:a share %.3f, want about 0.20", hot[0].Share)
	}
	if !d.IsHot(0, []byte("hot:a")) || d.IsHot(0, []byte("hot:b")) {
		t.Fatal("IsHot must match area and key")
	}
	// A key that cools down leaves the list after one window.
	for i := 0; i < 1000; i++ {
		d.Touch(0, []byte(fmt.Sprintf("cold:%d", i)))
	}
	clk.Add(time.Second)
	if got := d.Hot(); len(got) != 0 {
		t.Fatalf("cooled keys still hot: %v", got)
	}
}

func TestDetectorBoundedMemory(t *testing.T) {
	d := NewDetector(Options{Capacity: 16})
	for i := 0; i < 10000; i++ {
		d.Touch(0, []byte(fmt.Sprint(i)))
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.mu.counters) != 16 || len(d.mu.heap) != 16 {
		t.Fatalf("counters %d heap %d, want 16", len(d.mu.counters), len(d.mu.heap))
	}
}

func TestCacheTTLAndInvalidate(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1000, 0)}
	c := NewCache(100*time.Millisecond, 2, 1<<20, clk.Now)
	c.Put(0, []byte("k"), []byte("$1\r\nv\r\n"))
	if v, ok := c.Get(0, []byte("k")); !ok || string(v) != "$1\r\nv\r\n" {
		t.Fatalf("Get = %q %v", v, ok)
	}
	if _, ok := c.Get(1, []byte("k")); ok {
		t.Fatal("areas must not share entries")
	}
	clk.Add(100 * time.Millisecond)
	if _, ok := c.Get(0, []byte("k")); ok {
		t.Fatal("entry must expire after its TTL")
	}
	c.Put(0, []byte("a"), []byte("1"))
	c.Put(0, []byte("b"), []byte("2"))
	c.Get(0, []byte("a"))
	c.Put(0, []byte("c"), []byte("3")) // evicts b, the least recently used
	if _, ok := c.Get(0, []byte("b")); ok {
		t.Fatal("LRU entry must be evicted at the item bound")
	}
	c.Invalidate(0, []byte("a"))
	if _, ok := c.Get(0, []byte("a")); ok {
		t.Fatal("Invalidate must drop the entry")
	}
	hits, misses, items := c.Stats()
	if hits != 2 || misses != 4 || items != 1 {
		t.Fatalf("stats hits=%d misses=%d items=%d", hits, misses, items)
	}
}

// A read that began before an invalidation must not fill the cache: it
// may carry the value the write replaced.
func TestCachePutIfUnchanged(t *testing.T) {
	c := NewCache(time.Minute, 10, 1<<20, nil)
	seq := c.Seq()
	c.Invalidate(0, []byte("other"))
	if c.PutIfUnchanged(0, []byte("k"), []byte("old"), seq) {
		t.Fatal("filled after an invalidation")
	}
	if _, ok := c.Get(0, []byte("k")); ok {
		t.Fatal("cached a value read before a write")
	}
	seq = c.Seq()
	if !c.PutIfUnchanged(0, []byte("k"), []byte("v"), seq) {
		t.Fatal("refused with no invalidation in between")
	}
	if v, ok := c.Get(0, []byte("k")); !ok || string(v) != "v" {
		t.Fatalf("Get = %q %v", v, ok)
	}
	c.Clear()
	if _, ok := c.Get(0, []byte("k")); ok {
		t.Fatal("entry survived Clear")
	}
	if _, _, n := c.Stats(); n != 0 {
		t.Fatalf("%d entries after Clear", n)
	}
	if c.PutIfUnchanged(0, []byte("k"), []byte("v"), seq) {
		t.Fatal("Clear did not count as an invalidation")
	}
}

// ClearIf drops exactly the entries it is told to, and a fill sent
// before it is not cached (it counts as an invalidation).
func TestCacheClearIf(t *testing.T) {
	c := NewCache(time.Minute, 100, 1<<20, nil)
	c.Put(0, []byte("a1"), []byte("x"))
	c.Put(0, []byte("b1"), []byte("y"))
	c.Put(1, []byte("a2"), []byte("z"))
	seq := c.Seq()
	c.ClearIf(func(area uint16, key string) bool { return key[0] == 'a' })
	if _, ok := c.Get(0, []byte("a1")); ok {
		t.Fatal("a1 kept")
	}
	if _, ok := c.Get(1, []byte("a2")); ok {
		t.Fatal("a2 kept")
	}
	if v, ok := c.Get(0, []byte("b1")); !ok || string(v) != "y" {
		t.Fatalf("b1 = %q %v, want y", v, ok)
	}
	if _, _, n := c.Stats(); n != 1 {
		t.Fatalf("%d entries left, want 1", n)
	}
	if c.PutIfUnchanged(0, []byte("a1"), []byte("old"), seq) {
		t.Fatal("a fill sent before ClearIf was cached")
	}
}

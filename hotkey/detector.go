// Package hotkey finds the keys that take a disproportionate share of
// requests, and caches their values close to clients. It is a plain
// library: the proxy feeds it every key it routes and asks it for the
// current hot keys (TAIR.HOTKEYS) and for cached values of hot reads.
//
// Detection uses the Space-Saving algorithm (Metwally et al., 2005): at
// most Capacity counters, so memory is bounded whatever the key space; a
// key that is really hot is always among them, and each counter's error is
// bounded by the smallest count at the time it was taken over. Counts are
// kept per window: at the end of each window the counters become the
// published rates and start again, so a key that cools down leaves the
// list within one window.
package hotkey

import (
	"container/heap"
	"sort"
	"sync"
	"time"
)

// Key identifies a key in an area.
type Key struct {
	Area uint16
	Key  string
}

// Hot is one hot key with its observed rate.
type Hot struct {
	Key
	// Rate is requests per second over the last full window.
	Rate float64
	// Share is the key's fraction of all requests in that window.
	Share float64
}

// Options configure a Detector.
type Options struct {
	// Capacity is the number of Space-Saving counters (default 1024).
	Capacity int
	// Window is how long counts accumulate before they are published
	// (default 1s).
	Window time.Duration
	// MinRate is the requests/s a key needs to count as hot (default 1000).
	MinRate float64
	// MinShare is the share of all requests a key needs to count as hot
	// (default 0.01: one key in a hundred requests).
	MinShare float64
	// Now is the clock (tests pass a fake one).
	Now func() time.Time
}

func (o *Options) adjust() {
	if o.Capacity <= 0 {
		o.Capacity = 1024
	}
	if o.Window <= 0 {
		o.Window = time.Second
	}
	if o.MinRate == 0 {
		o.MinRate = 1000
	}
	if o.MinShare == 0 {
		o.MinShare = 0.01
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}

type counter struct {
	key   Key
	count int64
	index int // in the min-heap
}

// minHeap orders counters by count, smallest first (the one Space-Saving
// replaces).
type minHeap []*counter

func (h minHeap) Len() int           { return len(h) }
func (h minHeap) Less(i, j int) bool { return h[i].count < h[j].count }
func (h minHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index = i
	h[j].index = j
}
func (h *minHeap) Push(x any) {
	c := x.(*counter)
	c.index = len(*h)
	*h = append(*h, c)
}
func (h *minHeap) Pop() any {
	old := *h
	c := old[len(old)-1]
	*h = old[:len(old)-1]
	return c
}

// Detector counts key accesses. Safe for concurrent use.
type Detector struct {
	opts Options

	mu struct {
		sync.Mutex
		counters map[Key]*counter
		heap     minHeap
		total    int64
		start    time.Time
		hot      []Hot
	}
}

// NewDetector returns a Detector.
func NewDetector(o Options) *Detector {
	o.adjust()
	d := &Detector{opts: o}
	d.mu.counters = make(map[Key]*counter, o.Capacity)
	d.mu.start = o.Now()
	return d
}

// Touch records one access of key in area.
func (d *Detector) Touch(area uint16, key []byte) { d.TouchN(area, key, 1) }

// TouchN records n accesses: a caller that samples one access in n (to
// keep the detector's lock off its hot path) reports each sample as n.
func (d *Detector) TouchN(area uint16, key []byte, n int64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.rollLocked(d.opts.Now())
	d.mu.total += n
	if c, ok := d.mu.counters[Key{area, string(key)}]; ok {
		c.count += n
		heap.Fix(&d.mu.heap, c.index)
		return
	}
	k := Key{area, string(key)}
	if len(d.mu.heap) < d.opts.Capacity {
		c := &counter{key: k, count: n}
		d.mu.counters[k] = c
		heap.Push(&d.mu.heap, c)
		return
	}
	// Space-Saving: the new key takes over the smallest counter and
	// inherits its count (an overestimate bounded by that count).
	c := d.mu.heap[0]
	delete(d.mu.counters, c.key)
	c.key = k
	c.count += n
	d.mu.counters[k] = c
	heap.Fix(&d.mu.heap, 0)
}

// rollLocked publishes the window's counts when it has ended.
func (d *Detector) rollLocked(now time.Time) {
	elapsed := now.Sub(d.mu.start)
	if elapsed < d.opts.Window {
		return
	}
	secs := elapsed.Seconds()
	var hot []Hot
	if d.mu.total > 0 {
		for _, c := range d.mu.heap {
			rate := float64(c.count) / secs
			share := float64(c.count) / float64(d.mu.total)
			if rate >= d.opts.MinRate && share >= d.opts.MinShare {
				hot = append(hot, Hot{Key: c.key, Rate: rate, Share: share})
			}
		}
	}
	sort.Slice(hot, func(i, j int) bool {
		if hot[i].Rate != hot[j].Rate {
			return hot[i].Rate > hot[j].Rate
		}
		if hot[i].Area != hot[j].Area {
			return hot[i].Area < hot[j].Area
		}
		return hot[i].Key.Key < hot[j].Key.Key
	})
	d.mu.hot = hot
	d.mu.counters = make(map[Key]*counter, d.opts.Capacity)
	d.mu.heap = d.mu.heap[:0]
	d.mu.total = 0
	d.mu.start = now
}

// Hot returns the hot keys of the last full window, hottest first.
func (d *Detector) Hot() []Hot {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.rollLocked(d.opts.Now())
	return append([]Hot(nil), d.mu.hot...)
}

// IsHot reports whether key was hot in the last full window.
func (d *Detector) IsHot(area uint16, key []byte) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, h := range d.mu.hot {
		if h.Area == area && h.Key.Key == string(key) {
			return true
		}
	}
	return false
}

package hotkey

import (
	"container/list"
	"sync"
	"time"
)

// Cache is a small proxy-local cache for the values of hot keys. Entries
// live at most TTL, the backstop of how stale a read served from it can
// be: writes that pass through the same proxy invalidate at once, and the
// proxy invalidates what the dataservers push (proxy/hotpush.go). It is
// bounded by entry count and by bytes, evicting the least recently used.
type Cache struct {
	ttl      time.Duration
	maxItems int
	maxBytes int
	now      func() time.Time

	mu    sync.Mutex
	items map[Key]*list.Element
	lru   *list.List // front = most recent
	bytes int
	hits  int64
	miss  int64
	// seq counts invalidations: a read that began before one may have
	// fetched the value the write replaced, so it must not be cached
	// (PutIfUnchanged).
	seq uint64
}

type cacheEntry struct {
	key     Key
	value   []byte
	expires time.Time
}

// NewCache returns a cache; now may be nil (time.Now).
func NewCache(ttl time.Duration, maxItems, maxBytes int, now func() time.Time) *Cache {
	if now == nil {
		now = time.Now
	}
	return &Cache{ttl: ttl, maxItems: maxItems, maxBytes: maxBytes, now: now,
		items: map[Key]*list.Element{}, lru: list.New()}
}

// Get returns the cached reply for key if it is fresh.
func (c *Cache) Get(area uint16, key []byte) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[Key{area, string(key)}]
	if !ok {
		c.miss++
		return nil, false
	}
	e := el.Value.(*cacheEntry)
	if !c.now().Before(e.expires) {
		c.removeLocked(el)
		c.miss++
		return nil, false
	}
	c.lru.MoveToFront(el)
	c.hits++
	return e.value, true
}

// Put caches value (a complete reply) for key for the cache's TTL.
func (c *Cache) Put(area uint16, key, value []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.putLocked(area, key, value)
}

func (c *Cache) putLocked(area uint16, key, value []byte) {
	if len(key)+len(value) > c.maxBytes {
		return
	}
	k := Key{area, string(key)}
	if el, ok := c.items[k]; ok {
		c.removeLocked(el)
	}
	e := &cacheEntry{key: k, value: append([]byte(nil), value...), expires: c.now().Add(c.ttl)}
	c.items[k] = c.lru.PushFront(e)
	c.bytes += len(k.Key) + len(e.value)
	for len(c.items) > c.maxItems || c.bytes > c.maxBytes {
		c.removeLocked(c.lru.Back())
	}
}

// Invalidate drops key (a write passed through this proxy).
func (c *Cache) Invalidate(area uint16, key []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	if el, ok := c.items[Key{area, string(key)}]; ok {
		c.removeLocked(el)
	}
}

// Clear drops every entry (a write whose keys are not known, such as
// FLUSHDB or EXEC).
func (c *Cache) Clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	c.items = map[Key]*list.Element{}
	c.lru.Init()
	c.bytes = 0
}

// ClearIf drops every entry whose key drop reports true (the keys of
// buckets that changed master). It counts as an invalidation of all:
// a fill in flight may be of one of them.
func (c *Cache) ClearIf(drop func(area uint16, key string) bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	for k, el := range c.items {
		if drop(k.Area, k.Key) {
			c.removeLocked(el)
		}
	}
}

// Seq is the invalidation count, taken when a read that may fill the
// cache is sent.
func (c *Cache) Seq() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.seq
}

// PutIfUnchanged is Put for a read sent when Seq was seq: nothing is
// cached when any invalidation happened since, because the read may have
// raced a write through this proxy. (Invalidations are counted for the
// whole cache, not per key: a busy writer only makes filling rarer.)
func (c *Cache) PutIfUnchanged(area uint16, key, value []byte, seq uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seq != seq {
		return false
	}
	c.putLocked(area, key, value)
	return true
}

// Stats returns hits, misses and the current entry count.
func (c *Cache) Stats() (hits, misses int64, items int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hits, c.miss, len(c.items)
}

func (c *Cache) removeLocked(el *list.Element) {
	e := el.Value.(*cacheEntry)
	c.lru.Remove(el)
	delete(c.items, e.key)
	c.bytes -= len(e.key.Key) + len(e.value)
}

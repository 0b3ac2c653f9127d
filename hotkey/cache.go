package hotkey

import (
	"container/list"
	"sync"
	"time"
)

// Cache is a small proxy-local cache for the values of hot keys. Entries
// live at most TTL, which bounds how stale a read served from it can be
// (writes that pass through the same proxy invalidate at once; writes
// through other proxies are seen after at most TTL). It is bounded by
// entry count and by bytes, evicting the least recently used.
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
	if len(value) > c.maxBytes {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
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
	if el, ok := c.items[Key{area, string(key)}]; ok {
		c.removeLocked(el)
	}
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

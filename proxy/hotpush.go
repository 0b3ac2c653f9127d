package proxy

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tairkv/tair/internal/route"
	"github.com/tairkv/tair/resp"
)

// The hot-key cache's invalidations, pushed by the dataservers (their
// side: dataserver/tracking.go). The proxy keeps one connection to each
// dataserver of its table (a link) that says TAIR.TRACKING <id> and then
// reads pushes: `invalidate <area> <key>` drops the key,
// `invalidate-all` the whole cache. A GET that fills the cache carries
// the id in its envelope (wrap), so the master registers the key before
// reading it; a fill is only sent to a master whose link is up. Every
// invalidation bumps the cache's sequence, so a fill whose reply comes
// after an invalidation it raced caches nothing (PutIfUnchanged).
//
// The cache is not trusted where pushes may have been missed: a link
// that drops clears the cache (and no fill goes to that node until it is
// back); a table that gives a bucket another master clears it too (the
// new master has no registrations). The TTL stays as the backstop.

// trackLinks holds the links, one per dataserver of the table.
type trackLinks struct {
	mu    sync.Mutex
	links map[*node]context.CancelFunc
	// invalidations received (keys), clears (all, link drops, master
	// changes).
	invalidations atomic.Int64
	clears        atomic.Int64
}

// newTrackID is the proxy's tracker id: random, never 0, at most 19
// digits.
func newTrackID() uint64 {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return binary.LittleEndian.Uint64(b[:])%(1<<62) + 1
}

// trackLoop keeps a link to every node of the current table.
func (s *Server) trackLoop() {
	defer s.wg.Done()
	for {
		ch := s.r.waitChange()
		s.syncLinks()
		select {
		case <-s.ctx.Done():
			s.tl.mu.Lock()
			for _, cancel := range s.tl.links {
				cancel()
			}
			s.tl.mu.Unlock()
			return
		case <-ch:
		}
	}
}

func (s *Server) syncLinks() {
	rt := s.r.load()
	if rt == nil {
		return
	}
	want := map[*node]bool{}
	for _, n := range rt.nodes {
		want[n] = true
	}
	s.tl.mu.Lock()
	defer s.tl.mu.Unlock()
	if s.tl.links == nil {
		s.tl.links = map[*node]context.CancelFunc{}
	}
	for n, cancel := range s.tl.links {
		if !want[n] {
			cancel()
			delete(s.tl.links, n)
		}
	}
	for n := range want {
		if _, ok := s.tl.links[n]; ok {
			continue
		}
		ctx, cancel := context.WithCancel(s.ctx)
		s.tl.links[n] = cancel
		s.wg.Add(1)
		go s.trackLink(ctx, n)
	}
}

// trackLink connects to n, listens for its pushes, and reconnects: at
// once after a link that was up, then backing off from 100 ms to 5 s
// while it cannot be set up (a node down, or one that does not know
// TAIR.TRACKING).
func (s *Server) trackLink(ctx context.Context, n *node) {
	defer s.wg.Done()
	wait := 100 * time.Millisecond
	for ctx.Err() == nil {
		start := time.Now()
		err := s.trackServe(ctx, n)
		if ctx.Err() != nil {
			return
		}
		s.log.Debug("hot-key cache: invalidation link down", "node", n.addr, "err", err)
		if time.Since(start) > 5*time.Second {
			wait = 100 * time.Millisecond // it was up a while
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, 5*time.Second)
	}
}

func (s *Server) trackServe(ctx context.Context, n *node) error {
	d := net.Dialer{Timeout: s.cfg.DialTimeout}
	c, err := d.DialContext(ctx, "tcp", n.addr)
	if err != nil {
		return err
	}
	stop := context.AfterFunc(ctx, func() { _ = c.Close() })
	defer stop()
	defer c.Close()
	id := strconv.FormatUint(s.trackID, 10)
	if _, err := c.Write(resp.AppendCommand(nil, []byte("TAIR.TRACKING"), []byte(id))); err != nil {
		return err
	}
	br := bufio.NewReader(c)
	_ = c.SetReadDeadline(time.Now().Add(s.cfg.DialTimeout))
	line, err := br.ReadString('\n')
	if err != nil {
		return err
	}
	if line != "+OK\r\n" {
		return fmt.Errorf("TAIR.TRACKING: %q", line)
	}
	_ = c.SetReadDeadline(time.Time{})
	n.trackUp.Store(true)
	defer func() {
		// Pushes may be lost from now on: no fills, and nothing cached
		// is trusted.
		n.trackUp.Store(false)
		s.hotCache.Clear()
		s.tl.clears.Add(1)
	}()
	rd := resp.NewRequestReader(br, resp.RequestLimits{})
	for {
		cmds, err := rd.ReadBatch(1024)
		if err != nil {
			return err
		}
		for _, cmd := range cmds {
			a := cmd.Args
			switch {
			case len(a) == 3 && string(a[0]) == "invalidate":
				area, err := strconv.ParseUint(string(a[1]), 10, 16)
				if err != nil || area > route.MaxArea {
					return errors.New("bad invalidation: " + string(a[1]))
				}
				s.hotCache.Invalidate(uint16(area), a[2])
				s.tl.invalidations.Add(1)
			case len(a) == 1 && string(a[0]) == "invalidate-all":
				s.hotCache.Clear()
				s.tl.clears.Add(1)
			}
		}
	}
}

// hotTableChanged drops the cached keys of the buckets whose master
// changed: the new master has no registrations, so no push would come
// for them. The other buckets' keys stay: their masters' pushes still
// come (a rebalance changes a few buckets per table version, and
// clearing all at each one emptied the cache for its whole length).
func (s *Server) hotTableChanged(old, rt *routing) {
	if s.hotCache == nil || old == nil {
		return
	}
	if len(old.copies) != len(rt.copies) {
		s.hotCache.Clear()
		s.tl.clears.Add(1)
		return
	}
	var changed map[route.BucketID]bool
	for b := range rt.copies {
		if old.master(route.BucketID(b)) != rt.master(route.BucketID(b)) {
			if changed == nil {
				changed = map[route.BucketID]bool{}
			}
			changed[route.BucketID(b)] = true
		}
	}
	if changed == nil {
		return
	}
	q := uint32(len(rt.copies))
	s.hotCache.ClearIf(func(_ uint16, key string) bool {
		return changed[route.BucketOf([]byte(key), q)]
	})
	s.tl.clears.Add(1)
}

// trackLinksUp counts the invalidation links that are up.
func (s *Server) trackLinksUp() int64 {
	s.tl.mu.Lock()
	defer s.tl.mu.Unlock()
	var up int64
	for n := range s.tl.links {
		if n.trackUp.Load() {
			up++
		}
	}
	return up
}

package configserver

import (
	"context"
	"errors"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// electionLoop campaigns until Close: each round opens a session (lease),
// waits to win, leads until the session or a fenced write says otherwise,
// then starts over as a standby.
func (s *Server) electionLoop() {
	defer s.wg.Done()
	for s.ctx.Err() == nil {
		err := s.campaign(s.ctx)
		if s.ctx.Err() != nil {
			return
		}
		s.log.Warn("left the election round", "err", err)
		select {
		case <-s.ctx.Done():
			return
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// campaign runs one round. Leader-only work runs under a context that is
// cancelled as soon as the session ends (lease lost), so a cut-off leader
// stops acting at once, without waiting for a write to fail.
func (s *Server) campaign(ctx context.Context) error {
	ttl := int(s.cfg.LeaseTTL / time.Second)
	// The lease is granted and kept alive here as well as by the session,
	// to know when it was last renewed: the session only notices a lost
	// lease up to an RTT after etcd expired it, and a standby may already
	// lead by then.
	gctx, gcancel := context.WithTimeout(ctx, 5*time.Second)
	lease, err := s.cli.Grant(gctx, int64(ttl))
	gcancel()
	if err != nil {
		return err
	}
	kctx, kcancel := context.WithCancel(ctx)
	defer kcancel()
	kch, err := s.cli.KeepAlive(kctx, lease.ID)
	if err != nil {
		return err
	}
	s.renewed.Store(time.Now().UnixNano())
	go func() {
		for range kch {
			s.renewed.Store(time.Now().UnixNano())
		}
	}()
	sess, err := concurrency.NewSession(s.cli, concurrency.WithLease(lease.ID), concurrency.WithTTL(ttl))
	if err != nil {
		return err
	}
	defer func() {
		// Revoke the lease, bounded: an unreachable etcd lets it expire.
		done := make(chan struct{})
		go func() { sess.Close(); close(done) }()
		select {
		case <-done:
		case <-time.After(time.Second):
		}
	}()
	e := concurrency.NewElection(sess, s.store.electionKey())

	roundCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		tick := time.NewTicker(s.tick())
		defer tick.Stop()
		for {
			select {
			case <-sess.Done():
				if s.leader.Swap(false) {
					s.log.Warn("etcd session lost; stepping down at once")
				}
				cancel()
				return
			case <-tick.C:
				if !s.leaseValid() {
					if s.leader.Swap(false) {
						s.log.Warn("election lease not renewed in time; stepping down at once",
							"renewed_ago", time.Since(time.Unix(0, s.renewed.Load())).Round(time.Millisecond))
					}
					cancel()
					return
				}
			case <-roundCtx.Done():
				return
			}
		}
	}()
	go s.observeLeader(roundCtx, e)

	start := time.Now()
	if err := e.Campaign(roundCtx, s.Addr()); err != nil {
		return err
	}
	s.log.Info("won the election", "waited", time.Since(start).Round(time.Millisecond), "lease", int64(sess.Lease()))
	err = s.lead(roundCtx, fence{key: e.Key(), rev: e.Rev()})
	s.leader.Store(false)
	s.log.Info("stopped leading", "err", err)
	// Resign so a standby takes over now rather than after the TTL.
	rctx, rcancel := context.WithTimeout(context.Background(), time.Second)
	if rerr := e.Resign(rctx); rerr != nil && !errors.Is(rerr, context.DeadlineExceeded) {
		s.log.Debug("resign failed", "err", rerr)
	}
	rcancel()
	return err
}

// leaseValid reports whether the election lease is surely still alive in
// etcd: renewed less than TTL minus a safety margin ago (the renewal time
// is when the answer arrived, later than when etcd granted it).
func (s *Server) leaseValid() bool {
	margin := min(s.cfg.LeaseTTL/4, 500*time.Millisecond)
	return time.Since(time.Unix(0, s.renewed.Load())) < s.cfg.LeaseTTL-margin
}

// observeLeader keeps the leader's address for 421 replies and /status.
func (s *Server) observeLeader(ctx context.Context, e *concurrency.Election) {
	for resp := range e.Observe(ctx) {
		if len(resp.Kvs) > 0 {
			addr := string(resp.Kvs[0].Value)
			if old := s.leaderAddr.Swap(&addr); *old != addr {
				s.log.Info("leader changed", "leader", addr)
			}
		}
	}
}

// watchLoop follows the table key, so standbys serve the leader's table
// and long polls wake on every commit. After a compaction or a broken
// watch it reloads and watches again.
func (s *Server) watchLoop(rev int64) {
	defer s.wg.Done()
	for s.ctx.Err() == nil {
		wch := s.cli.Watch(clientv3.WithRequireLeader(s.ctx), s.store.tableKey(), clientv3.WithRev(rev))
		for resp := range wch {
			if err := resp.Err(); err != nil {
				s.log.Debug("table watch broken", "err", err)
				break
			}
			for _, ev := range resp.Events {
				rev = ev.Kv.ModRevision + 1
				if ev.Type != clientv3.EventTypePut || s.store.ownWrite(ev.Kv.Value) {
					continue // the leader publishes what it saves
				}
				t, err := decodeTable(ev.Kv.Value)
				if err != nil {
					s.log.Error("bad table in etcd", "err", err)
					continue
				}
				s.publish(t)
			}
		}
		if s.ctx.Err() != nil {
			return
		}
		ctx, cancel := context.WithTimeout(s.ctx, 5*time.Second)
		t, _, r, err := s.store.load(ctx)
		cancel()
		if err == nil {
			if t != nil {
				s.publish(t)
			}
			rev = r + 1
		}
		select {
		case <-s.ctx.Done():
			return
		case <-time.After(200 * time.Millisecond):
		}
	}
}

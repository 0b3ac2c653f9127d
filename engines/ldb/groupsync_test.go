package ldb

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Waiters of one moment share an fsync; a ticket taken after an fsync
// started waits for the next one; a failed fsync fails its waiters and
// every later one.
func TestGroupSyncSharesFsyncs(t *testing.T) {
	var syncs atomic.Int32
	release := make(chan struct{})
	g := newGroupSync(func() error {
		syncs.Add(1)
		<-release
		return nil
	})
	for i := 0; i < 100; i++ {
		g.committed()
	}
	t1 := g.CommitTicket()
	if t1 != 100 || g.Durable(t1) {
		t.Fatalf("ticket %d durable %v before any fsync", t1, g.Durable(t1))
	}
	var wg sync.WaitGroup
	for i := 0; i < 10; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := g.WaitDurable(t1); err != nil {
				t.Error(err)
			}
		}()
	}
	// Wait for the first fsync to start, then commit more: their ticket
	// is not covered by it.
	for syncs.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	g.committed()
	t2 := g.CommitTicket()
	done2 := make(chan error, 1)
	go func() { done2 <- g.WaitDurable(t2) }()
	release <- struct{}{} // the first fsync ends
	wg.Wait()
	if !g.Durable(t1) || g.Durable(t2) {
		t.Fatalf("after the first fsync: durable(t1)=%v durable(t2)=%v, want true, false", g.Durable(t1), g.Durable(t2))
	}
	release <- struct{}{} // the second
	if err := <-done2; err != nil {
		t.Fatal(err)
	}
	if n := syncs.Load(); n != 2 {
		t.Fatalf("%d fsyncs for 11 waiters of two moments, want 2", n)
	}

	boom := errors.New("disk gone")
	g2 := newGroupSync(func() error { return boom })
	g2.committed()
	if err := g2.WaitDurable(g2.CommitTicket()); !errors.Is(err, boom) {
		t.Fatalf("WaitDurable after a failed fsync = %v, want %v", err, boom)
	}
	g2.committed()
	if err := g2.WaitDurable(g2.CommitTicket()); !errors.Is(err, boom) {
		t.Fatalf("a later WaitDurable = %v, want the same error", err)
	}
}

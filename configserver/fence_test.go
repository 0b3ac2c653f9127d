package configserver

import (
	"context"
	"errors"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"

	"github.com/tairkv/tair/internal/route"
)

// fenceHandle is one would-be leader: its own etcd client, store and
// election session, as a configserver has.
type fenceHandle struct {
	cli   *clientv3.Client
	store *store
	sess  *concurrency.Session
	e     *concurrency.Election
}

func newFenceHandle(t *testing.T, endpoint string) *fenceHandle {
	t.Helper()
	cli, err := newEtcdClient([]string{endpoint}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	st := &store{cli: cli, prefix: "/tair"}
	sess, err := concurrency.NewSession(cli, concurrency.WithTTL(60))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sess.Close() })
	return &fenceHandle{cli: cli, store: st, sess: sess, e: concurrency.NewElection(sess, st.electionKey())}
}

// campaign waits until this handle leads and returns its fence.
func (h *fenceHandle) campaign(name string) (fence, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.e.Campaign(ctx, name); err != nil {
		return fence{}, err
	}
	return fence{key: h.e.Key(), rev: h.e.Rev()}, nil
}

func (h *fenceHandle) win(t *testing.T, name string) fence {
	t.Helper()
	f, err := h.campaign(name)
	if err != nil {
		t.Fatalf("%s campaign: %v", name, err)
	}
	return f
}

func fenceTable(version route.Version, master string) *route.Table {
	return &route.Table{Version: version, Buckets: 2, Copies: 1,
		Serving: [][]string{{master}, {master}}, Destination: [][]string{{master}, {master}}}
}

// TestStaleFenceRefused: a table write under an election revision that
// is no longer the leader's is refused, and etcd keeps the table of the
// configserver that won after it. Two cases: another configserver won
// after the first one's key went (its lease revoked, as when it expires),
// and the first one itself led again under the same key (resign, then
// campaign again on the same lease), which leaves the key in place with
// a new creation revision: only the revision tells the terms apart.
func TestStaleFenceRefused(t *testing.T) {
	endpoint := sharedEtcd(t)
	ctx := context.Background()
	a := newFenceHandle(t, endpoint)
	b := newFenceHandle(t, endpoint)

	fa := a.win(t, "a")
	if err := a.store.save(ctx, fa, fenceTable(1, "a"), nil); err != nil {
		t.Fatalf("leader a's write: %v", err)
	}
	// a's lease ends (what an expiry does, at once): b wins.
	won := make(chan fence, 1)
	go func() {
		f, err := b.campaign("b")
		if err != nil {
			f = fence{}
		}
		won <- f
	}()
	time.Sleep(100 * time.Millisecond)
	select {
	case <-won:
		t.Fatal("b won while a still led")
	default:
	}
	if err := a.sess.Close(); err != nil {
		t.Fatal(err)
	}
	var fb fence
	select {
	case fb = <-won:
	case <-time.After(15 * time.Second):
	}
	if fb.key == "" {
		t.Fatal("b never won")
	}
	if fb.rev <= fa.rev {
		t.Fatalf("b's election revision %d not after a's %d", fb.rev, fa.rev)
	}
	if err := b.store.save(ctx, fb, fenceTable(2, "b"), nil); err != nil {
		t.Fatalf("leader b's write: %v", err)
	}
	// a, unaware, writes under its old fence: refused.
	if err := a.store.save(ctx, fa, fenceTable(3, "a"), newMeta()); !errors.Is(err, errFenced) {
		t.Fatalf("stale leader a's write: err = %v, want errFenced", err)
	}
	if _, _, _, err := a.store.beginTerm(ctx, fa, "a stale"); !errors.Is(err, errFenced) {
		t.Fatalf("stale leader a's term: err = %v, want errFenced", err)
	}
	tb, m, _, err := b.store.load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if tb == nil || tb.Version != 2 || tb.Serving[0][0] != "b" {
		t.Fatalf("etcd holds %+v, want b's table version 2", tb)
	}
	if len(m.Nodes) != 0 || m.Completed != 0 {
		t.Fatalf("etcd holds meta %+v from the stale write", m)
	}

	// b resigns and leads again on the same lease: same key, new
	// revision. Its first term's fence is stale now.
	if err := b.e.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	fb2 := b.win(t, "b")
	if fb2.key != fb.key || fb2.rev <= fb.rev {
		t.Fatalf("second term fence %+v, first %+v: want the same key, a later revision", fb2, fb)
	}
	if err := b.store.save(ctx, fb, fenceTable(3, "stale"), nil); !errors.Is(err, errFenced) {
		t.Fatalf("write under the first term's revision: err = %v, want errFenced", err)
	}
	if err := b.store.save(ctx, fb2, fenceTable(3, "b"), nil); err != nil {
		t.Fatalf("write under the second term's revision: %v", err)
	}
	if tb, _, _, err = a.store.load(ctx); err != nil || tb.Version != 3 || tb.Serving[0][0] != "b" {
		t.Fatalf("etcd holds %+v (%v), want b's table version 3", tb, err)
	}
}

package configserver

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/tairkv/tair/internal/route"
	"github.com/tairkv/tair/internal/wire"
)

// A fetcher that holds a table the configserver keeps gets the next one
// as a delta, by poll and by heartbeat reply, and that delta applied is
// the table exactly; one that holds none, or one no longer kept, gets
// the whole table.
func TestTableDeltas(t *testing.T) {
	s := startLeader(t, testConfig())
	_, first := joinAll(t, s, 2)
	cl := wire.NewClient(s.Addr())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	r, err := cl.TableSince(ctx, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if r.Table == nil || r.Delta != nil {
		t.Fatalf("a fetcher without a table got %+v, want the whole table", r)
	}
	have, err := r.Resolve(nil)
	if err != nil || have == nil || have.Version < first.Version {
		t.Fatalf("resolved %v, %v", have, err)
	}

	// A third node joins: new versions (moves planned, rows changed).
	startFakes(t, dsAddrs[2:3], s.Addr())
	waitTable(t, s, 5*time.Second, func(tb *route.Table) bool { return tb.Version > have.Version }, "a newer version")

	sameAsKept := func(how string, got *route.Table) {
		t.Helper()
		s.history.mu.Lock()
		kept := s.history.find(got.Version)
		s.history.mu.Unlock()
		if kept == nil {
			t.Fatalf("%s: version %d is not kept", how, got.Version)
		}
		want, _ := json.Marshal(kept)
		have, _ := json.Marshal(got)
		if !bytes.Equal(want, have) {
			t.Fatalf("%s: applied\n%s\nserved\n%s", how, have, want)
		}
	}
	deltasBefore := deltasSent(t, s)
	r, err = cl.TableSince(ctx, have, 0)
	if err != nil {
		t.Fatal(err)
	}
	if r.Delta == nil || r.Table != nil {
		t.Fatalf("a fetcher holding version %d got %+v, want a delta", have.Version, r)
	}
	if r.Delta.From != have.Version {
		t.Fatalf("a delta from %d, want from %d", r.Delta.From, have.Version)
	}
	next, err := r.Resolve(have)
	if err != nil {
		t.Fatal(err)
	}
	sameAsKept("poll", next)

	hb := wire.Heartbeat{Addr: dsAddrs[0], TableVersion: have.Version, Deltas: true}
	reply, err := cl.Heartbeat(ctx, &hb)
	if err != nil {
		t.Fatal(err)
	}
	if reply.TableDelta == nil || reply.Table != nil {
		t.Fatalf("a heartbeat taking deltas got table %v delta %v", reply.Table != nil, reply.TableDelta != nil)
	}
	viaBeat, err := reply.TableDelta.Apply(have)
	if err != nil {
		t.Fatal(err)
	}
	sameAsKept("heartbeat", viaBeat)
	if got := deltasSent(t, s) - deltasBefore; got != 2 {
		t.Fatalf("tables_sent_total{form=delta} grew by %v, want 2", got)
	}

	hb.Deltas = false
	if reply, err = cl.Heartbeat(ctx, &hb); err != nil || reply.Table == nil || reply.TableDelta != nil {
		t.Fatalf("a heartbeat not taking deltas: %v, %+v", err, reply)
	}

	// No longer kept: the whole table.
	s.history.mu.Lock()
	s.history.tables = s.history.tables[len(s.history.tables)-1:]
	s.history.deltas = nil
	s.history.mu.Unlock()
	if r, err = cl.TableSince(ctx, have, 0); err != nil || r.Table == nil || r.Delta != nil {
		t.Fatalf("a fetcher holding a version no longer kept: %v, %+v", err, r)
	}
}

// The history keeps the newest recentTablesLen tables.
func TestRecentTablesBound(t *testing.T) {
	var h recentTables
	for v := route.Version(1); v <= recentTablesLen+10; v++ {
		h.add(&route.Table{Version: v, Buckets: 1, Serving: [][]string{{"a"}}})
	}
	if len(h.tables) != recentTablesLen || h.tables[0].Version != 11 {
		t.Fatalf("kept %d tables from version %d", len(h.tables), h.tables[0].Version)
	}
	cur := h.tables[len(h.tables)-1]
	if h.delta(10, cur) != nil || h.delta(11, cur) == nil {
		t.Fatal("a delta from a version dropped, or none from the oldest kept")
	}
}

// deltasSent reads tair_configserver_tables_sent_total{form="delta"}.
func deltasSent(t *testing.T, s *Server) float64 {
	t.Helper()
	var m dto.Metric
	if err := s.metrics.tablesSent.WithLabelValues("delta").Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

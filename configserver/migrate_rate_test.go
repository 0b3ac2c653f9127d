package configserver

import (
	"testing"

	"github.com/tairkv/tair/internal/wire"
)

// heartbeatRate sends one heartbeat and returns the copy-rate cap of the
// reply.
func heartbeatRate(t *testing.T, s *Server) *int64 {
	t.Helper()
	return heartbeat(t, s).MigrateBytesPerSec
}

func migrationsRate(t *testing.T, s *Server) *int64 {
	t.Helper()
	return apiGet[wire.MigrationStatus](t, s, "/v1/migrations").Rate
}

// The cluster-wide copy-rate cap (migrations-rate): absent until set, a
// negative one refused, 0 (no cap) kept apart from "each node's own",
// sent with every heartbeat reply and shown in /v1/migrations, and kept
// in etcd across a restart.
func TestMigrationsRateAdmin(t *testing.T) {
	cfg := testConfig()
	cfg.EtcdDir = t.TempDir()
	s := startLeader(t, cfg)
	if r := heartbeatRate(t, s); r != nil {
		t.Fatalf("heartbeat reply caps at %d before any cap was set", *r)
	}
	neg := int64(-5)
	if r := admin(t, s, wire.AdminRequest{Op: "migrations-rate", Rate: &neg}); r.OK || r.Message != "rate -5: want bytes a second, 0 for no cap" {
		t.Fatalf("negative rate: %+v", r)
	}
	if r := migrationsRate(t, s); r != nil {
		t.Fatalf("a refused rate was set: %d", *r)
	}
	zero, some := int64(0), int64(123456)
	for _, c := range []struct {
		rate *int64
		msg  string
	}{
		{&zero, "each move's copy rate: no cap"},
		{nil, "each move's copy rate: each dataserver's own --migrate-bytes-per-sec"},
		{&some, "each move's copy rate: at most 123456 bytes/s"},
	} {
		if r := admin(t, s, wire.AdminRequest{Op: "migrations-rate", Rate: c.rate}); !r.OK || r.Message != c.msg {
			t.Fatalf("migrations-rate %v: %+v, want %q", c.rate, r, c.msg)
		}
		for what, got := range map[string]*int64{"heartbeat reply": heartbeatRate(t, s), "/v1/migrations": migrationsRate(t, s)} {
			if (got == nil) != (c.rate == nil) || (got != nil && *got != *c.rate) {
				t.Fatalf("%s after migrations-rate %v: %v", what, c.rate, got)
			}
		}
	}

	// A restarted configserver keeps the cap (etcd).
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := startLeader(t, cfg)
	if r := heartbeatRate(t, s2); r == nil || *r != some {
		t.Fatalf("heartbeat reply after restart: %v, want %d", r, some)
	}
}

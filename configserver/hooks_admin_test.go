package configserver

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/tairkv/tair/internal/wire"
)

// apiGet GETs path from s and decodes it as a T.
func apiGet[T any](t *testing.T, s *Server, path string) T {
	t.Helper()
	var v T
	if err := wire.NewClient(s.Addr()).Get(context.Background(), path, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func getHooks(t *testing.T, s *Server) wire.HooksStatus {
	t.Helper()
	return apiGet[wire.HooksStatus](t, s, "/v1/hooks")
}

// heartbeat sends one heartbeat of a dataserver and returns the reply.
func heartbeat(t *testing.T, s *Server) *wire.HeartbeatReply {
	t.Helper()
	reply, err := wire.NewClient(s.Addr()).Heartbeat(context.Background(), &wire.Heartbeat{Addr: dsAddrs[0], Incarnation: 1, Engine: "mdb"})
	if err != nil {
		t.Fatal(err)
	}
	return reply
}

// heartbeatHooks sends one heartbeat and returns the hooks of the reply.
func heartbeatHooks(t *testing.T, s *Server) *[]string {
	t.Helper()
	return heartbeat(t, s).Hooks
}

// The hooks admin ops: unknown names refused, set/on/off, an empty list
// kept apart from "never set", and the list kept in etcd across a
// restart.
func TestHooksAdmin(t *testing.T) {
	cfg := testConfig()
	cfg.EtcdDir = t.TempDir()
	s := startLeader(t, cfg)

	if st := getHooks(t, s); st.Set || !slices.Equal(st.Enabled, wire.DefaultHooks) || !slices.Equal(st.Known, wire.KnownHooks) {
		t.Fatalf("hooks before any set: %+v", st)
	}
	if h := heartbeatHooks(t, s); h != nil {
		t.Fatalf("heartbeat reply names hooks %v before any was set", *h)
	}
	r := admin(t, s, wire.AdminRequest{Op: "hooks-set", Hooks: []string{"stats", "bogus"}})
	if r.OK || !strings.Contains(r.Message, `unknown hook "bogus"`) || !strings.Contains(r.Message, "stats, quota, audit") {
		t.Fatalf("unknown hook: %+v", r)
	}
	if r := admin(t, s, wire.AdminRequest{Op: "hooks-on", Hooks: []string{"nope"}}); r.OK {
		t.Fatalf("unknown hook on: %+v", r)
	}
	if st := getHooks(t, s); st.Set {
		t.Fatalf("a refused op set the hooks: %+v", st)
	}

	if r := admin(t, s, wire.AdminRequest{Op: "hooks-on", Hooks: []string{"audit"}}); !r.OK {
		t.Fatalf("hooks-on: %+v", r)
	}
	if st := getHooks(t, s); !st.Set || !slices.Equal(st.Enabled, []string{"stats", "quota", "audit"}) {
		t.Fatalf("after audit on: %+v", st)
	}
	if r := admin(t, s, wire.AdminRequest{Op: "hooks-off", Hooks: []string{"quota"}}); !r.OK {
		t.Fatalf("hooks-off: %+v", r)
	}
	if h := heartbeatHooks(t, s); h == nil || !slices.Equal(*h, []string{"stats", "audit"}) {
		t.Fatalf("heartbeat reply hooks after quota off: %v", h)
	}
	if r := admin(t, s, wire.AdminRequest{Op: "hooks-set", Hooks: nil}); !r.OK {
		t.Fatalf("hooks-set none: %+v", r)
	}
	if h := heartbeatHooks(t, s); h == nil || len(*h) != 0 {
		t.Fatalf("heartbeat reply after every hook off: %v, want an empty list", h)
	}
	if r := admin(t, s, wire.AdminRequest{Op: "hooks-set", Hooks: []string{"audit", "quota", "audit"}}); !r.OK {
		t.Fatalf("hooks-set: %+v", r)
	}

	// A restarted configserver keeps the list (etcd).
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := startLeader(t, cfg)
	if st := getHooks(t, s2); !st.Set || !slices.Equal(st.Enabled, []string{"audit", "quota"}) {
		t.Fatalf("after restart: %+v", st)
	}
	if h := heartbeatHooks(t, s2); h == nil || !slices.Equal(*h, []string{"audit", "quota"}) {
		t.Fatalf("heartbeat reply after restart: %v", h)
	}
}

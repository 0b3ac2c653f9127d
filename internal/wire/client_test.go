package wire

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tairkv/tair/internal/route"
)

func TestClientFollowsLeader(t *testing.T) {
	leader := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var hb Heartbeat
		if err := json.NewDecoder(r.Body).Decode(&hb); err != nil || hb.Addr != "ds1" {
			http.Error(w, "bad", 400)
			return
		}
		json.NewEncoder(w).Encode(HeartbeatReply{Table: &route.Table{Version: 3}})
	}))
	defer leader.Close()
	leaderAddr := strings.TrimPrefix(leader.URL, "http://")
	standby := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusMisdirectedRequest)
		json.NewEncoder(w).Encode(NotLeader{Leader: leaderAddr})
	}))
	defer standby.Close()

	c := NewClient("127.0.0.1:1," + strings.TrimPrefix(standby.URL, "http://"))
	reply, err := c.Heartbeat(context.Background(), &Heartbeat{Addr: "ds1"})
	if err != nil {
		t.Fatal(err)
	}
	if reply.Table == nil || reply.Table.Version != 3 {
		t.Fatalf("reply %+v", reply)
	}
}

func TestClientTableLongPoll(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("after") == "5" {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		json.NewEncoder(w).Encode(route.Table{Version: 5, Buckets: 1, Serving: [][]string{{"a"}}})
	}))
	defer srv.Close()
	c := NewClient(strings.TrimPrefix(srv.URL, "http://"))
	tb, err := c.Table(context.Background(), 0, time.Second)
	if err != nil || tb.Version != 5 || tb.Master(0) != "a" {
		t.Fatalf("table %+v err %v", tb, err)
	}
	if _, err := c.Table(context.Background(), 5, time.Second); !errors.Is(err, ErrNotModified) {
		t.Fatalf("want ErrNotModified, got %v", err)
	}
}

func TestClientAllDown(t *testing.T) {
	c := NewClient("127.0.0.1:1", "127.0.0.1:2")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if _, err := c.Table(ctx, 0, 0); err == nil {
		t.Fatal("want an error when every configserver is down")
	}
}

func TestClientNoLeader(t *testing.T) {
	standby := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusMisdirectedRequest)
		json.NewEncoder(w).Encode(NotLeader{Leader: "127.0.0.1:1"}) // a dead leader
	}))
	defer standby.Close()
	c := NewClient(strings.TrimPrefix(standby.URL, "http://"))
	_, err := c.Heartbeat(context.Background(), &Heartbeat{Addr: "ds1"})
	if !errors.Is(err, ErrNoLeader) {
		t.Fatalf("want ErrNoLeader when the standby names a dead leader, got %v", err)
	}
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "boom", 500)
	}))
	defer slow.Close()
	c = NewClient(strings.TrimPrefix(standby.URL, "http://"), strings.TrimPrefix(slow.URL, "http://"))
	if _, err := c.Heartbeat(context.Background(), &Heartbeat{Addr: "ds1"}); errors.Is(err, ErrNoLeader) {
		t.Fatal("a configserver that fails otherwise must not count as leaderless")
	}
}

package configserver

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tairkv/tair/configserver/schedule"
	"github.com/tairkv/tair/internal/route"
	"github.com/tairkv/tair/internal/wire"
)

// The leader's recent events, for the web console (GET /v1/events): kept
// in memory only, so a new leader starts with an empty list (and the
// events of its own earlier terms).
const (
	eventWindow = time.Hour
	eventCap    = 2000
)

// Event kinds.
const (
	EventNodeJoined    = "node-joined"    // a new dataserver's first heartbeat
	EventNodeDown      = "node-down"      // heartbeats missed (or unhealthy ones)
	EventNodeUp        = "node-up"        // heard again after it was down
	EventNodeRestarted = "node-restarted" // a new incarnation
	EventFailover      = "failover"       // a down node's master slots given to slaves
	EventTable         = "table"          // a new table version, Message says why
	EventPlan          = "migrations-planned"
	EventPlanDone      = "migrations-done"
	EventMoveFailed    = "move-failed" // moves failed, stalled or cancelled
	EventAdmin         = "admin"       // an admin request applied
)

// Event is one thing that happened to the cluster as the leader saw it.
type Event struct {
	AtMS         int64         `json:"at_ms"` // unix milliseconds
	Kind         string        `json:"kind"`
	Node         string        `json:"node,omitempty"`
	TableVersion route.Version `json:"table_version,omitempty"`
	Message      string        `json:"message"`
}

// eventLog is a ring of the last eventCap events, and what the leader
// loop needs to tell a node's going down from its coming back.
type eventLog struct {
	mu    sync.Mutex
	ring  []Event
	next  int  // where the next event goes once the ring is full
	full  bool // the ring wrapped
	alive map[string]bool
}

func (l *eventLog) add(e Event) {
	if e.AtMS == 0 {
		e.AtMS = time.Now().UnixMilli()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.full {
		l.ring = append(l.ring, e)
		if len(l.ring) == eventCap {
			l.full = true
		}
		return
	}
	l.ring[l.next] = e
	l.next = (l.next + 1) % eventCap
}

// since returns the events at or after t, oldest first.
func (l *eventLog) since(t time.Time) []Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	ms := t.UnixMilli()
	out := []Event{}
	n := len(l.ring)
	for i := range n {
		e := l.ring[(l.next+i)%n]
		if e.AtMS >= ms {
			out = append(out, e)
		}
	}
	return out
}

// newTerm forgets who was alive: a new leader's first view is no change.
func (l *eventLog) newTerm() {
	l.mu.Lock()
	l.alive = nil
	l.mu.Unlock()
}

// liveness records node-down and node-up events against the previous
// reconcile's view (nodes not heard from in this term yet count as
// neither).
func (l *eventLog) liveness(view map[string]nodeView) {
	l.mu.Lock()
	prev := l.alive
	l.alive = map[string]bool{}
	for addr, v := range view {
		if v.heard {
			l.alive[addr] = v.alive
		}
	}
	cur := l.alive
	l.mu.Unlock()
	for _, addr := range sortedKeys(cur) {
		was, known := prev[addr]
		switch {
		case !known || was == cur[addr]:
		case cur[addr]:
			l.add(Event{Kind: EventNodeUp, Node: addr, Message: "heartbeats again"})
		default:
			msg := "heartbeats missed"
			if why := view[addr].hb.Unhealthy; why != "" {
				msg = "unhealthy: " + why
			}
			l.add(Event{Kind: EventNodeDown, Node: addr, Message: msg})
		}
	}
}

// handleEvents serves the leader's events of the last hour (or since
// ?since=unix-ms), oldest first.
func (s *Server) handleEvents(w http.ResponseWriter, r *http.Request) {
	from := time.Now().Add(-eventWindow)
	if ms, err := strconv.ParseInt(r.URL.Query().Get("since"), 10, 64); err == nil && time.UnixMilli(ms).After(from) {
		from = time.UnixMilli(ms)
	}
	writeJSON(w, http.StatusOK, s.events.since(from))
}

// tableEvents records a committed table version, with why it changed,
// and the end of a migration plan.
func (s *Server) tableEvents(old, t *route.Table, why []string) {
	msg := strings.Join(why, "; ")
	if msg == "" {
		msg = "replication marks or settled rows"
	}
	s.events.add(Event{Kind: EventTable, TableVersion: t.Version, Message: msg})
	if old != nil && planLeft(old) && !planLeft(t) {
		s.events.add(Event{Kind: EventPlanDone, TableVersion: t.Version, Message: "migrations done: serving equals the destination"})
	}
}

// planLeft reports whether t still has moves running or planned.
func planLeft(t *route.Table) bool {
	return len(t.Migrating) > 0 || (t.Destination != nil && len(schedule.Diff(t.Serving, t.Destination)) > 0)
}

// adminSummary describes an admin request in an event.
func adminSummary(req wire.AdminRequest) string {
	switch {
	case req.Node != "":
		return req.Op + " " + req.Node
	case req.Op == "area-set":
		c := req.Config
		return fmt.Sprintf("area-set %d quota=%d ops=%d bytes=%d read-only=%v", req.Area, c.QuotaBytes, c.OpsLimit, c.BytesLimit, c.ReadOnly)
	case len(req.Hooks) > 0:
		return req.Op + " " + strings.Join(req.Hooks, ",")
	case req.Op == "migrations-rate" && req.Rate != nil:
		return req.Op + " " + rateText(*req.Rate)
	case req.Op == "migrations-rate":
		return req.Op + " each dataserver's own"
	}
	return req.Op
}

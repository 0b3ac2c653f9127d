package configserver

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/tairkv/tair/internal/route"
	"github.com/tairkv/tair/internal/wire"
)

// Operator requests (POST /v1/admin): the leader applies each to its state
// and table in one etcd transaction.

// applyAdmin applies an admin request inside the leader loop and commits
// the result before answering.
func (s *Server) applyAdmin(ctx context.Context, ls *leaderState, req wire.AdminRequest) wire.AdminReply {
	m := ls.meta.clone()
	var t *route.Table
	if ls.table != nil {
		t = ls.table.Clone()
	}
	msg := ""
	switch req.Op {
	case "node-add":
		nm := m.Nodes[req.Node]
		if nm == nil {
			return wire.AdminReply{OK: true, Message: "the node joins when it sends its first heartbeat"}
		}
		nm.Draining, nm.Removed = false, false
		ls.dirty = true
	case "node-drain":
		nm := m.Nodes[req.Node]
		if nm == nil {
			return wire.AdminReply{Message: fmt.Sprintf("unknown node %q", req.Node)}
		}
		nm.Draining = true
		ls.dirty = true
		msg = "draining; remove the node once it holds no copy"
	case "node-remove":
		nm := m.Nodes[req.Node]
		if nm == nil {
			return wire.AdminReply{Message: fmt.Sprintf("unknown node %q", req.Node)}
		}
		if t != nil && slices.Contains(tableNodes(t), req.Node) && s.isAlive(req.Node) {
			return wire.AdminReply{Message: fmt.Sprintf("node %s still holds copies: drain it first", req.Node)}
		}
		nm.Removed, nm.Draining = true, false
		if t != nil && strip(t, req.Node, false, s.isAlive) {
			ls.dirty = true
		}
		s.nodes.forget(req.Node)
	case "rebalance":
		ls.dirty = true
	case "migrations-pause":
		m.Paused = true
	case "migrations-resume":
		m.Paused = false
	case "migrations-rate":
		if req.Rate != nil && *req.Rate < 0 {
			return wire.AdminReply{Message: fmt.Sprintf("rate %d: want bytes a second, 0 for no cap", *req.Rate)}
		}
		m.MigrateRate = nil
		msg = "each move's copy rate: each dataserver's own --migrate-bytes-per-sec"
		if req.Rate != nil {
			r := *req.Rate
			m.MigrateRate = &r
			msg = "each move's copy rate: " + rateText(r)
		}
	case "migrations-cancel":
		if t != nil {
			t.Migrating = nil
			t.Destination = cloneRows(t.Serving)
			clear(ls.started)
			m.PlanDone = 0
		}
		msg = "plan dropped; the next cluster change or rebalance plans again"
	case "area-set":
		if req.Area > route.MaxArea {
			return wire.AdminReply{Message: fmt.Sprintf("area %d out of range 0..%d", req.Area, route.MaxArea)}
		}
		if m.Areas == nil {
			m.Areas = map[uint16]wire.AreaConfig{}
		}
		m.Areas[req.Area] = req.Config
	case "hooks-set", "hooks-on", "hooks-off":
		hooks, err := applyHooksOp(m.Hooks, req.Op, req.Hooks)
		if err != nil {
			return wire.AdminReply{Message: err.Error()}
		}
		m.Hooks = &hooks
		msg = "hooks: " + wire.HookList(hooks)
	default:
		return wire.AdminReply{Message: fmt.Sprintf("unknown op %q", req.Op)}
	}
	var saveT *route.Table
	if t != nil && !tableEqual(t, ls.table) {
		t.Version = ls.table.Version + 1
		saveT = t
	}
	if err := s.store.save(ctx, ls.fence, saveT, m); err != nil {
		ls.reload = !errors.Is(err, errFenced)
		return wire.AdminReply{Message: err.Error()}
	}
	ls.meta = m
	s.setMeta(m)
	if saveT != nil {
		ls.table = saveT
		s.publish(saveT)
	}
	s.log.Info("admin request applied", "op", req.Op, "node", req.Node, "area", req.Area)
	s.events.add(Event{Kind: EventAdmin, Node: req.Node, Message: adminSummary(req)})
	if saveT != nil {
		s.events.add(Event{Kind: EventTable, TableVersion: saveT.Version, Message: "admin " + req.Op})
	}
	// Act on it now (rebuild, start moves) rather than at the next tick.
	if err := s.reconcile(ctx, ls); err != nil && !errors.Is(err, context.Canceled) {
		s.log.Warn("reconcile after admin request failed", "err", err)
	}
	if ls.buildErr != "" && (req.Op == "rebalance" || strings.HasPrefix(req.Op, "node-")) {
		return wire.AdminReply{Message: ls.buildErr}
	}
	return wire.AdminReply{OK: true, Message: msg}
}

// applyHooksOp returns the hook list after a hooks-set (names is the
// whole list), hooks-on (names appended) or hooks-off (names removed) on
// cur (nil: never set, so wire.DefaultHooks). Unknown names are refused.
func applyHooksOp(cur *[]string, op string, names []string) ([]string, error) {
	for _, n := range names {
		if !slices.Contains(wire.KnownHooks, n) {
			return nil, fmt.Errorf("unknown hook %q (known: %s)", n, strings.Join(wire.KnownHooks, ", "))
		}
	}
	base := wire.DefaultHooks
	if cur != nil {
		base = *cur
	}
	out := []string{}
	switch op {
	case "hooks-set", "hooks-on":
		if op == "hooks-on" {
			out = append(out, base...)
		}
		for _, n := range names {
			if !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	case "hooks-off":
		for _, n := range base {
			if !slices.Contains(names, n) {
				out = append(out, n)
			}
		}
	}
	return out, nil
}

// rateText is a copy-rate cap as `tair ctl` shows it.
func rateText(r int64) string {
	if r == 0 {
		return "no cap"
	}
	return fmt.Sprintf("at most %d bytes/s", r)
}

package schedule

import (
	"fmt"
	"slices"
	"sort"
)

// minNewCopies is the fewest new copies (copies on a node that did not
// hold them in serving) of any table over nodes that obeys the rules
// check verifies, with the zone totals of want (position-safe: the
// builder's fixed zone shares; balance: one zone of every node): each
// bucket holds c copies on distinct nodes, between lo and hi of them in
// each zone, and the nodes of a zone hold floor or ceil of the zone's
// total. It is an exact minimum-cost flow, not an estimate: buckets
// whose member copies sit on the same nodes are interchangeable, so they
// are merged into one source of count × c units, which keeps the network
// small (a merged flow splits back into rows by wrap-around filling).
func minNewCopies(serving [][]string, nodes []Node, c int, zoneTotal map[string]int, lo, hi map[string]int) (int, error) {
	idx := map[string]int{}
	zoneOf := make([]string, len(nodes))
	var zones []string
	for i, n := range nodes {
		idx[n.Addr] = i
		zoneOf[i] = n.Zone
		if !slices.Contains(zones, n.Zone) {
			zones = append(zones, n.Zone)
		}
	}
	sort.Strings(zones)
	types := map[string]int{}
	var held [][]int
	for _, row := range serving {
		var h []int
		for _, a := range row {
			if i, ok := idx[a]; ok && a != "" && !slices.Contains(h, i) {
				h = append(h, i)
			}
		}
		slices.Sort(h)
		k := fmt.Sprint(h)
		if _, ok := types[k]; !ok {
			held = append(held, h)
		}
		types[k]++
	}
	// Vertices: source, sink, one per bucket type, one per (type, zone),
	// one per node, one per zone (its total).
	const big = 1 << 20 // cost of leaving a mandatory unit out
	g := newFlowGraph()
	src, sink := g.vertex(), g.vertex()
	zoneV := map[string]int{}
	nodeV := make([]int, len(nodes))
	size := map[string]int{}
	for _, z := range zones {
		zoneV[z] = g.vertex()
		g.edge(zoneV[z], sink, zoneTotal[z], 0)
	}
	for i := range nodes {
		size[zoneOf[i]]++
	}
	mandatory := 0
	for i := range nodes {
		nodeV[i] = g.vertex()
		z := zoneOf[i]
		fl := zoneTotal[z] / size[z]
		g.edge(nodeV[i], zoneV[z], fl, -big)
		mandatory += fl
		if zoneTotal[z]%size[z] != 0 {
			g.edge(nodeV[i], zoneV[z], 1, 0)
		}
	}
	keys := make([]string, 0, len(types))
	for k := range types {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	byKey := map[string][]int{}
	for _, h := range held {
		byKey[fmt.Sprint(h)] = h
	}
	for _, k := range keys {
		cnt, h := types[k], byKey[k]
		tv := g.vertex()
		g.edge(src, tv, cnt*c, 0)
		for _, z := range zones {
			tz := g.vertex()
			if lo[z] > 0 {
				g.edge(tv, tz, lo[z]*cnt, -big)
				mandatory += lo[z] * cnt
			}
			if hi[z] > lo[z] {
				g.edge(tv, tz, (hi[z]-lo[z])*cnt, 0)
			}
			for i := range nodes {
				if zoneOf[i] != z {
					continue
				}
				cost := 1
				if slices.Contains(h, i) {
					cost = 0
				}
				g.edge(tz, nodeV[i], cnt, cost)
			}
		}
	}
	flow, cost := g.minCostFlow(src, sink)
	if flow != len(serving)*c {
		return 0, fmt.Errorf("min-cost flow placed %d of %d copies", flow, len(serving)*c)
	}
	moved := cost + big*mandatory
	if moved < 0 || moved >= big {
		return 0, fmt.Errorf("min-cost flow left mandatory units out (cost %d)", cost)
	}
	return moved, nil
}

// zoneLimits are the per-bucket copy counts per zone check accepts, and
// the zone totals of rows.
func zoneLimits(rows [][]string, nodes []Node, c int, strat Strategy) (total, lo, hi map[string]int) {
	zoneOf := map[string]string{}
	size := map[string]int{}
	for _, n := range nodes {
		z := n.Zone
		if strat != PositionSafe {
			z = ""
		}
		zoneOf[n.Addr] = z
		size[z]++
	}
	total, lo, hi = map[string]int{}, map[string]int{}, map[string]int{}
	nz := len(size)
	for z, s := range size {
		lo[z] = min(c/nz, s)
		hi[z] = min(s, max(lo[z]+1, (c+nz-1)/nz))
		if nz == 1 {
			lo[z], hi[z] = c, c
		}
	}
	for _, row := range rows {
		for _, a := range row {
			total[zoneOf[a]]++
		}
	}
	return total, lo, hi
}

// flowGraph is a small min-cost max-flow (successive shortest paths with
// Bellman-Ford, so negative costs are fine on a graph without negative
// cycles, as a layered one is).
type flowGraph struct {
	head         []int
	to, cap, nxt []int
	cost         []int
}

func newFlowGraph() *flowGraph { return &flowGraph{} }

func (g *flowGraph) vertex() int { g.head = append(g.head, -1); return len(g.head) - 1 }

func (g *flowGraph) edge(u, v, c, w int) {
	for _, e := range [][4]int{{u, v, c, w}, {v, u, 0, -w}} {
		g.to = append(g.to, e[1])
		g.cap = append(g.cap, e[2])
		g.cost = append(g.cost, e[3])
		g.nxt = append(g.nxt, g.head[e[0]])
		g.head[e[0]] = len(g.to) - 1
	}
}

func (g *flowGraph) minCostFlow(s, t int) (flow, cost int) {
	n := len(g.head)
	const inf = 1 << 62
	for {
		dist := make([]int, n)
		inq := make([]bool, n)
		pe := make([]int, n)
		for i := range dist {
			dist[i], pe[i] = inf, -1
		}
		dist[s] = 0
		queue := []int{s}
		for len(queue) > 0 {
			u := queue[0]
			queue = queue[1:]
			inq[u] = false
			for e := g.head[u]; e >= 0; e = g.nxt[e] {
				if g.cap[e] > 0 && dist[u]+g.cost[e] < dist[g.to[e]] {
					dist[g.to[e]] = dist[u] + g.cost[e]
					pe[g.to[e]] = e
					if !inq[g.to[e]] {
						inq[g.to[e]] = true
						queue = append(queue, g.to[e])
					}
				}
			}
		}
		if dist[t] == inf {
			return flow, cost
		}
		f := inf
		for v := t; v != s; v = g.to[pe[v]^1] {
			f = min(f, g.cap[pe[v]])
		}
		for v := t; v != s; v = g.to[pe[v]^1] {
			g.cap[pe[v]] -= f
			g.cap[pe[v]^1] += f
		}
		flow += f
		cost += f * dist[t]
	}
}

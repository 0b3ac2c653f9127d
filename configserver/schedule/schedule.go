// Package schedule builds bucket tables. It is pure: no etcd, no clock, no
// network, so every rule can be tested over thousands of random clusters.
//
// Build computes the destination table (where each bucket's copies should
// live) from the serving table and the member nodes; Diff turns the
// difference between serving and destination into moves. The configserver
// decides when to call them and how many moves to run at once.
//
// Rules, in the order they win:
//
//  1. no two copies of a bucket on one node;
//  2. position-safe only: a bucket's copies spread over zones as evenly as the
//     copy count allows (then over racks within a zone, as a preference);
//  3. copies per node within [floor, ceil] of the average (per zone in
//     position-safe mode, where zones carry fixed shares);
//  4. masters per node within [floor, ceil] of Q / nodes;
//  5. as few copies as possible land on a node that did not hold them
//     (each such copy is a data migration).
package schedule

import (
	"errors"
	"fmt"
	"slices"
	"sort"
)

// Strategy selects how copies are placed.
type Strategy string

const (
	// Balance spreads copies evenly over nodes, ignoring zones.
	Balance Strategy = "balance"
	// PositionSafe spreads each bucket's copies over zones first, then racks
	// (Tair's pos_mask), so losing a zone loses no bucket.
	PositionSafe Strategy = "position-safe"
)

// ErrUnbuildable reports that no table can satisfy the strategy; the
// configserver keeps serving the old table and says why.
var ErrUnbuildable = errors.New("schedule: cannot build table")

// Node is a member dataserver.
type Node struct {
	Addr string
	Zone string
	Rack string
}

// Options parameterise Build.
type Options struct {
	Buckets  int
	Copies   int
	Strategy Strategy
	// DiffRatio is Tair's _build_diff_ratio for position-safe tables: when
	// (largest zone - smallest zone) / largest zone exceeds it, the zones are
	// too unequal for even per-node load and Build refuses. 0 means 0.6.
	DiffRatio float64
}

// Build returns the destination rows: for each bucket min(Copies, len(nodes))
// distinct node addresses, master first. serving may be nil (first table) or
// hold "" holes and addresses of nodes no longer members; copies on member
// nodes are kept where the rules allow, so the diff stays small.
func Build(serving [][]string, nodes []Node, o Options) ([][]string, error) {
	if o.Buckets <= 0 || o.Copies <= 0 {
		return nil, fmt.Errorf("%w: %d buckets, %d copies", ErrUnbuildable, o.Buckets, o.Copies)
	}
	if len(nodes) == 0 {
		return nil, fmt.Errorf("%w: no nodes", ErrUnbuildable)
	}
	nodes = sortedNodes(nodes)
	c := min(o.Copies, len(nodes))
	existing := make([][]string, o.Buckets)
	for b := range existing {
		if b < len(serving) {
			existing[b] = serving[b]
		}
	}
	var rows [][]string
	switch o.Strategy {
	case PositionSafe:
		var err error
		if rows, err = buildPositionSafe(existing, nodes, c, o); err != nil {
			return nil, err
		}
	case Balance, "":
		slots := make([]int, o.Buckets)
		for b := range slots {
			slots[b] = c
		}
		var err error
		if rows, err = fill(slots, nodes, existing, nil); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("%w: unknown strategy %q", ErrUnbuildable, o.Strategy)
	}
	assignMasters(rows, existing, nodes)
	return rows, nil
}

func sortedNodes(nodes []Node) []Node {
	out := append([]Node(nil), nodes...)
	sort.Slice(out, func(i, j int) bool { return out[i].Addr < out[j].Addr })
	return out
}

// fill places slots[b] copies of each bucket b on nodes, keeping copies of
// existing[b] that are on nodes, so that node loads differ by at most one
// and no node holds two copies of a bucket. Within a bucket, nodes on racks
// the bucket does not use yet are preferred, then the node that shares the
// fewest buckets with the bucket's other copies (its row, and partners[b]:
// copies placed in other zones), so that a node's buckets have their other
// copies spread over every other node. Tie-breaking by address alone
// paired the nodes: with 4 or 6 nodes every bucket of a node had its other
// copy on one partner, so a lost node was rebuilt from a single source and
// losing the partner next lost all of them (issue 18).
//
// The kept copies are trimmed first: a node above its target sheds the
// copies it is slave of before those it is master of. The nodes that keep
// the most copies get the ceil targets, which makes the number of new
// copies the least possible for these loads; the only extra moves come
// from the swap in fillHole, when every node with room already holds the
// bucket.
func fill(slots []int, nodes []Node, existing [][]string, partners [][]string) ([][]string, error) {
	idx := make(map[string]int, len(nodes))
	for i, n := range nodes {
		idx[n.Addr] = i
	}
	rows := make([][]string, len(slots))
	count := make([]int, len(nodes))
	total := 0
	for b, want := range slots {
		total += want
		row := make([]string, 0, len(existing[b]))
		for _, a := range existing[b] {
			if _, ok := idx[a]; !ok || a == "" || contains(row, a) {
				continue
			}
			row = append(row, a)
			count[idx[a]]++
		}
		rows[b] = row
	}
	// A bucket with more copies than slots (its zone share shrank) drops
	// the copy on the node holding the most, a slave before the master:
	// dropping by position instead could leave a node above its target,
	// to shed a copy elsewhere that another node then copies anew.
	for b, want := range slots {
		for row := rows[b]; len(row) > want; row = rows[b] {
			k := len(row) - 1
			for j := len(row) - 2; j >= 1; j-- {
				if count[idx[row[j]]] > count[idx[row[k]]] {
					k = j
				}
			}
			if count[idx[row[0]]] > count[idx[row[k]]]+1 {
				k = 0
			}
			count[idx[row[k]]]--
			rows[b] = slices.Delete(row, k, k+1)
		}
	}
	target := targets(count, total)
	shed(rows, slots, count, target, idx)
	kept := make([]int, len(rows))
	for b, row := range rows {
		kept[b] = len(row)
	}
	st := &filler{rows: rows, slots: slots, nodes: nodes, idx: idx, count: count, target: target, kept: kept, existing: existing, partners: partners}
	st.countPairs()
	for b := range rows {
		for len(rows[b]) < slots[b] {
			if !st.fillHole(b) {
				return nil, fmt.Errorf("%w: no node can take a copy of bucket %d", ErrUnbuildable, b)
			}
		}
	}
	return rows, nil
}

// targets gives each node floor(total/n) copies, and ceil to the total%n
// nodes that hold the most already (ties: lower index).
func targets(count []int, total int) []int {
	n := len(count)
	base, extra := total/n, total%n
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(i, j int) bool { return count[order[i]] > count[order[j]] })
	t := make([]int, n)
	for k, i := range order {
		t[i] = base
		if k < extra {
			t[i]++
		}
	}
	return t
}

// shed removes copies from nodes above target. Holes are spread: a node
// sheds from the buckets missing the fewest copies so far, so that the
// nodes with room (which may hold many buckets already) find holes they
// can take; and slave copies go before master copies.
func shed(rows [][]string, slots, count, target []int, idx map[string]int) {
	holes := make([]int, len(rows))
	for b, row := range rows {
		holes[b] = slots[b] - len(row)
	}
	held := make([][]int, len(count)) // buckets per node
	for b, row := range rows {
		for _, a := range row {
			held[idx[a]] = append(held[idx[a]], b)
		}
	}
	for i := range count {
		excess := count[i] - target[i]
		if excess <= 0 {
			continue
		}
		bs := held[i]
		master := func(b int) bool { return len(rows[b]) > 0 && idx[rows[b][0]] == i }
		sort.SliceStable(bs, func(x, y int) bool {
			bx, by := bs[x], bs[y]
			if holes[bx] != holes[by] {
				return holes[bx] < holes[by]
			}
			if mx, my := master(bx), master(by); mx != my {
				return !mx
			}
			return bx > by
		})
		for _, b := range bs[:excess] {
			k := slices.IndexFunc(rows[b], func(a string) bool { return idx[a] == i })
			rows[b] = slices.Delete(rows[b], k, k+1)
			holes[b]++
			count[i]--
		}
	}
}

type filler struct {
	rows   [][]string
	slots  []int
	nodes  []Node
	idx    map[string]int
	count  []int
	target []int
	// kept[b] is how many of rows[b]'s first copies were kept from the
	// serving table; the rest were placed by this build.
	kept []int
	// existing are the serving rows.
	existing [][]string
	// partners[b] are b's copies outside these nodes (other zones); nil
	// when there are none.
	partners [][]string
	// pairs counts the buckets each two nodes share (rows and partners);
	// pairKey orders the two addresses.
	pairs map[[2]string]int
}

func pairKey(a, b string) [2]string {
	if a > b {
		a, b = b, a
	}
	return [2]string{a, b}
}

// countPairs recounts pairs from the rows (after a chain of hand-overs
// rewrote some of them).
func (f *filler) countPairs() {
	f.pairs = map[[2]string]int{}
	for b, row := range f.rows {
		for i, a := range row {
			for _, o := range row[i+1:] {
				f.pairs[pairKey(a, o)]++
			}
			for _, o := range f.partnersOf(b) {
				f.pairs[pairKey(a, o)]++
			}
		}
	}
}

func (f *filler) partnersOf(b int) []string {
	if b < len(f.partners) {
		return f.partners[b]
	}
	return nil
}

// shared is how many buckets node a shares with b's other copies.
func (f *filler) shared(b int, a string) int {
	n := 0
	for _, o := range f.rows[b] {
		n += f.pairs[pairKey(a, o)]
	}
	for _, o := range f.partnersOf(b) {
		n += f.pairs[pairKey(a, o)]
	}
	return n
}

// add puts a on bucket b's row and counts its new pairs.
func (f *filler) add(b int, a string) {
	for _, o := range f.rows[b] {
		f.pairs[pairKey(a, o)]++
	}
	for _, o := range f.partnersOf(b) {
		f.pairs[pairKey(a, o)]++
	}
	f.rows[b] = append(f.rows[b], a)
}

// fillHole adds one copy to bucket b: on a node with room that does not
// hold b (preferring a rack b does not use, then the rack with the most
// room, then the node sharing the fewest buckets with b's copies, then the
// most room), or, when every node
// with room holds b, by moving some other bucket's copy from a node x that
// lacks b onto a node with room, and giving x the copy of b.
func (f *filler) fillHole(b int) bool {
	best := -1
	bestRoom, bestRack, bestRackRoom, bestShared := 0, false, 0, 0
	racks := f.racksOf(f.rows[b])
	rackRoom, rackSize := map[string]int{}, map[string]int{}
	for i, n := range f.nodes {
		rackRoom[n.Zone+"/"+n.Rack] += max(0, f.target[i]-f.count[i])
		rackSize[n.Zone+"/"+n.Rack]++
	}
	// Rack room matters only with several racks, one of several nodes:
	// with one rack, or a node per rack, any two nodes are two racks.
	racksMatter := false
	for _, size := range rackSize {
		racksMatter = racksMatter || len(rackSize) > 1 && size > 1
	}
	for i, n := range f.nodes {
		room := f.target[i] - f.count[i]
		if room <= 0 || contains(f.rows[b], n.Addr) {
			continue
		}
		rack := n.Zone + "/" + n.Rack
		fresh, rr := !racks[rack], 0
		if racksMatter {
			rr = rackRoom[rack]
		}
		sh := f.shared(b, n.Addr)
		// The rack with the most room before the fewest shared: racks
		// filled unevenly would leave later buckets only one rack.
		better := best < 0 || (fresh && !bestRack) ||
			fresh == bestRack && (rr > bestRackRoom ||
				rr == bestRackRoom && (sh < bestShared || sh == bestShared && room > bestRoom))
		if better {
			best, bestRoom, bestRack, bestRackRoom, bestShared = i, room, fresh, rr, sh
		}
	}
	if best >= 0 {
		f.add(b, f.nodes[best].Addr)
		f.count[best]++
		return true
	}
	if f.freePath(b) {
		f.countPairs()
		return true
	}
	// Every node with room holds b already. Find u with room, and a bucket
	// b2 held by some x not in b, where u is not in b2: x gives its copy of
	// b2 to u and takes the copy of b. A copy placed by this build (not
	// kept) is taken first: handing it to u costs no extra move.
	for _, freshOnly := range []bool{true, false} {
		for u := range f.nodes {
			if f.target[u]-f.count[u] <= 0 {
				continue
			}
			ua := f.nodes[u].Addr
			for b2, row := range f.rows {
				if b2 == b || contains(row, ua) {
					continue
				}
				from := 0
				if freshOnly {
					from = f.kept[b2]
				}
				for k := from; k < len(row); k++ {
					xa := row[k]
					if contains(f.rows[b], xa) {
						continue
					}
					row[k] = ua
					f.count[u]++
					f.rows[b] = append(f.rows[b], xa)
					f.countPairs()
					return true
				}
			}
		}
	}
	// Not seen in the property tests; Build reports it rather than crash
	// the configserver.
	return false
}

// freePath adds a copy of bucket b at no extra move when every node with
// room holds b already: along a chain of hand-overs, a node x1 lacking b
// takes it and gives up its copy of some bucket b2 to a node x2 lacking
// b2, which gives one of its own up in turn, until a node with room takes
// one. A hand-over is free when the copy given up was placed by this
// build, or when the node taking it held the bucket in the serving table
// (a copy trimmed or shed here, taken back). It is an augmenting path of
// the assignment of copies to nodes, shortest first. The one-hop swap of
// fillHole alone missed such chains and moved kept copies instead: in
// random rebuilds, a few copies too many, and up to a fifth of the
// buckets when a position-safe zone's share changed.
func (f *filler) freePath(b int) bool {
	n := len(f.nodes)
	type held struct{ b, k int }
	holds := make([][]held, n) // every copy in the rows, per node
	for b2, row := range f.rows {
		for k, a := range row {
			i := f.idx[a]
			holds[i] = append(holds[i], held{b2, k})
		}
	}
	// Node v takes the copy of bucket via[v].b that prev[v] gives up (at
	// via[v].k in its row); the chain's first node (prev -1) takes b.
	prev := make([]int, n)
	via := make([]held, n)
	seen := make([]bool, n)
	var queue []int
	for i, nd := range f.nodes {
		if !contains(f.rows[b], nd.Addr) {
			seen[i], prev[i] = true, -1
			queue = append(queue, i)
		}
	}
	for len(queue) > 0 {
		x := queue[0]
		queue = queue[1:]
		if f.target[x]-f.count[x] > 0 {
			f.count[x]++
			v := x
			for ; prev[v] >= 0; v = prev[v] {
				f.rows[via[v].b][via[v].k] = f.nodes[v].Addr
			}
			f.rows[b] = append(f.rows[b], f.nodes[v].Addr)
			return true
		}
		for _, h := range holds[x] {
			fresh := h.k >= f.kept[h.b]
			for y, ny := range f.nodes {
				if seen[y] || contains(f.rows[h.b], ny.Addr) || !fresh && !contains(f.existing[h.b], ny.Addr) {
					continue
				}
				seen[y], prev[y], via[y] = true, x, h
				queue = append(queue, y)
			}
		}
	}
	return false
}

func (f *filler) racksOf(row []string) map[string]bool {
	m := make(map[string]bool, len(row))
	for _, a := range row {
		n := f.nodes[f.idx[a]]
		m[n.Zone+"/"+n.Rack] = true
	}
	return m
}

// assignMasters puts a master first in every row: the bucket's serving
// master when it keeps a copy (no role change), else the first surviving
// serving copy (a promoted slave), else the row's node with the fewest
// masters so far. Then it shifts masters along chains of buckets (node o
// masters b, u holds b: u becomes master) until every node masters between
// floor and ceil of Q/n buckets. Shifting along a shortest chain is an
// augmenting path, so the bound is always reached.
func assignMasters(rows [][]string, existing [][]string, nodes []Node) {
	idx := make(map[string]int, len(nodes))
	for i, n := range nodes {
		idx[n.Addr] = i
	}
	// Work on node indices: the path search runs many times.
	irows := make([][]int, len(rows))
	masters := make([]int, len(nodes))
	var fresh []int
	for b, row := range rows {
		if len(row) == 0 {
			continue
		}
		ir := make([]int, len(row))
		for k, a := range row {
			ir[k] = idx[a]
		}
		irows[b] = ir
		pick := -1
		for _, a := range existing[b] {
			if k := indexOf(row, a); a != "" && k >= 0 {
				pick = k
				break
			}
		}
		if pick < 0 {
			fresh = append(fresh, b)
			continue
		}
		ir[0], ir[pick] = ir[pick], ir[0]
		masters[ir[0]]++
	}
	for _, b := range fresh {
		ir := irows[b]
		pick := 0
		for k := range ir {
			if masters[ir[k]] < masters[ir[pick]] {
				pick = k
			}
		}
		ir[0], ir[pick] = ir[pick], ir[0]
		masters[ir[0]]++
	}
	q := 0
	for _, ir := range irows {
		if len(ir) > 0 {
			q++
		}
	}
	n := len(nodes)
	lo, hi := q/n, (q+n-1)/n
	// One-hop shifts settle most of it cheaply; the path search finishes.
	for _, ir := range irows {
		for k := 1; k < len(ir); k++ {
			o, u := ir[0], ir[k]
			if (masters[o] > hi && masters[u] < hi) || (masters[o] > lo && masters[u] < lo) {
				ir[0], ir[k] = u, o
				masters[o]--
				masters[u]++
			}
		}
	}
	// Lower every node above hi, then raise every node below lo.
	for masterPath(irows, masters, func(i int) bool { return masters[i] > hi }, func(i int) bool { return masters[i] < hi }) {
	}
	for masterPath(irows, masters, func(i int) bool { return masters[i] > lo }, func(i int) bool { return masters[i] < lo }) {
	}
	for b, ir := range irows {
		for k, i := range ir {
			rows[b][k] = nodes[i].Addr
		}
	}
}

// masterPath finds a shortest chain from a node satisfying from to a node
// satisfying to, where each hop o -> u is a bucket mastered by o and held
// by u, and applies it (each hop's holder becomes master); false when there
// is none.
func masterPath(rows [][]int, masters []int, from, to func(int) bool) bool {
	n := len(masters)
	mastered := make([][]int, n)
	for b, row := range rows {
		if len(row) > 0 {
			mastered[row[0]] = append(mastered[row[0]], b)
		}
	}
	prevNode := make([]int, n)
	prevBucket := make([]int, n)
	seen := make([]bool, n)
	var queue []int
	for i := 0; i < n; i++ {
		if from(i) {
			seen[i] = true
			prevNode[i] = -1
			queue = append(queue, i)
		}
	}
	for len(queue) > 0 {
		o := queue[0]
		queue = queue[1:]
		for _, b := range mastered[o] {
			for _, u := range rows[b][1:] {
				if seen[u] {
					continue
				}
				seen[u] = true
				prevNode[u], prevBucket[u] = o, b
				if !to(u) {
					queue = append(queue, u)
					continue
				}
				// Walk back: each hop's holder becomes its bucket's master.
				for v := u; prevNode[v] >= 0; v = prevNode[v] {
					row := rows[prevBucket[v]]
					k := slices.Index(row, v)
					row[0], row[k] = row[k], row[0]
					masters[v]++
					masters[prevNode[v]]--
				}
				return true
			}
		}
	}
	return false
}

func contains(row []string, a string) bool { return indexOf(row, a) >= 0 }

func indexOf(row []string, a string) int {
	for i, x := range row {
		if x == a {
			return i
		}
	}
	return -1
}

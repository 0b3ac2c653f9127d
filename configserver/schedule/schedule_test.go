package schedule

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/tairkv/tair/internal/route"
)

func names(n int, zones int) []Node {
	out := make([]Node, n)
	for i := range out {
		out[i] = Node{Addr: fmt.Sprintf("n%02d", i)}
		if zones > 0 {
			// Two racks per zone, not alternating in address order (0 1 1
			// 0 0 1 1 0 ...), so that only the rack preference, not the
			// order of the nodes, spreads a bucket over racks.
			k := i / zones
			out[i].Zone = fmt.Sprintf("z%d", i%zones)
			out[i].Rack = fmt.Sprintf("r%d", (k+k/2)%2)
		}
	}
	return out
}

// check verifies every rule of Build's doc comment on rows.
func check(t *testing.T, rows [][]string, nodes []Node, o Options) {
	t.Helper()
	c := min(o.Copies, len(nodes))
	member := map[string]Node{}
	for _, n := range nodes {
		member[n.Addr] = n
	}
	copies, masters := map[string]int{}, map[string]int{}
	for b, row := range rows {
		if len(row) != c {
			t.Fatalf("bucket %d has %d copies, want %d: %v", b, len(row), c, row)
		}
		seen := map[string]bool{}
		for _, a := range row {
			if _, ok := member[a]; !ok || seen[a] {
				t.Fatalf("bucket %d: bad or duplicate node %q in %v", b, a, row)
			}
			seen[a] = true
			copies[a]++
		}
		masters[row[0]]++
	}
	n := len(nodes)
	q := len(rows)
	for _, nd := range nodes {
		if m := masters[nd.Addr]; m < q/n || m > (q+n-1)/n {
			t.Fatalf("%s masters %d buckets, want %d..%d", nd.Addr, m, q/n, (q+n-1)/n)
		}
	}
	if o.Strategy != PositionSafe {
		lo, hi := q*c/n, (q*c+n-1)/n
		for _, nd := range nodes {
			if k := copies[nd.Addr]; k < lo || k > hi {
				t.Fatalf("%s holds %d copies, want %d..%d", nd.Addr, k, lo, hi)
			}
		}
		return
	}
	zoneSize := map[string]int{}
	for _, nd := range nodes {
		zoneSize[nd.Zone]++
	}
	nz := len(zoneSize)
	for b, row := range rows {
		per := map[string]int{}
		for _, a := range row {
			per[member[a].Zone]++
		}
		for z, size := range zoneSize {
			want := min(c/nz, size)
			if per[z] < want || per[z] > max(want+1, (c+nz-1)/nz) && per[z] > want+1 {
				t.Fatalf("bucket %d has %d copies in zone %s (size %d), want >= %d: %v", b, per[z], z, size, want, row)
			}
		}
		if c <= nz && len(per) != c {
			t.Fatalf("bucket %d uses %d zones, want %d: %v", b, len(per), c, row)
		}
	}
	// Within a zone, node loads differ by at most one.
	zlo, zhi := map[string]int{}, map[string]int{}
	for _, nd := range nodes {
		k := copies[nd.Addr]
		if v, ok := zlo[nd.Zone]; !ok || k < v {
			zlo[nd.Zone] = k
		}
		zhi[nd.Zone] = max(zhi[nd.Zone], k)
	}
	for z := range zoneSize {
		if zhi[z]-zlo[z] > 1 {
			t.Fatalf("zone %s loads %d..%d", z, zlo[z], zhi[z])
		}
	}
}

// lowerBound is the fewest new copies any table obeying the load rules
// needs: every hole must be filled, and a node keeps at most its target.
func lowerBound(serving [][]string, nodes []Node, c int) int {
	member := map[string]bool{}
	for _, n := range nodes {
		member[n.Addr] = true
	}
	held := map[string]int{}
	holes := 0
	for _, row := range serving {
		k := 0
		for _, a := range row {
			if member[a] && k < c {
				held[a]++
				k++
			}
		}
		holes += c - k
	}
	total := len(serving) * c
	n := len(nodes)
	var counts []int
	for _, nd := range nodes {
		counts = append(counts, held[nd.Addr])
	}
	slices.Sort(counts)
	slices.Reverse(counts)
	keep := 0
	for i, k := range counts {
		tgt := total / n
		if i < total%n {
			tgt++
		}
		keep += min(k, tgt)
	}
	return max(holes, total-keep)
}

func newCopies(old, now [][]string) int {
	moved := 0
	for b := range now {
		for _, a := range now[b] {
			if b >= len(old) || !slices.Contains(old[b], a) {
				moved++
			}
		}
	}
	return moved
}

func strip(rows [][]string, gone map[string]bool) [][]string {
	out := make([][]string, len(rows))
	for b, row := range rows {
		for _, a := range row {
			if gone[a] {
				a = ""
			}
			out[b] = append(out[b], a)
		}
	}
	return out
}

func TestBuildFirstTable(t *testing.T) {
	nodes := names(3, 0)
	rows := buildChecked(t, nodes, Options{Buckets: 1023, Copies: 2})
	if rows[0][0] == rows[0][1] {
		t.Fatal("duplicate")
	}
}

func TestBuildMoreCopiesThanNodes(t *testing.T) {
	nodes := names(2, 0)
	buildChecked(t, nodes, Options{Buckets: 10, Copies: 3})
}

// buildChecked builds a first table, which must succeed, and checks it.
func buildChecked(t *testing.T, nodes []Node, o Options) [][]string {
	t.Helper()
	rows, err := Build(nil, nodes, o)
	if err != nil {
		t.Fatal(err)
	}
	check(t, rows, nodes, o)
	return rows
}

func TestBuildRefusesUnequalZones(t *testing.T) {
	nodes := []Node{{Addr: "a", Zone: "z1"}, {Addr: "b", Zone: "z2"}, {Addr: "c", Zone: "z2"}, {Addr: "d", Zone: "z2"}}
	_, err := Build(nil, nodes, Options{Buckets: 16, Copies: 2, Strategy: PositionSafe})
	if !errors.Is(err, ErrUnbuildable) {
		t.Fatalf("err = %v, want ErrUnbuildable", err)
	}
	if _, err := Build(nil, nodes, Options{Buckets: 16, Copies: 2, Strategy: PositionSafe, DiffRatio: 0.7}); err != nil {
		t.Fatalf("ratio 0.7: %v", err)
	}
}

func TestDiff(t *testing.T) {
	serving := [][]string{{"a", "b"}, {"a", ""}, {"", ""}, {"b", "c"}}
	dest := [][]string{{"a", "c"}, {"a", "c"}, {"b", "c"}, {"c", "b"}}
	got := Diff(serving, dest)
	want := []Move{
		{Move: routeMove(0, "b", "c")},
		{Move: routeMove(1, "a", "c"), Recovery: true},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("Diff = %+v, want %+v", got, want)
	}
}

// TestBuildProperties runs random clusters through joins, leaves and
// failures; after every rebuild the rules hold and the copies moved stay
// near the fewest any table obeying the rules needs (minNewCopies, an
// exact minimum: zone-aware for position-safe, with the builder's zone
// shares). Its log line gives the ratio of the sums (`make test` prints
// it).
//
// Per rebuild, the moves may exceed the minimum by a slack:
//   - balance, 2 copies: filling the holes is an exact assignment (free
//     hand-over chains, freePath) given the copies kept, and only the
//     choice of which copies a node above its target sheds is greedy;
//     over 10,000 rebuilds it cost 2 copies at most.
//   - position-safe, 2 + a quarter of the minimum: besides that, each
//     bucket's extra copies are given to zones bucket by bucket, against
//     projected node loads, before any node is chosen, not in one joint
//     assignment; when a rebuild shifts the zones' shares (a zone empties
//     or a node joins a small zone) a few rebuilds in a thousand move up
//     to 13% (once 25% of 28) more than needed. Over 2 more is allowed
//     in at most 1% of the rebuilds.
func TestBuildProperties(t *testing.T) {
	for _, strat := range []Strategy{Balance, PositionSafe} {
		t.Run(string(strat), func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(1, uint64(len(strat))))
			moved, least, rebuilds, refused, worst, over := 0, 0, 0, 0, 0, 0
			rackCases, rackSplit := 0, 0
			clusters := 1000
			if testing.Short() || raceEnabled {
				clusters = 150
			}
			for cl := 0; cl < clusters; cl++ {
				q := []int{1, 7, 64, 257, 1023}[rng.IntN(5)]
				copies := 1 + rng.IntN(3)
				zones := 0
				if strat == PositionSafe {
					zones = 1 + rng.IntN(3)
				}
				nodes := names(1+rng.IntN(8), zones)
				next := len(nodes)
				o := Options{Buckets: q, Copies: copies, Strategy: strat, DiffRatio: 0.6}
				// build is Build and check; a refusal for zones too
				// unequal is counted, not an error (false).
				build := func(serving [][]string, nodes []Node) ([][]string, bool) {
					rows, err := Build(serving, nodes, o)
					if errors.Is(err, ErrUnbuildable) && strings.Contains(err.Error(), "difference ratio") {
						refused++
						return nil, false
					} else if err != nil {
						t.Fatal(err)
					}
					check(t, rows, nodes, o)
					return rows, true
				}
				rows, ok := build(nil, nodes)
				if !ok {
					continue
				}
				if strat == PositionSafe {
					// A first table places every copy: where a zone has
					// racks of equal size, enough for a bucket's copies
					// there, the copies are on different racks.
					if k, split := rackSpread(rows, nodes); split < k {
						t.Fatalf("%d of %d buckets' copies share a rack in a zone with racks to spare (q=%d copies=%d nodes=%v)", k-split, k, q, copies, nodes)
					}
				}
				for step := 0; step < 10; step++ {
					serving := rows
					switch ev := rng.IntN(3); {
					case ev == 0 || len(nodes) == 1: // join
						nd := names(next+1, max(zones, 0))[next]
						if zones > 0 {
							nd.Zone = fmt.Sprintf("z%d", rng.IntN(zones))
						}
						next++
						nodes = append(nodes, nd)
					default: // leave (drain) or fail: the node's copies are gone
						k := rng.IntN(len(nodes))
						gone := nodes[k].Addr
						nodes = slices.Delete(slices.Clone(nodes), k, k+1)
						if ev == 2 {
							serving = strip(rows, map[string]bool{gone: true})
						}
					}
					got, ok := build(serving, nodes)
					if !ok {
						break
					}
					c := min(copies, len(nodes))
					total, lo, hi := zoneLimits(got, nodes, c, strat)
					mn, err := minNewCopies(serving, nodes, c, total, lo, hi)
					if err != nil {
						t.Fatal(err)
					}
					n := newCopies(serving, got)
					if strat == Balance {
						if lb := lowerBound(serving, nodes, c); lb > mn {
							t.Fatalf("minimum %d below the counting bound %d", mn, lb)
						}
					}
					if n < mn {
						t.Fatalf("moved %d copies, below the minimum %d: minNewCopies is wrong", n, mn)
					}
					slack := 2
					if strat == PositionSafe {
						slack += mn / 4
					}
					if n > mn+slack {
						t.Fatalf("rebuild after %d steps (q=%d copies=%d nodes=%v) moved %d copies, minimum %d, slack %d",
							step, q, copies, nodes, n, mn, slack)
					}
					if n > mn+2 {
						over++
					}
					worst = max(worst, n-mn)
					if strat == PositionSafe {
						k, split := rackSpread(got, nodes)
						rackCases += k
						rackSplit += split
					}
					moved += n
					least += mn
					rebuilds++
					rows = got
				}
			}
			ratio := float64(moved) / float64(max(least, 1))
			t.Logf("%s: %d rebuilds (%d refused), %d copies moved, minimum %d, ratio %.4f; per rebuild at most %d over the minimum, %d rebuilds over by more than 2",
				strat, rebuilds, refused, moved, least, ratio, worst, over)
			if strat == PositionSafe {
				// Rebuilds keep copies where they are rather than move
				// them for racks (a move is a migration; racks are a
				// preference), so a pair kept on one rack stays (3.3% of
				// the bucket-zones checked), and a new copy goes where
				// there is room, on a used rack when the unused one is
				// full (2.3%): 94.4% are spread, 90% is required.
				t.Logf("%s: racks spread in %d of %d bucket-zones after rebuilds", strat, rackSplit, rackCases)
				if rackSplit < rackCases*90/100 {
					t.Fatalf("racks spread in only %d of %d bucket-zones after rebuilds", rackSplit, rackCases)
				}
			}
			limit := 1.001
			if strat == PositionSafe {
				limit = 1.005
			}
			if ratio > limit {
				t.Fatalf("moved %.4f x the minimum, want <= %.3f", ratio, limit)
			}
			if over > rebuilds/100 {
				t.Fatalf("%d of %d rebuilds moved more than 2 copies over the minimum", over, rebuilds)
			}
		})
	}
}

// rackSpread counts the (bucket, zone) pairs with two or more copies in a
// zone whose racks all have the same number of nodes, at least as many
// racks as the bucket has copies there, and more than one (k), and of
// those the ones whose copies are on different racks (split).
func rackSpread(rows [][]string, nodes []Node) (k, split int) {
	node := map[string]Node{}
	racks := map[string]map[string]int{}
	for _, n := range nodes {
		node[n.Addr] = n
		if racks[n.Zone] == nil {
			racks[n.Zone] = map[string]int{}
		}
		racks[n.Zone][n.Rack]++
	}
	even := map[string]bool{}
	for z, rs := range racks {
		sizes := map[int]bool{}
		for _, c := range rs {
			sizes[c] = true
		}
		even[z] = len(rs) > 1 && len(sizes) == 1
	}
	for _, row := range rows {
		per := map[string][]string{}
		for _, a := range row {
			per[node[a].Zone] = append(per[node[a].Zone], node[a].Rack)
		}
		for z, rs := range per {
			if len(rs) < 2 || !even[z] || len(rs) > len(racks[z]) {
				continue
			}
			k++
			slices.Sort(rs)
			if len(slices.Compact(rs)) == len(per[z]) {
				split++
			}
		}
	}
	return k, split
}

// TestMinNewCopiesExact checks minNewCopies against every table of small
// clusters.
func TestMinNewCopiesExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	compared := 0
	defer func() {
		if compared < 100 {
			t.Errorf("compared %d clusters, want 100 or more", compared)
		}
	}()
	for trial := 0; trial < 300; trial++ {
		strat := []Strategy{Balance, PositionSafe}[trial%2]
		zones := 0
		if strat == PositionSafe {
			zones = 1 + rng.IntN(2)
		}
		all := names(2+rng.IntN(3), zones)
		q, copies := 1+rng.IntN(3), 1+rng.IntN(3)
		o := Options{Buckets: q, Copies: copies, Strategy: strat, DiffRatio: 1}
		serving, err := Build(nil, all, o)
		if err != nil {
			continue
		}
		nodes := slices.Clone(all)
		if k := rng.IntN(len(nodes) + 1); k < len(nodes) && len(nodes) > 1 {
			gone := nodes[k].Addr
			nodes = slices.Delete(nodes, k, k+1)
			if rng.IntN(2) == 0 {
				serving = strip(serving, map[string]bool{gone: true})
			}
		}
		c := min(copies, len(nodes))
		got, err := Build(serving, nodes, o)
		if err != nil {
			continue
		}
		total, lo, hi := zoneLimits(got, nodes, c, strat)
		mn, err := minNewCopies(serving, nodes, c, total, lo, hi)
		if err != nil {
			t.Fatal(err)
		}
		if want := bruteMinNewCopies(serving, nodes, c, strat, total, lo, hi); mn != want {
			t.Fatalf("%s q=%d c=%d nodes=%v serving=%v: minNewCopies %d, every table %d", strat, q, c, nodes, serving, mn, want)
		}
		compared++
	}
}

// bruteMinNewCopies tries every table: each bucket any c distinct nodes.
func bruteMinNewCopies(serving [][]string, nodes []Node, c int, strat Strategy, total, lo, hi map[string]int) int {
	zoneOf := func(n Node) string {
		if strat == PositionSafe {
			return n.Zone
		}
		return ""
	}
	var sets [][]int // every c-subset of nodes
	var pick func(from int, cur []int)
	pick = func(from int, cur []int) {
		if len(cur) == c {
			sets = append(sets, slices.Clone(cur))
			return
		}
		for i := from; i < len(nodes); i++ {
			pick(i+1, append(cur, i))
		}
	}
	pick(0, nil)
	best := -1
	load := make([]int, len(nodes))
	var walk func(b, cost int)
	walk = func(b, cost int) {
		if best >= 0 && cost >= best {
			return
		}
		if b == len(serving) {
			zl := map[string][]int{}
			zt := map[string]int{}
			for i, n := range nodes {
				zl[zoneOf(n)] = append(zl[zoneOf(n)], load[i])
				zt[zoneOf(n)] += load[i]
			}
			for z, ls := range zl {
				if zt[z] != total[z] || slices.Max(ls)-slices.Min(ls) > 1 {
					return
				}
			}
			best = cost
			return
		}
		for _, set := range sets {
			per := map[string]int{}
			add := 0
			for _, i := range set {
				per[zoneOf(nodes[i])]++
				if !slices.Contains(serving[b], nodes[i].Addr) {
					add++
				}
			}
			ok := true
			for z := range lo {
				if per[z] < lo[z] || per[z] > hi[z] {
					ok = false
				}
			}
			if !ok {
				continue
			}
			for _, i := range set {
				load[i]++
			}
			walk(b+1, cost+add)
			for _, i := range set {
				load[i]--
			}
		}
	}
	walk(0, 0)
	return best
}

func routeMove(b route.BucketID, from, to string) route.Move {
	return route.Move{Bucket: b, From: from, To: to}
}

package schedule

import (
	"fmt"
	"math"
	"slices"
	"sort"
)

// DefaultDiffRatio is Tair's default _build_diff_ratio.
const DefaultDiffRatio = 0.6

// buildPositionSafe splits each bucket's c copies over zones (every zone
// gets base = c/z copies of every bucket, the c%z extras go to zones in
// proportion to their nodes, at most one extra per zone per bucket), then
// fills each zone as an independent balanced problem.
func buildPositionSafe(existing [][]string, nodes []Node, c int, o Options) ([][]string, error) {
	byZone := map[string][]Node{}
	for _, n := range nodes {
		byZone[n.Zone] = append(byZone[n.Zone], n)
	}
	zones := make([]string, 0, len(byZone))
	for z := range byZone {
		zones = append(zones, z)
	}
	sort.Strings(zones)
	if err := checkDiffRatio(zones, byZone, c, o.DiffRatio); err != nil {
		return nil, err
	}
	q := o.Buckets
	nz := len(zones)
	size := make([]int, nz)
	base := make([]int, nz)
	spare := make([]int, nz) // extras a zone may take per bucket
	r := c
	for i, z := range zones {
		size[i] = len(byZone[z])
		base[i] = min(c/nz, size[i])
		r -= base[i]
	}
	capSum := 0
	for i := range zones {
		spare[i] = min(1, size[i]-base[i])
		capSum += spare[i]
	}
	if capSum < r { // some zone is smaller than c/z: let the others take more
		for i := range zones {
			spare[i] = size[i] - base[i]
		}
	}
	// Zone totals of extras, water-filled so per-node load is even.
	quota := make([]int, nz)
	for u := 0; u < r*q; u++ {
		best := -1
		for i := range zones {
			if quota[i] >= spare[i]*q {
				continue
			}
			if best < 0 || float64(base[i]*q+quota[i]+1)/float64(size[i]) < float64(base[best]*q+quota[best]+1)/float64(size[best]) {
				best = i
			}
		}
		quota[best]++
	}
	// Per bucket: which zones get the extras. First, in a pass over every
	// bucket, the zones that hold more than base copies of it already
	// (each such extra keeps a copy where it is), while their quota
	// lasts. Then the extras still to place, each to the zone where a
	// node that lacks the bucket has the most room left, as projected
	// from the copies kept and placed so far: an extra needs a new copy
	// there, and a zone whose free room sits only on nodes holding the
	// bucket already would need a kept copy moved to make way. (One pass
	// that weighed keeping against the quota left per bucket ignored
	// keeping whenever a zone's share was small, as with three zones and
	// one or two copies, and alternating the extras between zones
	// bucket by bucket could leave a zone's holes on one node: a node
	// joining or leaving moved up to several times the copies needed.)
	slots := make([][]int, nz) // slots[zone][bucket]
	for i := range slots {
		slots[i] = make([]int, q)
	}
	// Projected load per node: its copies (assumed kept) and the new
	// copies the base slots need, each on the node of its zone with the
	// most room that lacks the bucket.
	nodeIdx := map[string]int{}
	nodeZone := []int{}
	for i, z := range zones {
		for _, n := range byZone[z] {
			nodeIdx[n.Addr] = len(nodeZone)
			nodeZone = append(nodeZone, i)
		}
	}
	target := make([]float64, len(nodeZone))
	for x, i := range nodeZone {
		target[x] = float64(base[i]*q+quota[i]) / float64(size[i])
	}
	proj := make([]float64, len(nodeZone))
	have := make([][]int, q)
	holders := make([][]int, q)
	// counted are the holders whose copy the projection counts.
	counted := make([][]int, q)
	for b := 0; b < q; b++ {
		have[b] = make([]int, nz)
		for _, a := range existing[b] {
			if x, ok := nodeIdx[a]; ok && !slices.Contains(holders[b], x) {
				holders[b] = append(holders[b], x)
				have[b][nodeZone[x]]++
			}
		}
	}
	// roomiest is the node of zone i lacking bucket b (and not taken for
	// it yet) with the most room, -1 when none.
	roomiest := func(b, i int) int {
		best := -1
		for _, n := range byZone[zones[i]] {
			x := nodeIdx[n.Addr]
			if !slices.Contains(holders[b], x) && (best < 0 || target[x]-proj[x] > target[best]-proj[best]) {
				best = x
			}
		}
		return best
	}
	place := func(b, i int) {
		if x := roomiest(b, i); x >= 0 {
			holders[b] = append(holders[b], x)
			counted[b] = append(counted[b], x)
			proj[x]++
		}
	}
	// keepers are bucket b's holders in zone i not counted yet, most
	// room first.
	keepers := func(b, i int) []int {
		var out []int
		for _, x := range holders[b] {
			if nodeZone[x] == i && !slices.Contains(counted[b], x) {
				out = append(out, x)
			}
		}
		sort.SliceStable(out, func(u, v int) bool { return target[out[u]]-proj[out[u]] > target[out[v]]-proj[out[v]] })
		return out
	}
	// The base copies kept: first where the bucket has no more than base
	// copies in the zone (all stay), then, on the nodes with most room,
	// where it has more.
	for _, choice := range []bool{false, true} {
		for b := 0; b < q; b++ {
			for i := range zones {
				if (have[b][i] > base[i]) != choice {
					continue
				}
				for _, x := range keepers(b, i)[:min(have[b][i], base[i])] {
					proj[x]++
					counted[b] = append(counted[b], x)
				}
			}
		}
	}
	for b := 0; b < q; b++ {
		for i := range zones {
			for k := have[b][i]; k < base[i]; k++ {
				place(b, i)
			}
		}
	}
	extra := make([][]int, q) // extra[bucket][zone]
	for b := 0; b < q; b++ {
		extra[b] = make([]int, nz)
		for k := 0; k < r; k++ {
			// A copy beyond base is worth keeping where its node has room
			// for it: a node above its target sheds it anyway.
			best, bestX := -1, -1
			for i := range zones {
				if extra[b][i] >= spare[i] || quota[i] == 0 || have[b][i] <= base[i]+extra[b][i] {
					continue
				}
				x := keepers(b, i)[0]
				if proj[x]+1 > math.Ceil(target[x]) {
					continue
				}
				if best < 0 || quota[i] > quota[best] {
					best, bestX = i, x
				}
			}
			if best < 0 {
				break
			}
			extra[b][best]++
			quota[best]--
			proj[bestX]++
			counted[b] = append(counted[b], bestX)
		}
	}
	for b := 0; b < q; b++ {
		placed := 0
		for _, e := range extra[b] {
			placed += e
		}
		for ; placed < r; placed++ {
			best, bestRoom := -1, 0.0
			for i := range zones {
				if extra[b][i] >= spare[i] || quota[i] == 0 {
					continue
				}
				room := math.Inf(-1)
				if x := roomiest(b, i); x >= 0 {
					room = target[x] - proj[x]
				}
				if best < 0 || room > bestRoom || room == bestRoom && quota[i] > quota[best] {
					best, bestRoom = i, room
				}
			}
			if best < 0 { // quotas ran out early: overflow the zone with most room
				for i := range zones {
					if extra[b][i] < spare[i] && (best < 0 || spare[i]-extra[b][i] > spare[best]-extra[b][best]) {
						best = i
					}
				}
			}
			extra[b][best]++
			if quota[best] > 0 {
				quota[best]--
			}
			if have[b][best] < base[best]+extra[b][best] {
				place(b, best)
			}
		}
		for i := range zones {
			slots[i][b] = base[i] + extra[b][i]
		}
	}
	rows := make([][]string, q)
	for i, z := range zones {
		// A bucket's copies in the zones filled before are its partners
		// here, and so are the zones still to fill (by name, their nodes
		// not chosen yet): a node's buckets spread their other copies over
		// every other zone, then over that zone's nodes.
		partners := make([][]string, q)
		for b := range partners {
			partners[b] = slices.Clone(rows[b])
			for j := i + 1; j < len(zones); j++ {
				if slots[j][b] > 0 {
					partners[b] = append(partners[b], "zone "+zones[j])
				}
			}
		}
		zr, err := fill(slots[i], byZone[z], existing, partners)
		if err != nil {
			return nil, err
		}
		for b := range rows {
			rows[b] = append(rows[b], zr[b]...)
		}
	}
	return rows, nil
}

// checkDiffRatio refuses zones too unequal for even load: with copies
// spread over zones, a small zone's nodes carry its whole share. The ratio
// is (largest - smallest) / largest zone; with two zones that is Tair's
// |SA - SB| / SA. (Tair compares the largest zone with all the others
// together, which would refuse three equal zones; we compare with the
// smallest.)
func checkDiffRatio(zones []string, byZone map[string][]Node, c int, ratio float64) error {
	if len(zones) < 2 || c < 2 {
		return nil
	}
	if ratio <= 0 {
		ratio = DefaultDiffRatio
	}
	lo, hi := len(byZone[zones[0]]), len(byZone[zones[0]])
	for _, z := range zones {
		lo = min(lo, len(byZone[z]))
		hi = max(hi, len(byZone[z]))
	}
	if d := float64(hi-lo) / float64(hi); d > ratio {
		return fmt.Errorf("%w: zones hold %d to %d nodes, difference ratio %.2f exceeds %.2f", ErrUnbuildable, lo, hi, d, ratio)
	}
	return nil
}

package schedule

import (
	"fmt"
	"sort"
)

// DefaultDiffRatio is Tair's default _build_diff_ratio.
const DefaultDiffRatio = 0.6

// buildPositionSafe splits each bucket's c copies over zones (every zone
// gets base = c/z copies of every bucket, the c%z extras go to zones in
// proportion to their nodes, at most one extra per zone per bucket), then
// fills each zone as an independent balanced problem.
func buildPositionSafe(existing [][]string, nodes []Node, c int, o Options) ([][]string, error) {
	zoneOf := make(map[string]string, len(nodes))
	byZone := map[string][]Node{}
	for _, n := range nodes {
		zoneOf[n.Addr] = n.Zone
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
	// Per bucket: which zones get the extras. Keep the zones that hold
	// more than base copies already; otherwise take the zone with the most
	// quota left per bucket still to place.
	slots := make([][]int, nz) // slots[zone][bucket]
	for i := range slots {
		slots[i] = make([]int, q)
	}
	zi := make(map[string]int, nz)
	for i, z := range zones {
		zi[z] = i
	}
	for b := 0; b < q; b++ {
		have := make([]int, nz)
		seen := map[string]bool{}
		for _, a := range existing[b] {
			if z, ok := zoneOf[a]; ok && !seen[a] {
				seen[a] = true
				have[zi[z]]++
			}
		}
		extra := make([]int, nz)
		for k := 0; k < r; k++ {
			best, bestKeep, bestLeft := -1, false, 0.0
			for i := range zones {
				if extra[i] >= spare[i] || quota[i] == 0 {
					continue
				}
				keep := have[i] > base[i]+extra[i]
				left := float64(quota[i]) / float64(q-b)
				if best < 0 || (keep && !bestKeep && left > 0.5/float64(r)) || (keep == bestKeep && left > bestLeft) {
					best, bestKeep, bestLeft = i, keep, left
				}
			}
			if best < 0 { // quotas ran out early: overflow the zone with most room
				for i := range zones {
					if extra[i] < spare[i] && (best < 0 || spare[i]-extra[i] > spare[best]-extra[best]) {
						best = i
					}
				}
			}
			extra[best]++
			if quota[best] > 0 {
				quota[best]--
			}
		}
		for i := range zones {
			slots[i][b] = base[i] + extra[i]
		}
	}
	rows := make([][]string, q)
	for i, z := range zones {
		zr, err := fill(slots[i], byZone[z], existing)
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

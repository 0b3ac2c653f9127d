package configserver

import (
	"fmt"
	"maps"
	"slices"

	"github.com/tairkv/tair/internal/route"
)

// Pure edits of a bucket table: the rules by which a failure, a hand-off,
// a finished move or a promotion changes rows, kept apart from the leader
// loop (leader.go) that decides when to apply them. Each takes the table
// (and who is alive) and changes nothing else.

// wanted reports whether a running move still serves the destination: its
// target must still be an added copy and its source must still hold one.
func wanted(t *route.Table, mv route.Move) bool {
	b := mv.Bucket
	return slices.Contains(t.Destination[b], mv.To) && !slices.Contains(t.Serving[b], mv.To) &&
		slices.Contains(t.Serving[b], mv.From)
}

// behindSource reports whether mv copies a slave's copy that is marked
// behind its master: it may lack writes the master acknowledged without
// it, and a copy made from it would lack them too while passing for
// caught up (the mark names the slave, not its copy's new holder).
func behindSource(t *route.Table, mv route.Move) bool {
	if int(mv.Bucket) >= len(t.Serving) {
		return false
	}
	row := t.Serving[mv.Bucket]
	return len(row) > 0 && row[0] != "" && row[0] != mv.From && slices.Contains(row, mv.From) && t.IsBehind(row[0], mv.From)
}

// applyDone installs a finished move in the serving row. A rebalance move
// (source not in the destination) hands the source's slot to the target,
// so a moving master stays master on its new node; a recovery move (the
// source, the master, keeps its copy) fills a lost slot.
//
// When the master's own copy moves, its slaves marked behind it lose
// their slots (dropBehindOld), as at a failover: they may lack writes the
// old master acknowledged without them, which the moved copy holds, and
// the marks are kept per master, so they would pass for caught up with
// the new one, which has no backlog to bring them over. Their copies are
// rebuilt from the new master instead. Seen in the chaos suite (seed
// 9939): a slave cut off from its master was marked behind, the master's
// copy moved, the mark went with the old master, the slave later became
// master without an acknowledged write, and its full copy overwrote the
// moved copy that had it.
func applyDone(t *route.Table, mv route.Move) {
	row := t.Serving[mv.Bucket]
	if slices.Contains(row, mv.To) {
		return
	}
	if k := slices.Index(row, mv.From); k >= 0 && !slices.Contains(t.Destination[mv.Bucket], mv.From) {
		if k == 0 {
			dropBehindOld(t, row, 0)
		}
		row[k] = mv.To
		return
	}
	if k := slices.Index(row, ""); k >= 0 {
		row[k] = mv.To
	} else {
		row = append(row, mv.To)
	}
	t.Serving[mv.Bucket] = row
	promote(row)
}

// dropsCaughtUp reports whether replacing row by dest would drop a live,
// caught-up copy while dest keeps one that is not (down, or behind the
// master): the bucket would have fewer caught-up copies than before.
func dropsCaughtUp(t *route.Table, row, dest []string, alive func(string) bool) bool {
	if len(row) == 0 || row[0] == "" {
		return false
	}
	drops := false
	for j, a := range row {
		if a != "" && !slices.Contains(dest, a) && alive(a) && (j == 0 || !t.IsBehind(row[0], a)) {
			drops = true
		}
	}
	return drops && !caughtUpAll(t, row, slices.DeleteFunc(slices.Clone(dest), func(a string) bool { return !slices.Contains(row, a) }), alive)
}

// strip removes addr from the table: its serving copies become holes (a
// caught-up slave is promoted where it was master) and moves from or to
// it end. With keepLast, a bucket whose every other copy may lack writes
// addr acknowledged (its last copy, or slaves behind it) stays on addr: a
// down node may come back with its data (Tair keeps such buckets on the
// dead node rather than empty them); the bucket is unavailable meanwhile.
// Without keepLast (addr lost its data) any remaining copy takes over.
func strip(t *route.Table, addr string, keepLast bool, alive func(string) bool) bool {
	changed := false
	for _, row := range t.Serving {
		k := slices.Index(row, addr)
		if k < 0 {
			continue
		}
		if k == 0 {
			j := caughtUp(t, row, alive)
			if j < 0 && keepLast {
				continue
			}
			if j > 0 {
				dropBehindOld(t, row, j)
			}
			row[0] = ""
			if j > 0 {
				row[0], row[j] = row[j], ""
			} else {
				promote(row)
			}
		} else {
			row[k] = ""
		}
		changed = true
	}
	for m := range t.Behind {
		t.SetBehind(m, addr, false)
	}
	if endMoves(t, addr) {
		changed = true
	}
	for b, row := range t.Destination {
		if slices.Contains(row, addr) {
			// Until the rebuild, the destination must not name the node.
			t.Destination[b] = slices.DeleteFunc(slices.Clone(row), func(a string) bool { return a == addr })
			changed = true
		}
	}
	return changed
}

// handOff takes a down node, within its handoff window, out of the
// master slots only: where it was master a caught-up slave takes over
// and it stays as a slave; where it was a slave it stays. Either way it
// is marked behind the row's master, which keeps the writes it misses in
// its replication backlog and replays them when it returns. A bucket
// with no caught-up copy keeps it as master (unavailable) until it comes
// back. Moves from or to it end.
func handOff(t *route.Table, addr string, alive func(string) bool) bool {
	changed := false
	for _, row := range t.Serving {
		k := slices.Index(row, addr)
		if k < 0 {
			continue
		}
		if k == 0 {
			j := caughtUp(t, row, alive)
			if j < 0 {
				continue
			}
			dropBehindOld(t, row, j)
			row[0], row[j] = row[j], row[0]
			changed = true
		}
		if !t.IsBehind(row[0], addr) {
			t.SetBehind(row[0], addr, true)
			changed = true
		}
	}
	if endMoves(t, addr) {
		changed = true
	}
	return changed
}

// dropBehindOld empties the slots of the row's slaves marked behind its
// master, which the slave at j is about to replace: they may lack writes
// the old master acknowledged and the new master holds, and the marks
// (kept per master) would go with the old master, so they would pass for
// caught up with the new one, which has no backlog to bring them over.
// Their copies are rebuilt instead (a recovery move). j is 0 when no
// slave replaces the master (its copy moved to a new node: applyDone). Seen in the chaos
// suite: a slave cut off was marked behind, came back, and its master was
// cut off before the backlog reached it; the promoted slave's row called
// it caught up, and it later became master without 50 acknowledged
// writes.
func dropBehindOld(t *route.Table, row []string, j int) {
	for i := 1; i < len(row); i++ {
		if i != j && row[i] != "" && t.IsBehind(row[0], row[i]) {
			row[i] = ""
		}
	}
}

// endMoves drops the moves from or to addr; true when there were some.
func endMoves(t *route.Table, addr string) bool {
	n := len(t.Migrating)
	t.Migrating = slices.DeleteFunc(t.Migrating, func(mv route.Move) bool { return mv.From == addr || mv.To == addr })
	return len(t.Migrating) != n
}

// caughtUp returns the index of the first slave in row that is alive and
// not behind the row's master (it has applied every write the master
// acknowledged), or -1.
func caughtUp(t *route.Table, row []string, alive func(string) bool) int {
	for j := 1; j < len(row); j++ {
		if row[j] != "" && alive(row[j]) && !t.IsBehind(row[0], row[j]) {
			return j
		}
	}
	return -1
}

func copiesIn(row []string) int {
	n := 0
	for _, a := range row {
		if a != "" {
			n++
		}
	}
	return n
}

// promote moves the first surviving copy to the master slot.
func promote(row []string) {
	if len(row) == 0 || row[0] != "" {
		return
	}
	for k := 1; k < len(row); k++ {
		if row[k] != "" {
			row[0], row[k] = row[k], ""
			return
		}
	}
}

// tableNodes lists every node the table names: serving, destination and
// move targets.
func tableNodes(t *route.Table) []string {
	seen := map[string]bool{}
	for _, rows := range [][][]string{t.Serving, t.Destination} {
		for _, row := range rows {
			for _, a := range row {
				if a != "" {
					seen[a] = true
				}
			}
		}
	}
	for _, mv := range t.Migrating {
		seen[mv.From], seen[mv.To] = true, true
	}
	return sortedKeys(seen)
}

func tableEqual(a, b *route.Table) bool {
	return a.Buckets == b.Buckets && a.Copies == b.Copies &&
		rowsEqual(a.Serving, b.Serving) && rowsEqual(a.Destination, b.Destination) &&
		slices.Equal(a.Migrating, b.Migrating) &&
		maps.EqualFunc(a.Behind, b.Behind, func(x, y []string) bool { return slices.Equal(x, y) }) &&
		maps.Equal(a.BehindEpoch, b.BehindEpoch) && maps.Equal(a.Incarnations, b.Incarnations)
}

// recordIncarnations names in t the incarnation of every known node (its
// rows already reflect a restart without data: step 1 stripped them).
func recordIncarnations(t *route.Table, m *meta) {
	for addr, nm := range m.Nodes {
		if nm.Removed {
			continue // holds nothing; named again when added back
		}
		if got, ok := t.Incarnations[addr]; !ok || got != nm.Incarnation {
			if t.Incarnations == nil {
				t.Incarnations = map[string]int64{}
			}
			t.Incarnations[addr] = nm.Incarnation
		}
	}
}

func rowsEqual(a, b [][]string) bool {
	return slices.EqualFunc(a, b, func(x, y []string) bool { return slices.Equal(x, y) })
}

func cloneRows(rows [][]string) [][]string {
	out := make([][]string, len(rows))
	for i, r := range rows {
		out[i] = slices.Clone(r)
	}
	return out
}

// firstCopy returns the row's first surviving copy, "" when none is left.
func firstCopy(row []string) string {
	for _, a := range row {
		if a != "" {
			return a
		}
	}
	return ""
}

// compactList prints at most n numbers, then how many more.
func compactList(xs []int, n int) string {
	if len(xs) <= n {
		return fmt.Sprint(xs)
	}
	return fmt.Sprintf("%v and %d more", xs[:n], len(xs)-n)
}

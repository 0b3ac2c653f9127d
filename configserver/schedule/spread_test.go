package schedule

import (
	"testing"
)

// sharedCounts returns, for each node, how many buckets it shares with
// every other node.
func sharedCounts(rows [][]string) map[string]map[string]int {
	out := map[string]map[string]int{}
	for _, row := range rows {
		for _, a := range row {
			if a == "" {
				continue
			}
			if out[a] == nil {
				out[a] = map[string]int{}
			}
			for _, o := range row {
				if o != "" && o != a {
					out[a][o]++
				}
			}
		}
	}
	return out
}

// sharedRange is the fewest and most buckets any two of nodes share.
func sharedRange(rows [][]string, nodes []Node) (lo, hi int) {
	sh := sharedCounts(rows)
	lo = 1 << 30
	for _, a := range nodes {
		for _, o := range nodes {
			if a.Addr != o.Addr {
				lo, hi = min(lo, sh[a.Addr][o.Addr]), max(hi, sh[a.Addr][o.Addr])
			}
		}
	}
	return lo, hi
}

func spreadOf(m map[string]int) (lo, hi int) {
	lo = 1 << 30
	for _, v := range m {
		lo, hi = min(lo, v), max(hi, v)
	}
	return lo, hi
}

// TestBuildSpreadsCopies: a node's buckets have their other copies on every
// other node, evenly, so that a lost node is rebuilt from every survivor at
// once and a second loss takes only the buckets the two shared. Choosing
// by room with ties to the lowest address paired the nodes (with 4 or 6
// nodes each node shared all its buckets with one partner and none with
// the others).
func TestBuildSpreadsCopies(t *testing.T) {
	for _, n := range []int{3, 4, 5, 6, 8} {
		for _, c := range []int{2, 3} {
			nodes := names(n, 0)
			o := Options{Buckets: 1023, Copies: c}
			rows, err := Build(nil, nodes, o)
			if err != nil {
				t.Fatal(err)
			}
			if lo, hi := sharedRange(rows, nodes); hi-lo > 2 {
				t.Errorf("n=%d c=%d first table: two nodes share %d..%d buckets, want within 2", n, c, lo, hi)
			}

			// A node fails: its copies are rebuilt from every survivor,
			// onto every survivor, and the copies stay spread.
			serving := strip(rows, map[string]bool{nodes[0].Addr: true})
			rest := nodes[1:]
			got, err := Build(serving, rest, o)
			if err != nil {
				t.Fatal(err)
			}
			src, dst := map[string]int{}, map[string]int{}
			moves := Diff(serving, got)
			for _, mv := range moves {
				if !mv.Recovery {
					t.Fatalf("n=%d c=%d: a failure's rebuild planned a rebalance move %+v", n, c, mv)
				}
				src[mv.From]++
				dst[mv.To]++
			}
			if c > len(rest) {
				continue // every survivor holds every bucket already
			}
			if len(src) != len(rest) || len(dst) != len(rest) {
				t.Errorf("n=%d c=%d: rebuild reads from %d and writes to %d of %d survivors", n, c, len(src), len(dst), len(rest))
			}
			avg := len(moves) / len(rest)
			if lo, hi := spreadOf(dst); hi-lo > 1 {
				t.Errorf("n=%d c=%d: rebuild writes %d..%d copies per survivor, want within 1", n, c, lo, hi)
			}
			if lo, _ := spreadOf(src); lo < avg/2 {
				t.Errorf("n=%d c=%d: a survivor sources %d of %d moves, want at least %d", n, c, lo, len(moves), avg/2)
			}
			if lo, hi := sharedRange(got, rest); hi-lo > 2 {
				t.Errorf("n=%d c=%d after a failure: two nodes share %d..%d buckets, want within 2", n, c, lo, hi)
			}

			// A node joins: it takes copies whose partners are every other
			// node (not as evenly: which copies each node sheds decides).
			joined := append(rest, Node{Addr: "n99"})
			got2, err := Build(got, joined, o)
			if err != nil {
				t.Fatal(err)
			}
			mean := float64(1023*c*(c-1)) / float64(len(joined)*(len(joined)-1))
			if lo, hi := sharedRange(got2, joined); float64(lo) < mean/2 || float64(hi) > mean*3/2 {
				t.Errorf("n=%d c=%d after a join: two nodes share %d..%d buckets, want within half of %.0f", n, c, lo, hi, mean)
			}
		}
	}
}

// TestPositionSafeSpreadsCopies: position-safe tables spread a node's
// buckets over the other zones' nodes: evenly where a zone's nodes are on
// racks of their own, and over every node where racks of several nodes
// come first (each bucket's copies on different racks).
func TestPositionSafeSpreadsCopies(t *testing.T) {
	for _, tc := range []struct {
		nodes, zones, copies int
		even                 bool
	}{{6, 2, 2, true}, {6, 3, 2, true}, {8, 2, 2, true}, {9, 3, 3, false}} {
		nodes := names(tc.nodes, tc.zones)
		rows, err := Build(nil, nodes, Options{Buckets: 1023, Copies: tc.copies, Strategy: PositionSafe})
		if err != nil {
			t.Fatal(err)
		}
		sh := sharedCounts(rows)
		lo, hi := 1<<30, 0
		for _, a := range nodes {
			for _, b := range nodes {
				if a.Zone != b.Zone {
					lo, hi = min(lo, sh[a.Addr][b.Addr]), max(hi, sh[a.Addr][b.Addr])
				}
			}
		}
		if lo == 0 || tc.even && hi-lo > 3 {
			t.Errorf("%+v: two nodes of different zones share %d..%d buckets", tc, lo, hi)
		}
	}
}

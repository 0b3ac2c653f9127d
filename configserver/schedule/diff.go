package schedule

import "github.com/tairkv/tair/internal/route"

// Move is one planned copy transfer.
type Move struct {
	route.Move
	// Recovery is set when the move restores a lost copy (the source is the
	// bucket's master and keeps its copy), as opposed to rebalancing (the
	// source gives its copy up when the move ends).
	Recovery bool
}

// Diff lists the moves that turn serving into dest, bucket by bucket: each
// copy dest adds is paired with a copy dest drops (From gives it up), and
// an add left unpaired is a recovery from the bucket's current master.
// Buckets with no serving copy at all have no source and get no move: their
// data is lost and the caller installs dest directly.
func Diff(serving, dest [][]string) []Move {
	var out []Move
	for b := range dest {
		var s []string
		if b < len(serving) {
			s = serving[b]
		}
		master := ""
		for _, a := range s {
			if a != "" {
				master = a
				break
			}
		}
		if master == "" {
			continue
		}
		var adds, drops []string
		for _, a := range dest[b] {
			if !contains(s, a) {
				adds = append(adds, a)
			}
		}
		for _, a := range s {
			if a != "" && !contains(dest[b], a) {
				drops = append(drops, a)
			}
		}
		for i, to := range adds {
			m := Move{Move: route.Move{Bucket: route.BucketID(b), To: to}}
			if i < len(drops) {
				m.From = drops[i]
			} else {
				m.From, m.Recovery = master, true
			}
			out = append(out, m)
		}
	}
	return out
}

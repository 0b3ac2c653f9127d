package zsetop

// The member algebra of SUNION, SINTER and SDIFF (and their STORE forms
// and SINTERCARD), shared by the dataservers and the proxy in the same
// way: each takes the sources' members in order and returns the result's
// in the order Redis's would be built.

// Union is every member of sets, each once, in order of first appearance.
func Union(sets [][]string) []string {
	seen := map[string]struct{}{}
	var out []string
	for _, s := range sets {
		for _, m := range s {
			if _, ok := seen[m]; !ok {
				seen[m] = struct{}{}
				out = append(out, m)
			}
		}
	}
	return out
}

// Inter is the members every set holds, in the order of the smallest set
// (the first of the smallest), which is walked while the others are
// probed; it stops at limit members (0: no limit).
func Inter(sets [][]string, limit int) []string {
	small := 0
	for i, s := range sets {
		if len(s) < len(sets[small]) {
			small = i
		}
	}
	others := make([]map[string]struct{}, 0, len(sets)-1)
	for i, s := range sets {
		if i == small {
			continue
		}
		m := make(map[string]struct{}, len(s))
		for _, x := range s {
			m[x] = struct{}{}
		}
		others = append(others, m)
	}
	var out []string
next:
	for _, m := range sets[small] {
		for _, o := range others {
			if _, ok := o[m]; !ok {
				continue next
			}
		}
		out = append(out, m)
		if limit > 0 && len(out) >= limit {
			break
		}
	}
	return out
}

// Diff is the members of sets[0] that no later set holds, in sets[0]'s
// order.
func Diff(sets [][]string) []string {
	drop := map[string]struct{}{}
	for _, s := range sets[1:] {
		for _, m := range s {
			drop[m] = struct{}{}
		}
	}
	var out []string
	for _, m := range sets[0] {
		if _, ok := drop[m]; !ok {
			out = append(out, m)
		}
	}
	return out
}

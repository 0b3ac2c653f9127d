// Package glob is Redis's glob-style pattern matching (KEYS, SCAN MATCH,
// HSCAN, INFO commandstats, CONFIG GET ...), in one place for every role.
//
// Patterns come from clients, so the matcher must not be theirs to stall:
// a recursive matcher (as this one was) backtracks exponentially on
// patterns such as a*a*a*a*a*a*a*b over a string of a's, and held a
// dataserver's event loop at 100 % CPU for ever. Match keeps one
// backtracking point, the last star: every other token consumes exactly
// one byte, so a later star can absorb whatever an earlier one would have,
// and a match is found, or ruled out, in O(len(pattern) * len(s)) steps.
package glob

// Match reports whether s matches pattern, with the results of Redis 7's
// stringmatchlen: * ? [set] [^set] [a-z] and \ escapes, case-insensitive
// with nocase, and Redis's edge cases (an unterminated class ends at the
// end of the pattern; "[a-]" is a range up to ']'; an empty string
// matches only the empty pattern and "*": Redis's loop stops when the
// string is empty before it skips any stars, and every Redis command that
// takes a pattern treats exactly "*" as match-all before matching).
func Match(pattern, s []byte, nocase bool) bool {
	if len(s) == 0 {
		return len(pattern) == 0 || len(pattern) == 1 && pattern[0] == '*'
	}
	p, i := 0, 0
	starP, starI := -1, 0 // the pattern after the last star, and where its match starts
	for {
		if p < len(pattern) && pattern[p] == '*' {
			for p+1 < len(pattern) && pattern[p+1] == '*' {
				p++
			}
			if p == len(pattern)-1 {
				return true // a trailing star matches the rest
			}
			p++
			starP, starI = p, i
			continue
		}
		if p < len(pattern) {
			if next, ok := matchOne(pattern, p, s[i], nocase); ok {
				p, i = next, i+1
				if i < len(s) {
					continue
				}
				for p < len(pattern) && pattern[p] == '*' {
					p++
				}
				if p == len(pattern) {
					return true
				}
			}
		}
		// This alignment failed: let the last star absorb one more byte.
		if starP < 0 {
			return false
		}
		starI++
		if starI >= len(s) {
			return false // the pattern after a star needs at least one byte
		}
		p, i = starP, starI
	}
}

// matchOne matches the token at pattern[p] (not a star) against c and
// returns the index of the next token.
func matchOne(pattern []byte, p int, c byte, nocase bool) (int, bool) {
	switch pattern[p] {
	case '?':
		return p + 1, true
	case '[':
		p++
		not := p < len(pattern) && pattern[p] == '^'
		if not {
			p++
		}
		match := false
		for p < len(pattern) && pattern[p] != ']' {
			switch {
			case pattern[p] == '\\' && p+1 < len(pattern):
				p++
				if pattern[p] == c {
					match = true
				}
			case p+2 < len(pattern) && pattern[p+1] == '-':
				lo, hi, cc := pattern[p], pattern[p+2], c
				if lo > hi {
					lo, hi = hi, lo
				}
				if nocase {
					lo, hi, cc = lower(lo), lower(hi), lower(cc)
				}
				if cc >= lo && cc <= hi {
					match = true
				}
				p += 2
			case eqByte(pattern[p], c, nocase):
				match = true
			}
			p++
		}
		if p < len(pattern) {
			p++ // the closing ']'; an unterminated class ends the pattern
		}
		return p, match != not
	case '\\':
		if p+1 < len(pattern) {
			p++
		}
	}
	return p + 1, eqByte(pattern[p], c, nocase)
}

func lower(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

func eqByte(a, b byte, nocase bool) bool {
	if nocase {
		return lower(a) == lower(b)
	}
	return a == b
}

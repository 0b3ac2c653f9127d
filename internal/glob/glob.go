// Package glob is Redis's glob-style pattern matching (KEYS, SCAN MATCH,
// HSCAN, INFO commandstats ...), in one place for every role.
package glob

// Match reports whether s matches pattern, as Redis's stringmatchlen:
// * ? [set] [^set] [a-z] and \\ escapes; case-insensitive with nocase.
func Match(pattern, s []byte, nocase bool) bool {
	for len(pattern) > 0 {
		switch pattern[0] {
		case '*':
			for len(pattern) > 1 && pattern[1] == '*' {
				pattern = pattern[1:]
			}
			if len(pattern) == 1 {
				return true
			}
			for i := 0; i <= len(s); i++ {
				if Match(pattern[1:], s[i:], nocase) {
					return true
				}
			}
			return false
		case '?':
			if len(s) == 0 {
				return false
			}
			s = s[1:]
		case '[':
			if len(s) == 0 {
				return false
			}
			pattern = pattern[1:]
			not := len(pattern) > 0 && pattern[0] == '^'
			if not {
				pattern = pattern[1:]
			}
			match := false
			for len(pattern) > 0 && pattern[0] != ']' {
				if pattern[0] == '\\' && len(pattern) >= 2 {
					pattern = pattern[1:]
					if pattern[0] == s[0] {
						match = true
					}
				} else if len(pattern) >= 3 && pattern[1] == '-' {
					lo, hi := pattern[0], pattern[2]
					if lo > hi {
						lo, hi = hi, lo
					}
					c := s[0]
					if nocase {
						lo, hi, c = lower(lo), lower(hi), lower(c)
					}
					if c >= lo && c <= hi {
						match = true
					}
					pattern = pattern[2:]
				} else if eqByte(pattern[0], s[0], nocase) {
					match = true
				}
				pattern = pattern[1:]
			}
			if len(pattern) == 0 {
				// unterminated class: Redis treats the end as ']'
				pattern = []byte{']'}
			}
			if not {
				match = !match
			}
			if !match {
				return false
			}
			s = s[1:]
		case '\\':
			if len(pattern) >= 2 {
				pattern = pattern[1:]
			}
			fallthrough
		default:
			if len(s) == 0 || !eqByte(pattern[0], s[0], nocase) {
				return false
			}
			s = s[1:]
		}
		pattern = pattern[1:]
	}
	return len(s) == 0
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

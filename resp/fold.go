package resp

// EqualFold reports whether b equals the lower-case ASCII word lower,
// ignoring case (command names and options), without allocating.
func EqualFold(b []byte, lower string) bool {
	if len(b) != len(lower) {
		return false
	}
	for i := 0; i < len(b); i++ {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

// AppendLower appends b lower-cased (ASCII) to dst: with room in dst, a
// command name or a sha is lower-cased without allocating.
func AppendLower(dst, b []byte) []byte {
	for _, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		dst = append(dst, c)
	}
	return dst
}

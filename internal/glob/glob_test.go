package glob

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

func TestMatch(t *testing.T) {
	cases := []struct {
		p, s   string
		nocase bool
		want   bool
	}{
		{"*", "", false, true},
		{"user:*", "user:1", false, true},
		{"user:*", "User:1", false, false},
		{"user:*", "User:1", true, true},
		{"h?llo", "hello", false, true},
		{"h?llo", "hllo", false, false},
		{"h[ae]llo", "hallo", false, true},
		{"h[^e]llo", "hello", false, false},
		{"h[a-c]llo", "hbllo", false, true},
		{"h[c-a]llo", "hbllo", false, true}, // reversed range, as Redis
		{"h\\*llo", "h*llo", false, true},
		{"h\\*llo", "hallo", false, false},
		{"a*b*c", "aXXbYYc", false, true},
		{"a*b*c", "aXXbYY", false, false},
		{"[abc", "a", false, true}, // unterminated class
	}
	for _, c := range cases {
		if got := Match([]byte(c.p), []byte(c.s), c.nocase); got != c.want {
			t.Errorf("Match(%q, %q, %v) = %v, want %v", c.p, c.s, c.nocase, got, c.want)
		}
	}
}

// Redis's edge cases, as stringmatchlen has them.
func TestMatchRedisEdges(t *testing.T) {
	cases := []struct {
		p, s string
		want bool
	}{
		{"", "", true},
		{"**", "", false}, // Redis's loop never runs on an empty string
		{"a*", "a", true},
		{"a**", "a", true},
		{"a?", "a", false},
		{"[a-]", "]", true}, // a range from 'a' down to ']'
		{"[a-]", "b", false},
		{"[\\]]", "]", true},
		{"[^]", "x", true},
		{"\\", "\\", true},
		{"*\\", "ab\\", true},
		{"[", "x", false},
		{"*[", "x", false},
		{"[^", "x", true},
		{"*?*?*", "ab", true},
		{"*?*?*", "a", false},
	}
	for _, c := range cases {
		if got := Match([]byte(c.p), []byte(c.s), false); got != c.want {
			t.Errorf("Match(%q, %q) = %v, want %v", c.p, c.s, got, c.want)
		}
	}
}

// The recursive matcher of before, Redis's stringmatchlen transcribed:
// the reference for the one in use on inputs small enough for it.
func refMatch(pattern, s []byte, nocase bool) bool {
	for len(pattern) > 0 && len(s) > 0 {
		switch pattern[0] {
		case '*':
			for len(pattern) > 1 && pattern[1] == '*' {
				pattern = pattern[1:]
			}
			if len(pattern) == 1 {
				return true
			}
			for ; len(s) > 0; s = s[1:] {
				if refMatch(pattern[1:], s, nocase) {
					return true
				}
			}
			return false
		case '?':
			s = s[1:]
		case '[':
			pattern = pattern[1:]
			not := len(pattern) > 0 && pattern[0] == '^'
			if not {
				pattern = pattern[1:]
			}
			match := false
			for {
				if len(pattern) >= 2 && pattern[0] == '\\' {
					pattern = pattern[1:]
					if pattern[0] == s[0] {
						match = true
					}
				} else if len(pattern) == 0 {
					pattern = []byte{']'}
					break
				} else if pattern[0] == ']' {
					break
				} else if len(pattern) >= 3 && pattern[1] == '-' {
					lo, hi, c := pattern[0], pattern[2], s[0]
					if lo > hi {
						lo, hi = hi, lo
					}
					if nocase {
						lo, hi, c = lower(lo), lower(hi), lower(c)
					}
					pattern = pattern[2:]
					if c >= lo && c <= hi {
						match = true
					}
				} else if eqByte(pattern[0], s[0], nocase) {
					match = true
				}
				pattern = pattern[1:]
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
			if !eqByte(pattern[0], s[0], nocase) {
				return false
			}
			s = s[1:]
		}
		pattern = pattern[1:]
		if len(s) == 0 {
			for len(pattern) > 0 && pattern[0] == '*' {
				pattern = pattern[1:]
			}
			break
		}
	}
	return len(pattern) == 0 && len(s) == 0
}

func TestMatchAgreesWithRecursive(t *testing.T) {
	const alpha = "ab*?[]^-\\A"
	rng := rand.New(rand.NewPCG(1, 2))
	gen := func(n int, from string) []byte {
		b := make([]byte, rng.IntN(n+1))
		for i := range b {
			b[i] = from[rng.IntN(len(from))]
		}
		return b
	}
	for range 300000 {
		p, s := gen(8, alpha), gen(7, "abA]-\\*")
		nocase := rng.IntN(2) == 0
		want := refMatch(p, s, nocase)
		if len(s) == 0 && string(p) == "*" {
			want = true
		}
		if got := Match(p, s, nocase); got != want {
			t.Fatalf("Match(%q, %q, %v) = %v, the recursive matcher %v", p, s, nocase, got, want)
		}
	}
}

// A pattern that made the recursive matcher backtrack exponentially (and
// a dataserver's event loop spin for ever) is answered at once.
func TestMatchStarHeavyPatternEnds(t *testing.T) {
	done := make(chan bool, 1)
	go func() {
		p := []byte(strings.Repeat("a*", 40) + "b")
		s := []byte(strings.Repeat("a", 5000))
		done <- Match(p, s, false) || Match(p, append(s, 'c'), true)
	}()
	select {
	case got := <-done:
		if got {
			t.Fatal("matched a string without a b")
		}
	case <-time.After(20 * time.Second):
		t.Fatal("a star-heavy pattern did not finish in 20 s")
	}
}

package glob

import "testing"

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

package zsetop

import (
	"reflect"
	"testing"
)

func TestMemberAlgebra(t *testing.T) {
	a, b, c := []string{"x", "y", "z", "w"}, []string{"z", "y", "v"}, []string{"y", "z"}
	for _, tc := range []struct {
		name      string
		got, want []string
	}{
		{"union", Union([][]string{a, b}), []string{"x", "y", "z", "w", "v"}},
		{"inter walks the smallest", Inter([][]string{a, b, c}, 0), []string{"y", "z"}},
		{"inter, the first of the smallest", Inter([][]string{b, a}, 0), []string{"z", "y"}},
		{"inter limit", Inter([][]string{a, b}, 1), []string{"z"}},
		{"inter with an empty set", Inter([][]string{a, nil}, 0), nil},
		{"diff", Diff([][]string{a, b}), []string{"x", "w"}},
		{"diff of one", Diff([][]string{a}), a},
	} {
		if !reflect.DeepEqual(tc.got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, tc.got, tc.want)
		}
	}
}

// Package defaults fills in the settings a role's configuration left
// unset, one line a field, the same way in every role.
package defaults

// Unset sets *v to def when *v is the zero value (not given).
func Unset[T comparable](v *T, def T) {
	var zero T
	if *v == zero {
		*v = def
	}
}

// NotPositive sets *v to def unless *v is positive: a count, size or
// duration of zero or less was not given, or makes no sense.
func NotPositive[T ~int | ~int64](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}

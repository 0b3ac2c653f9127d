//go:build race

package testutil

// Race reports whether the race detector is on: tests that size their
// data for a benchmark's sake use less under its 5-10x slowdown.
const Race = true

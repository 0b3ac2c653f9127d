//go:build race

package schedule

// raceEnabled: under the race detector TestBuildProperties runs fewer
// clusters (the builder is single-goroutine; `make test` runs the full
// count without it and prints the ratios).
const raceEnabled = true

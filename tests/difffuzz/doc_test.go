// Package difffuzz is a differential fuzzer: random command sequences,
// drawn from every command the proxy accepts (internal/command's table,
// less the ones that cannot be compared, see gen_test.go), run against a
// real redis-server and against a cluster started by `tair up`, once per
// engine, their raw RESP replies compared. Differences that are by design
// go through the one normalisation table, normalise_test.go, each entry
// with its reason; anything else fails the test with a reproducer shrunk
// by delta debugging (drop commands, then simplify arguments).
//
// Running it:
//
//	go test ./tests/difffuzz/                 # default: seeds 1-40 per engine, about a minute on 2 cores
//	go test -short ./tests/difffuzz/          # seeds 1-10
//	TAIR_DIFFFUZZ_TIME=10m go test -count=1 -timeout 0 ./tests/difffuzz/ -run TestDiffFuzz
//	TAIR_DIFFFUZZ_SEED=1234 go test ./tests/difffuzz/ -run TestDiffFuzz -v   # one seed
//	TAIR_DIFFFUZZ_ENGINES=rdb,mdb ...         # a subset of engines
//	TAIR_DIFFFUZZ_BIN=/path/to/tair ...       # a prebuilt binary (else it is built)
//
// The long mode draws fresh seeds (from TAIR_DIFFFUZZ_SEED, or the clock,
// logged) until the time is up, the time split over the engines; -v logs
// how often each normalisation rule fired. redis-server must be installed
// (the tests skip otherwise, or fail when CI or TAIR_REQUIRE_REDIS is
// set). Each engine gets its own `tair up` (2 dataservers, 1 copy, 64
// buckets); a dead or hung proxy/dataserver (no reply in 15 s) fails the
// test at once with the sequence that got there.
//
// A sequence is the setup (one key of each type), then 60 commands drawn
// with adversarial arguments (int64 bounds and overflow, NaN/inf/huge
// floats, empty, binary and 64 KiB strings, star-heavy globs, wrong types,
// wrong arity, options in odd order and case) and, now and then, a
// MULTI/EXEC transaction. Both sides are emptied (DISCARD, FLUSHALL)
// before each sequence.
//
// Replaying: a failure logs the shrunk sequence in the regression format,
// one command a line, each argument a Go-quoted string or a bare word:
//
//	# engine: rdb
//	SET "{t}a" "\x00"
//	INCRBYFLOAT "{t}a" 1e308
//
// Save it as testdata/regress/NAME.txt; TestRegress replays every such
// file against redis-server and the named engines (all when no engine
// line) and expects no difference once the bug is fixed.
package difffuzz

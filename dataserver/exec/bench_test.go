package exec

import (
	"fmt"
	"testing"

	"github.com/tairkv/tair/engines"
	"github.com/tairkv/tair/engines/ldb"
	"github.com/tairkv/tair/engines/rdb"
)

// BenchmarkExecStrings measures the executor's per-command cost on the
// string hot paths (SET, GET, INCR) over the in-memory engine, so that
// the exec layer's overhead can be compared with the engine's own
// (engines/rdb's benchmarks). Keys exist beforehand: SET overwrites, GET
// hits, INCR counts up, as in a steady-state load.
func BenchmarkExecStrings(b *testing.B) {
	eng := rdb.Open(engines.Options{})
	defer eng.Close()
	x := New(eng, Options{})
	const n = 100000
	keys := make([][]byte, n)
	ctrs := make([][]byte, n)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "key:%012d", i)
		ctrs[i] = fmt.Appendf(nil, "ctr:%012d", i)
	}
	val := []byte("xxx")
	var out []byte
	for i := range keys {
		out, _ = x.Exec(0, 2, false, [][]byte{[]byte("SET"), keys[i], val}, out[:0])
		out, _ = x.Exec(0, 2, false, [][]byte{[]byte("SET"), ctrs[i], []byte("0")}, out[:0])
	}
	run := func(name string, keys [][]byte, args ...[]byte) {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				args[1] = keys[(i*7919)%len(keys)]
				out, _ = x.Exec(0, 2, false, args, out[:0])
			}
		})
	}
	run("SET", keys, []byte("SET"), nil, val)
	run("GET", keys, []byte("GET"), nil)
	run("INCR", ctrs, []byte("INCR"), nil)
}

// BenchmarkExecSetLDB measures SET on the persistent engine (ldb, --sync
// none): "new" stores a key never written (the first put of a cache fill,
// which also asks whether the key is a prefix-stored hash), "overwrite"
// one of 100k keys written before.
func BenchmarkExecSetLDB(b *testing.B) {
	eng, err := ldb.Open(engines.Options{Dir: b.TempDir(), Sync: engines.SyncNone})
	if err != nil {
		b.Fatal(err)
	}
	defer eng.Close()
	x := New(eng, Options{})
	const n = 100000
	keys := make([][]byte, n)
	val := []byte("xxx")
	var out []byte
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "key:%012d", i)
		out, _ = x.Exec(0, 2, false, [][]byte{[]byte("SET"), keys[i], val}, out[:0])
	}
	b.Run("new", func(b *testing.B) {
		b.ReportAllocs()
		args := [][]byte{[]byte("SET"), nil, val}
		for i := 0; b.Loop(); i++ {
			args[1] = fmt.Appendf(args[1][:0], "new:%012d", i)
			out, _ = x.Exec(0, 2, false, args, out[:0])
		}
	})
	b.Run("overwrite", func(b *testing.B) {
		b.ReportAllocs()
		args := [][]byte{[]byte("SET"), nil, val}
		for i := 0; b.Loop(); i++ {
			args[1] = keys[(i*7919)%len(keys)]
			out, _ = x.Exec(0, 2, false, args, out[:0])
		}
	})
}

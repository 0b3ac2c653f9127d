package luascript

import (
	"testing"

	"github.com/tairkv/tair/internal/command"
)

type okCaller struct{}

func (okCaller) Call(_ *command.Spec, _ [][]byte, _ int) []byte { return []byte("$1\r\nv\r\n") }

// BenchmarkEval: one EVAL of a one-command script (a fresh Lua state per
// script, as Redis's sandbox guarantees nothing leaks between scripts).
func BenchmarkEval(b *testing.B) {
	env := NewEnv(nil)
	s, err := Compile([]byte("return redis.call('get', KEYS[1])"))
	if err != nil {
		b.Fatal(err)
	}
	keys := [][]byte{[]byte("k")}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		env.Run(nil, s, &Run{Keys: keys, Proto: 2, Caller: okCaller{}, Name: s.Sha})
	}
}

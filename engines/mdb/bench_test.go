package mdb_test

import (
	"testing"

	"github.com/tairkv/tair/engines"
	"github.com/tairkv/tair/engines/enginetest"
	"github.com/tairkv/tair/engines/mdb"
)

func BenchmarkEngine(b *testing.B) {
	enginetest.Bench(b, func(b *testing.B, o engines.Options) engines.Engine { return mdb.Open(o) })
}

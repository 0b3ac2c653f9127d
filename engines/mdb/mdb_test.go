package mdb_test

import (
	"testing"

	"github.com/tairkv/tair/engines/enginetest"
	"github.com/tairkv/tair/engines/mdb"
)

func TestSuites(t *testing.T) { enginetest.RunInMemory(t, mdb.Name, mdb.Open) }

func BenchmarkEngine(b *testing.B) { enginetest.BenchInMemory(b, mdb.Open) }

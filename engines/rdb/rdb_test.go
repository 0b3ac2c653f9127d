package rdb_test

import (
	"testing"

	"github.com/tairkv/tair/engines"
	"github.com/tairkv/tair/engines/enginetest"
	"github.com/tairkv/tair/engines/rdb"
)

func open(t *testing.T, o engines.Options) engines.Engine {
	e := rdb.Open(o)
	t.Cleanup(func() { _ = e.Close() })
	return e
}

func TestConformance(t *testing.T) { enginetest.Run(t, open) }

func TestRegistered(t *testing.T) {
	e, err := engines.Open("rdb", engines.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if e.Name() != "rdb" || e.Persistent() {
		t.Fatalf("Name %q Persistent %v", e.Name(), e.Persistent())
	}
}

func TestModel(t *testing.T) { enginetest.RunModel(t, open, 20000) }

// TestHotPathAllocations pins the hot path's cost: a Get allocates
// nothing, a Put over an existing key only the copy of its value.
func TestHotPathAllocations(t *testing.T) {
	e := rdb.Open(engines.Options{})
	defer e.Close()
	k := enginetest.K("hot")
	val := []byte("0123456789abcdef0123456789abcdef")
	if _, err := e.Put(k, val, engines.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(1000, func() {
		if _, err := e.Get(k); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Fatalf("Get allocates %v times", n)
	}
	if n := testing.AllocsPerRun(1000, func() {
		if _, err := e.Put(k, val, engines.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}); n != 1 {
		t.Fatalf("Put over an existing key allocates %v times, want 1 (the value)", n)
	}
}

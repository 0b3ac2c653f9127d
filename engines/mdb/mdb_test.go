package mdb_test

import (
	"testing"

	"github.com/tairkv/tair/engines"
	"github.com/tairkv/tair/engines/enginetest"
	"github.com/tairkv/tair/engines/mdb"
)

func open(t *testing.T, o engines.Options) engines.Engine {
	e := mdb.Open(o)
	t.Cleanup(func() { _ = e.Close() })
	return e
}

func TestConformance(t *testing.T) { enginetest.Run(t, open) }

func TestRegistered(t *testing.T) {
	e, err := engines.Open("mdb", engines.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if e.Name() != "mdb" || e.Persistent() {
		t.Fatalf("Name %q Persistent %v", e.Name(), e.Persistent())
	}
}

func TestModel(t *testing.T) { enginetest.RunModel(t, open, 20000) }

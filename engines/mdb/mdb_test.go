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
	enginetest.CheckRegistered(t, mdb.Name, engines.Options{}, false)
}

func TestModel(t *testing.T) { enginetest.RunModel(t, open, 20000) }

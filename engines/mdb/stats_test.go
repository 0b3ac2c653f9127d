package mdb

import (
	"testing"

	"github.com/tairkv/tair/engines"
)

// TestReplicaWritesNotCounted: a slave applying its master's writes does
// not count them again, so a cluster's summed statistics count each
// client operation once (SPEC §4).
func TestReplicaWritesNotCounted(t *testing.T) {
	e, err := engines.Open("mdb", engines.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	k := engines.Key{Area: 7, Key: []byte("k")}
	rk := k
	rk.Replica = true
	if _, err := e.Put(rk, []byte("v"), engines.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.Incr(engines.Key{Area: 7, Key: []byte("n"), Replica: true}, 1, engines.IncrOptions{}); err != nil {
		t.Fatal(err)
	}
	if st := e.Stats(7); st.Puts != 0 || st.Gets != 0 || st.Hits != 0 || st.Keys != 2 {
		t.Fatalf("after replicated writes: %+v, want no puts, gets or hits, 2 keys", st)
	}
	if _, err := e.Put(k, []byte("w"), engines.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Get(k); err != nil {
		t.Fatal(err)
	}
	if st := e.Stats(7); st.Puts != 1 || st.Hits != 1 {
		t.Fatalf("after a client's put and get: %+v, want 1 put, 1 hit", st)
	}
}

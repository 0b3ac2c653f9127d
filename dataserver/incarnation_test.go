package dataserver

import (
	"testing"
	"time"
)

// TestTableOfAnotherIncarnationIgnored: a table that names another
// incarnation of this node (built before the configserver knew of its
// restart) is not served from; the next one that names this incarnation
// is. A table without incarnations (an older configserver) is served.
func TestTableOfAnotherIncarnationIgnored(t *testing.T) {
	cs, nodes := cluster2(t, nil)
	a, b := nodes[0], nodes[1]
	stale := ringTable(2, q, 2, a.Addr(), b.Addr())
	stale.Incarnations = map[string]int64{a.Addr(): a.incarnation - 1, b.Addr(): b.incarnation}
	cs.setTable(stale)
	waitVersion(t, 2, b)
	time.Sleep(300 * time.Millisecond) // heartbeats and long polls offer it to a
	if v := a.TableVersion(); v != 1 {
		t.Fatalf("a serves table %d, built for its previous incarnation", v)
	}
	known := ringTable(3, q, 2, a.Addr(), b.Addr())
	known.Incarnations = map[string]int64{a.Addr(): a.incarnation, b.Addr(): b.incarnation}
	cs.setTable(known)
	waitVersion(t, 3, a, b)
}

package configserver

import (
	"reflect"
	"testing"
	"time"

	"github.com/tairkv/tair/internal/wire"
)

// TestHotKeysMerged: rates sum per (area, key) over the proxies heard
// from within proxyTTL, each proxy's share named, hottest first; a proxy
// not heard from since is left out, and a later empty report clears it.
func TestHotKeysMerged(t *testing.T) {
	var h hotKeySet
	t0 := time.Now()
	h.report("p1:1", []wire.HotKey{{Area: 0, Key: "a", Rate: 1500}, {Area: 1, Key: "a", Rate: 1200}}, t0)
	h.report("p2:1", []wire.HotKey{{Area: 0, Key: "a", Rate: 1000}, {Area: 0, Key: "b", Rate: 3000}}, t0.Add(time.Second))
	h.report("p3:1", []wire.HotKey{{Area: 0, Key: "b", Rate: 9000}}, t0.Add(-proxyTTL-time.Millisecond))
	got := h.merged(t0.Add(time.Second))
	want := wire.HotKeysStatus{
		Keys: []wire.ClusterHotKey{
			{Area: 0, Key: "b", Rate: 3000, Proxies: map[string]float64{"p2:1": 3000}},
			{Area: 0, Key: "a", Rate: 2500, Proxies: map[string]float64{"p1:1": 1500, "p2:1": 1000}},
			{Area: 1, Key: "a", Rate: 1200, Proxies: map[string]float64{"p1:1": 1200}},
		},
		Proxies: []string{"p1:1", "p2:1"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("merged %+v\nwant   %+v", got, want)
	}
	h.report("p2:1", nil, t0.Add(2*time.Second))
	got = h.merged(t0.Add(2 * time.Second))
	if len(got.Keys) != 2 || got.Keys[0].Rate != 1500 || len(got.Proxies) != 2 {
		t.Fatalf("after p2's empty report: %+v", got)
	}
	if got = h.merged(t0.Add(10 * time.Second)); len(got.Keys) != 0 || len(got.Proxies) != 0 {
		t.Fatalf("after the TTL: %+v", got)
	}
}

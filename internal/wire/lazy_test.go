package wire

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/tairkv/tair/internal/route"
)

// HeartbeatReplyLazy has HeartbeatReply's JSON fields, and a LazyTable
// reads the version and decodes the table a configserver encodes.
func TestLazyTable(t *testing.T) {
	full, lazy := reflect.TypeFor[HeartbeatReply](), reflect.TypeFor[HeartbeatReplyLazy]()
	if full.NumField() != lazy.NumField() {
		t.Fatalf("HeartbeatReply has %d fields, HeartbeatReplyLazy %d", full.NumField(), lazy.NumField())
	}
	for i := 0; i < full.NumField(); i++ {
		if a, b := full.Field(i), lazy.Field(i); a.Name != b.Name || a.Tag != b.Tag {
			t.Fatalf("field %d: %s %q vs %s %q", i, a.Name, a.Tag, b.Name, b.Tag)
		}
	}

	tb := &route.Table{Version: 1234, Buckets: 2, Copies: 2, Serving: [][]string{{"a:1", "b:1"}, {"b:1", "a:1"}}}
	data, err := json.Marshal(HeartbeatReply{Table: tb, Hooks: &[]string{"stats"}})
	if err != nil {
		t.Fatal(err)
	}
	var r HeartbeatReplyLazy
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	if v, ok := r.Table.Version(); !ok || v != 1234 {
		t.Fatalf("Version() = %d %v", v, ok)
	}
	got, err := r.Table.Decode()
	if err != nil || !reflect.DeepEqual(got, tb) || r.Hooks == nil || (*r.Hooks)[0] != "stats" {
		t.Fatalf("Decode() = %+v, %v; hooks %v", got, err, r.Hooks)
	}
	// Another field order still reads (the slow way).
	lt := &LazyTable{raw: []byte(`{"buckets":2,"version":77}`)}
	if v, ok := lt.Version(); !ok || v != 77 {
		t.Fatalf("Version() of a reordered table = %d %v", v, ok)
	}
	if _, ok := (&LazyTable{raw: []byte(`{"version":`)}).Version(); ok {
		t.Fatal("a truncated table has a version")
	}
}

// A table reply resolves to the table whole or to the delta applied to
// the one held; a bare table (a configserver before deltas) is the
// reply's table; what is not newer than the table held is not decoded.
func TestTableReplyResolve(t *testing.T) {
	v1 := &route.Table{Version: 10, Buckets: 2, Copies: 2, Serving: [][]string{{"a:1", "b:1"}, {"b:1", "a:1"}}}
	v2 := v1.Clone()
	v2.Version = 11
	v2.Serving[1] = []string{"a:1"}
	whole, _ := json.Marshal(v2)
	delta, _ := json.Marshal(route.Diff(v1, v2))
	for _, c := range []struct {
		name string
		body string
		have *route.Table
		want *route.Table
	}{
		{"whole", `{"table":` + string(whole) + `}`, v1, v2},
		{"whole, none held", `{"table":` + string(whole) + `}`, nil, v2},
		{"bare", string(whole), v1, v2},
		{"delta", `{"delta":` + string(delta) + `}`, v1, v2},
		{"whole, not newer", `{"table":` + string(whole) + `}`, v2, nil},
		{"delta, not newer", `{"delta":` + string(delta) + `}`, v2, nil},
	} {
		var r TableReply
		if err := json.Unmarshal([]byte(c.body), &r); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got, err := r.Resolve(c.have)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Fatalf("%s: Resolve = %+v, %v; want %+v", c.name, got, err, c.want)
		}
	}
	var r TableReply
	if err := json.Unmarshal([]byte(`{"delta":`+string(delta)+`}`), &r); err != nil {
		t.Fatal(err)
	}
	other := v1.Clone()
	other.Version = 9
	if _, err := r.Resolve(other); err == nil {
		t.Fatal("a delta applied to a version it was not taken from")
	}
}

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

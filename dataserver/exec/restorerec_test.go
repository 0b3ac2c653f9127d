package exec

import (
	"testing"

	"github.com/tairkv/tair/engines"
	"github.com/tairkv/tair/engines/ds"
)

// TAIR.RESTOREREC writes a record whole, and refuses one whose shape its
// type does not keep (it would sit under the key unreadable), one of
// another key and bytes that are no record; a refused record leaves the
// key as it was.
func TestRestoreRec(t *testing.T) {
	onEngines(t, func(t *testing.T, engine string) {
		h := newHarnessOn(t, engine)
		rec := func(r *engines.Record) string {
			b, err := engines.AppendRecord(nil, r)
			if err != nil {
				t.Fatal(err)
			}
			return string(b)
		}
		set := ds.NewSet()
		set.Add("a")
		good := &engines.Record{Key: []byte("k"), Entry: engines.Entry{Type: engines.TypeSet, Object: set, Version: 7, ExpireAt: 4e12}}
		if got := h.do("TAIR.RESTOREREC", "k", rec(good)); got != "+OK\r\n" {
			t.Fatalf("a set record: %q", got)
		}
		if got := h.do("SMEMBERS", "k"); got != "*1\r\n$1\r\na\r\n" {
			t.Fatalf("SMEMBERS after the restore: %q", got)
		}
		if got := h.do("PEXPIRETIME", "k"); got != ":4000000000000\r\n" {
			t.Fatalf("PEXPIRETIME after the restore: %q", got)
		}
		for _, c := range []struct {
			name, key, payload, want string
		}{
			{"a hash as plain bytes", "k", rec(&engines.Record{Key: []byte("k"), Entry: engines.Entry{Type: engines.TypeHash, Value: []byte("junk")}}),
				"-ERR TAIR.RESTOREREC: a hash record must hold what its type keeps\r\n"},
			{"a string holding a set", "k", rec(&engines.Record{Key: []byte("k"), Entry: engines.Entry{Type: engines.TypeString, Object: set}}),
				"-ERR TAIR.RESTOREREC: malformed record\r\n"},
			{"an unknown type", "k", rec(&engines.Record{Key: []byte("k"), Entry: engines.Entry{Type: 200, Value: []byte("x")}}),
				"-ERR TAIR.RESTOREREC: a type(200) record must hold what its type keeps\r\n"},
			{"another key", "k2", rec(good), "-ERR TAIR.RESTOREREC: the record is of another key\r\n"},
			{"no record", "k", "garbage", "-ERR TAIR.RESTOREREC: malformed record\r\n"},
		} {
			if got := h.do("TAIR.RESTOREREC", c.key, c.payload); got != c.want {
				t.Errorf("%s: %q, want %q", c.name, got, c.want)
			}
		}
		if got := h.do("SMEMBERS", "k"); got != "*1\r\n$1\r\na\r\n" {
			t.Fatalf("SMEMBERS after the refusals: %q", got)
		}
	})
}

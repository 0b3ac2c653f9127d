package exec

import (
	"reflect"
	"testing"

	"github.com/tairkv/tair/internal/command"
)

// TestSortBuckets: BY/GET patterns must form keys of the sorted key's
// bucket (a hash tag), as in Redis Cluster.
func TestSortBuckets(t *testing.T) {
	h := newHarness(t)
	h.run([]step{
		{"RPUSH {t}l 2 1", num(2)},
		{"SET w_{t}1 9", ok},
		{"SET w_{t}2 1", ok},
		{"SORT {t}l BY w_{t}*", arr(bulk("2"), bulk("1"))},
		{"SORT {t}l BY w_{t}* GET w_{t}* GET #", arr(bulk("1"), bulk("2"), bulk("9"), bulk("1"))},
		{"SORT {t}l BY w_*", "-ERR BY option of SORT denied in Cluster mode when keys formed by the pattern may be in different slots.\r\n"},
		{"SORT {t}l GET w_*", "-ERR GET option of SORT denied in Cluster mode when keys formed by the pattern may be in different slots.\r\n"},
		{"SORT {t}l BY nosort GET #", arr(bulk("2"), bulk("1"))},
	})
	h.wantProp("SORT without STORE", nil)
	h.run([]step{
		{"SORT {t}l STORE {t}d", num(2)},
		{"LRANGE {t}d 0 -1", arr(bulk("1"), bulk("2"))},
	})
	h.wantProp("LRANGE", nil)
	s := command.Lookup([]byte("sort"))
	if got := s.KeyIndexes(splitBytes("SORT a BY x LIMIT 0 1 STORE d")); !reflect.DeepEqual(got, []int{1, 8}) {
		t.Errorf("sort keys %v", got)
	}
	if got := s.KeyIndexes(splitBytes("SORT a GET store")); !reflect.DeepEqual(got, []int{1}) {
		t.Errorf("sort keys %v", got)
	}
}

// TestDSOnEngines runs every family on every engine: objects where the
// engine stores them, NOTSUPPORTED (or a prefix hash) where it does not.
func TestDSOnEngines(t *testing.T) {
	onEngines(t, func(t *testing.T, engine string) {
		h := newHarnessOn(t, engine)
		got := h.line("RPUSH l a b")
		if got != num(2) {
			if len(got) > 13 && got[:13] == "-NOTSUPPORTED" {
				t.Logf("%s: objects not supported: %q", engine, got)
				return
			}
			t.Fatalf("RPUSH on %s: %q", engine, got)
		}
		h.run([]step{
			{"LRANGE l 0 -1", arr(bulk("a"), bulk("b"))},
			{"SADD s a", num(1)},
			{"SISMEMBER s a", num(1)},
			{"ZADD z 1 a", num(1)},
			{"ZRANGE z 0 -1 WITHSCORES", arr(bulk("a"), bulk("1"))},
			{"HSET h f v", num(1)},
			{"HGETALL h", arr(bulk("f"), bulk("v"))},
			{"EXHSET x f v", num(1)},
			{"EXHGETWITHVER x f", arr(bulk("v"), num(1))},
			{"LPOP l 2", arr(bulk("a"), bulk("b"))},
			{"EXISTS l", num(0)},
		})
	})
}

// TestListIndexCheckOrder: as Redis, LINDEX and LSET look the key and its
// type up before they parse the index (tests/testdata/redis-compare.txt).
func TestListIndexCheckOrder(t *testing.T) {
	onEngines(t, func(t *testing.T, engine string) {
		h := newHarnessOn(t, engine)
		h.run([]step{
			{"LINDEX nol x", null},
			{"LSET nol x v", errReply("ERR no such key")},
			{"SET str v", ok},
			{"LINDEX str x", wrongT},
			{"LSET str x v", wrongT},
			{"RPUSH l a", num(1)},
			{"LINDEX l x", errReply("ERR value is not an integer or out of range")},
			{"LSET l x v", errReply("ERR value is not an integer or out of range")},
			{"LSET l 0 v", ok},
			{"LINDEX l 0", bulk("v")},
		})
	})
}

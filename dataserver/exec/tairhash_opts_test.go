package exec

import (
	"fmt"
	"testing"
	"time"
)

// EXHMSETWITHOPTS as tair-opensource/TairHash: all fields checked before
// any is written, versions bumped, expiries in seconds, arity in groups
// of four; what it propagates stamps the same versions and expiries.
func TestExHMSetWithOpts(t *testing.T) {
	onEngines(t, func(t *testing.T, engine string) {
		h := newHarnessOn(t, engine)
		at := func(secs int64) string { return fmt.Sprint(testEpoch.UnixMilli() + secs*1000) }
		h.runProp([]propStep{
			{"EXHMSETWITHOPTS th f1 v1 4 10 f2 v2 4 10", []string{
				"EXHSET th f1 v1 ABS 1 PXAT " + at(10), "EXHSET th f2 v2 ABS 1 PXAT " + at(10)}},
			{"EXHMSETWITHOPTS th f1 v1 4 10 f2 v2 4 10", nil},
			{"EXHMSETWITHOPTS th f1 a 1 0 f2 b 0 3", []string{
				"EXHSET th f1 a ABS 2", "EXHSET th f2 b ABS 2 PXAT " + at(3)}},
		})
		h.run([]step{
			{"EXHGETWITHVER th f1", arr(bulk("a"), num(2))},
			{"EXHGETWITHVER th f2", arr(bulk("b"), num(2))},
			{"EXHPTTL th f1", num(-1)},
			{"EXHPTTL th f2", num(3000)},
			// A stale version in the second field: the first is not written.
			{"EXHMSETWITHOPTS th f1 x 2 0 f2 y 1 0", exStale},
			{"EXHGET th f1", bulk("a")},
			// A syntax error after a good field: nothing written either.
			{"EXHMSETWITHOPTS th f1 x 0 0 f2 y 0 -1", syntax},
			{"EXHMSETWITHOPTS th f1 x 0 0 f2 y x 0", syntax},
			{"EXHMSETWITHOPTS th f1 x -1 0", syntax},
			{"EXHMSETWITHOPTS th f1 x 0 9223372036854775807", syntax},
			{"EXHGET th f1", bulk("a")},
			{"EXHMSETWITHOPTS th f1 x 0", "-ERR wrong number of arguments for 'exhmsetwithopts' command\r\n"},
			{"EXHMSETWITHOPTS th f1 x 0 0 f2", "-ERR wrong number of arguments for 'exhmsetwithopts' command\r\n"},
			{"SET str v", ok},
			{"EXHMSETWITHOPTS str f x 0 0", wrongT},
			{"EXHMSETWITHOPTS new f x 7 0", ok}, // a new field takes any version
			{"EXHVER new f", num(1)},
			// The same field twice: both checked against what was there.
			{"EXHMSETWITHOPTS new f y 1 0 f z 1 0", ok},
			{"EXHGETWITHVER new f", arr(bulk("z"), num(3))},
		})
		h.clock.Advance(3001 * time.Millisecond)
		h.run([]step{
			{"EXHGET th f2", null},
			{"EXHGET th f1", bulk("a")},
		})
	})
}

package exec

import (
	"testing"
	"time"
)

const (
	stale    = "-ERR update version is stale\r\n"
	tsNoInt  = "-ERR value is not an integer\r\n"
	tsNoFlt  = "-ERR value is not a float\r\n"
	tsOvf    = "-ERR increment or decrement would overflow\r\n"
	tsMinMax = "-ERR min or max is specified, but not valid\r\n"
)

func TestExSetGet(t *testing.T) { onEngines(t, testExSetGet) }

func testExSetGet(t *testing.T, engine string) {
	h := newHarnessOn(t, engine)
	h.run([]step{
		{"EXGET k", null},
		{"EXSET k v", ok},
		{"EXGET k", arr(bulk("v"), num(1))},
		{"EXGET k WITHFLAGS", arr(bulk("v"), num(1), num(0))},
		{"EXGET k FOO", syntax},
		{"EXGET k WITHFLAGS x", errReply("ERR wrong number of arguments for 'exget' command")},
		{"EXSET k v2 VER 1 WITHVERSION", num(2)},
		{"EXSET k v3 VER 1", stale},
		{"EXSET k v3 VER 0", ok},
		{"EXSET k v4 ABS 100 FLAGS 9 WITHVERSION", num(100)},
		{"EXGET k WITHFLAGS", arr(bulk("v4"), num(100), num(9))},
		{"EXSET k v5", ok}, // FLAGS kept
		{"EXGET k WITHFLAGS", arr(bulk("v5"), num(101), num(9))},
		{"GET k", bulk("v5")}, // TairStrings are strings
		{"EXSET k v NX", null},
		{"EXSET n v XX", null},
		{"EXSET n v NX XX", syntax},
		{"EXSET n v VER 1 ABS 1", syntax},
		{"EXSET n v EX 10 PX 10", syntax},
		{"EXSET n v EX 10 KEEPTTL", syntax},
		{"EXSET n v EX 0", syntax},
		{"EXSET n v EX x", syntax},
		{"EXSET n v VER -1", syntax},
		{"EXSET n v FLAGS 4294967296", syntax},
		{"EXSET n v MIN 1", syntax},
		{"EXSET n v EX 10", ok},
		{"PTTL n", num(10000)},
		{"EXSET n v KEEPTTL", ok},
		{"PTTL n", num(10000)},
		{"EXSET n v", ok},
		{"PTTL n", num(-1)},
		{"EXSET n v PXAT 1", ok}, // absolute in the past: expires at once
		{"EXGET n", arr(bulk("v"), num(4))},
	})
	h.clock.Advance(time.Millisecond)
	h.run([]step{
		{"EXGET n", null},
		{"TAIR.ITEMADD it 2 a", num(1)},
		{"EXGET it", wrongT},
		{"EXSET it v", wrongT},
	})
	h.runProp([]propStep{
		{"EXSET p v EX 10 FLAGS 3", []string{"EXSET p v ABS 1 FLAGS 3 PXAT " + ms(10*time.Second+time.Millisecond)}},
	})
}

func TestExIncr(t *testing.T) { onEngines(t, testExIncr) }

func testExIncr(t *testing.T, engine string) {
	h := newHarnessOn(t, engine)
	h.run([]step{
		{"EXINCRBY c 5", num(5)},
		{"EXINCRBY c 5 WITHVERSION", arr(num(10), num(2))},
		{"EXINCRBY d 5 DEF 100", num(100)}, // DEF: a missing key starts at DEF, not incremented
		{"EXINCRBY d 5 DEF 100", num(105)},
		{"EXINCRBY c x", tsNoInt},
		{"EXINCRBY c 1 DEF x", tsNoInt},
		{"EXINCRBY c 1 MAX 10", tsOvf},
		{"EXINCRBY c -20 MIN 0", tsOvf},
		{"EXINCRBY c -20 NONEGATIVE", num(0)},
		{"EXINCRBY c 1 MIN x", tsMinMax},
		{"EXINCRBY c 1 MIN 5 MAX 1", tsMinMax},
		{"EXINCRBY c 9223372036854775807", num(9223372036854775807)},
		{"EXINCRBY c 1", tsOvf},
		{"EXINCRBY c 1 VER 1", stale},
		{"EXINCRBY c 1 NX", null},
		{"EXINCRBY e 1 XX", null},
		{"EXINCRBY c -1 ABS 7 WITHVERSION", arr(num(9223372036854775806), num(7))},
		{"EXINCRBY c 1 EX 10", num(9223372036854775807)},
		{"PTTL c", num(10000)},
		{"EXINCRBY c -1 KEEPTTL", num(9223372036854775806)},
		{"PTTL c", num(10000)},
		{"EXINCRBY c -1", num(9223372036854775805)},
		{"PTTL c", num(-1)},
		{"EXINCRBY c 1 FOO", syntax},
		{"EXINCRBY c 1 FLAGS 1", syntax},
		{"SET s abc", ok},
		{"EXINCRBY s 1", tsNoInt},
		{"TAIR.ITEMADD it 2 a", num(1)},
		{"EXINCRBY it x", wrongT}, // the type is checked before the arguments
		{"EXINCRBYFLOAT it x", wrongT},
		{"EXINCRBYFLOAT f 1.5", bulk("1.5")},
		{"EXINCRBYFLOAT f 0.1", bulk("1.6")},
		{"EXINCRBYFLOAT f x", tsNoFlt},
		{"EXINCRBYFLOAT f 1 MAX 2", tsOvf},
		{"EXINCRBYFLOAT f -5 MIN 0", tsOvf},
		{"EXINCRBYFLOAT f 1 MIN x", tsMinMax},
		{"EXINCRBYFLOAT f 1 MIN 3 MAX 2", tsMinMax},
		{"EXINCRBYFLOAT f 1 WITHVERSION", syntax},
		{"EXINCRBYFLOAT f 1 VER 1", stale},
		{"EXINCRBYFLOAT f 1 VER 2", bulk("2.6")},
		{"EXINCRBYFLOAT s 1", tsNoFlt},
		{"EXINCRBYFLOAT g inf", tsOvf},
		{"EXGET f", arr(bulk("2.6"), num(3))},
	})
	h.runProp([]propStep{
		{"EXINCRBY q 5 DEF 3 EX 60", []string{"EXSET q 3 ABS 1 FLAGS 0 PXAT " + ms(60*time.Second)}},
	})
}

func TestExCasCadAppend(t *testing.T) { onEngines(t, testExCasCadAppend) }

func testExCasCadAppend(t *testing.T, engine string) {
	h := newHarnessOn(t, engine)
	h.run([]step{
		{"EXCAS k v 1", num(-1)},
		{"EXSET k v", ok},
		{"EXCAS k w 5", arr("+CAS_FAILED\r\n", bulk("v"), num(1))},
		{"EXCAS k w 1", arr(ok, "+\r\n", num(2))},
		{"EXCAS k w x", errReply("ERR version should be integer")},
		{"EXCAS k w -1", syntax},
		{"EXCAS k w 2 EX 10", arr(ok, "+\r\n", num(3))},
		{"PTTL k", num(10000)},
		{"EXCAS k w 3 KEEPTTL", arr(ok, "+\r\n", num(4))},
		{"PTTL k", num(10000)},
		{"EXCAS k w 4", arr(ok, "+\r\n", num(5))},
		{"PTTL k", num(-1)},
		{"EXCAS k w 5 NX", syntax},
		{"EXCAD k 1", num(0)},
		{"EXCAD k x", syntax},
		{"EXCAD k 5", num(1)},
		{"EXCAD k 5", num(-1)},
		{"EXAPPEND a x", num(1)},
		{"EXAPPEND a y", num(2)},
		{"EXPREPEND a w VER 2", num(3)},
		{"EXPREPEND a w VER 2", stale},
		{"EXAPPEND a z ABS 50", num(50)},
		{"EXGET a", arr(bulk("wxyz"), num(50))},
		{"EXAPPEND a z NX", null},
		{"EXAPPEND b z XX", null},
		{"EXAPPEND a z EX 10", syntax},
		{"EXSETVER a 7", num(1)},
		{"EXGET a", arr(bulk("wxyz"), num(7))},
		{"EXSETVER b 7", num(0)},
		{"EXSETVER a 0", syntax},
		{"EXSETVER a x", syntax},
		{"EXSET g v EX 10 FLAGS 4", ok},
		{"EXGAE g EX 100", arr(bulk("v"), num(1), num(4))}, // the version does not change
		{"PTTL g", num(100000)},
		{"EXGAE g PXAT " + ms(5*time.Second), arr(bulk("v"), num(1), num(4))},
		{"PTTL g", num(5000)},
		{"EXGAE nope EX 10", null},
		{"EXGAE g EX 0", syntax},
		{"EXGAE g NX 1", syntax},
		{"EXGAE g", errReply("ERR wrong number of arguments for 'exgae' command")},
		{"CAS c a b", num(-1)},
		{"SET c a", ok},
		{"CAS c x b", num(0)},
		{"CAS c a b EX 10", num(1)},
		{"GET c", bulk("b")},
		{"PTTL c", num(10000)},
		{"CAS c b d", num(1)},
		{"PTTL c", num(-1)},
		{"CAS c d e NX", syntax},
		{"CAD c x", num(0)},
		{"CAD c d", num(1)},
		{"CAD c d", num(-1)},
		{"TAIR.ITEMADD it 2 a", num(1)},
		{"CAD it a", wrongT},
		{"CAS it a b", wrongT},
		{"EXCAS it a 1", wrongT},
		{"EXCAD it 1", wrongT},
		{"EXAPPEND it a", wrongT},
		{"EXSETVER it 1", wrongT},
		{"EXGAE it EX 1", wrongT},
	})
	h.runProp([]propStep{
		{"EXGAE g EX 7", []string{"EXGAE g PXAT " + ms(7*time.Second)}},
		{"CAD c e", nil}, // a missing key
	})
}

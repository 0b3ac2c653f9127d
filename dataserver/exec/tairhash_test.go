package exec

import (
	"testing"
	"time"
)

const exStale = "-ERR update version is stale\r\n"

func TestExHash(t *testing.T) {
	h := newHarness(t)
	h.run([]step{
		{"EXHSET th f v", num(1)},
		{"EXHSET th f v2", num(0)},
		{"EXHGETWITHVER th f", arr(bulk("v2"), num(2))},
		{"EXHSET th f v3 VER 1", exStale},
		{"EXHSET th f v3 VER 2", num(0)},
		{"EXHSET th f v4 VER 0", num(0)},
		{"EXHVER th f", num(4)},
		{"EXHSET th f v5 ABS 10", num(0)},
		{"EXHVER th f", num(10)},
		{"EXHSET th f v6 GT 10", exStale},
		{"EXHSET th f v6 GT 11", num(0)},
		{"EXHSET th f v ABS 0", syntax},
		{"EXHSET th f v VER -1", syntax},
		{"EXHSET th f v EX 0", syntax},
		{"EXHSET th f v EX x", syntax},
		{"EXHSET th f v EX 10 KEEPTTL", syntax},
		{"EXHSET th f v FOO", syntax},
		{"EXHSET th g v XX", num(-1)},
		{"EXHSET th f v NX", num(-1)},
		{"EXHSET nokey f v XX", num(-1)},
		{"EXISTS nokey", num(0)},
		{"EXHGET th f", bulk("v6")},
		{"EXHGET th nof", null},
		{"EXHGET nokey f", null},
		{"EXHGETWITHVER nokey f", null},
		{"EXHVER nokey f", num(-1)},
		{"EXHVER th nof", num(-2)},
		{"EXHMGET th f nof", arr(bulk("v6"), null)},
		{"EXHMGET nokey a b", arr(null, null)},
		{"EXHMGETWITHVER th f nof", arr(arr(bulk("v6"), num(11)), null)},
		{"EXHSETNX th f x", num(0)},
		{"EXHSETNX th n x", num(1)},
		{"EXHVER th n", num(1)},
		{"EXHMSET th n y m z", ok},
		{"EXHMSET th n", "-ERR wrong number of arguments for 'exhmset' command\r\n"},
		{"EXHVER th n", num(2)},
		{"EXHLEN th", num(3)},
		{"EXHLEN th NOEXP", num(3)},
		{"EXHLEN th FOO", syntax},
		{"EXHLEN nokey", num(0)},
		{"EXHEXISTS th m", num(1)},
		{"EXHEXISTS th zz", num(0)},
		{"EXHSTRLEN th f", num(2)},
		{"EXHSTRLEN th zz", num(0)},
		{"EXHSETVER th m 7", num(1)},
		{"EXHSETVER th zz 7", num(0)},
		{"EXHSETVER th m 0", syntax},
		{"EXHVER th m", num(7)},
		{"EXHDELWITHVER th m 6", num(0)},
		{"EXHDELWITHVER th m 7 n 0 zz 0", num(2)},
		{"EXHDELWITHVER th m", "-ERR wrong number of arguments for 'exhdelwithver' command\r\n"},
		{"EXHDELWITHVER th m x", syntax},
		{"EXHKEYS th", arr(bulk("f"))},
		{"EXHVALS th", arr(bulk("v6"))},
		{"EXHGETALL th", arr(bulk("f"), bulk("v6"))},
		{"EXHGETALL nokey", "*0\r\n"},
		{"EXHSCAN th 0", arr(num(0), arr(bulk("f"), bulk("v6")))},
		{"EXHSCAN th 0 MATCH g*", arr(num(0), "*0\r\n")},
		{"EXHSCAN nokey 0", arr(num(0), "*0\r\n")},
		{"EXHSCAN th x", syntax},
		{"EXHSCAN th 0 COUNT x", syntax},
		{"EXHDEL th f zz", num(1)},
		{"EXISTS th", num(0)},
		{"EXHDEL th f", num(0)},
		// counters
		{"EXHINCRBY c n 5", num(5)},
		{"EXHINCRBY c n -2", num(3)},
		{"EXHINCRBY c n x", "-ERR value is not an integer\r\n"},
		{"EXHINCRBY c n 1 MAX 3", "-ERR increment or decrement would overflow\r\n"},
		{"EXHINCRBY c n -5 MIN 0", "-ERR increment or decrement would overflow\r\n"},
		{"EXHINCRBY c n 1 MIN 0 MAX 10", num(4)},
		{"EXHINCRBY c n 1 MIN x", "-ERR min or max is specified, but value is not an integer\r\n"},
		{"EXHINCRBY c n 1 MIN 5 MAX 1", "-ERR min value is bigger than max value\r\n"},
		{"EXHINCRBY c n 9223372036854775807", "-ERR increment or decrement would overflow\r\n"},
		{"EXHINCRBY c n 1 VER 1", exStale},
		{"EXHVER c n", num(3)},
		{"EXHINCRBY c n 1 VER 3", num(5)},
		{"EXHSET c s abc", num(1)},
		{"EXHINCRBY c s 1", "-ERR value is not an integer\r\n"},
		{"EXHINCRBYFLOAT c s 1", "-ERR value is not an float\r\n"},
		{"EXHINCRBYFLOAT c fl 1.5", bulk("1.5")},
		{"EXHINCRBYFLOAT c fl 0.25", bulk("1.75")},
		{"EXHINCRBYFLOAT c fl x", "-ERR value is not an float\r\n"},
		{"EXHINCRBYFLOAT c fl 10 MAX 5", "-ERR increment or decrement would overflow\r\n"},
		{"EXHINCRBYFLOAT c fl 1 MAX x", "-ERR min or max is specified, but value is not a float\r\n"},
		{"EXHINCRBYFLOAT c fl -1 MIN 0.5", bulk("0.75")},
		// wrong types
		{"SET str v", ok},
		{"EXHSET str f v", wrongT},
		{"EXHGET str f", wrongT},
		{"EXHLEN str", wrongT},
		{"EXHSCAN str 0", wrongT},
		{"EXHSET h f v", num(1)},
		{"HGET h f", wrongT},
		{"TYPE h", "+exhash\r\n"},
	})
}

func TestExHashExpiry(t *testing.T) {
	h := newHarness(t)
	h.run([]step{
		{"EXHSET e a 1 EX 10", num(1)},
		{"EXHSET e b 2 PX 5000", num(1)},
		{"EXHSET e c 3", num(1)},
		{"EXHTTL e a", num(10)},
		{"EXHPTTL e b", num(5000)},
		{"EXHTTL e c", num(-1)},
		{"EXHTTL e zz", num(-3)},
		{"EXHTTL nokey a", num(-2)},
		{"EXHSET e c 4 KEEPTTL", num(0)},
		{"EXHTTL e c", num(-1)},
	})
	h.clock.Advance(5001 * time.Millisecond)
	h.run([]step{
		{"EXHGET e b", null},
		{"EXHEXISTS e b", num(0)},
		{"EXHLEN e", num(3)}, // not yet reclaimed, as in Tair
		{"EXHLEN e NOEXP", num(2)},
		{"EXHSET e c 5", num(0)}, // a write reclaims due fields
		{"EXHLEN e", num(2)},
		{"EXHSET e c 6 KEEPTTL", num(0)},
		{"EXHSET e a 1 EX 100 KEEPTTL", syntax},
		{"EXHSET e a x KEEPTTL", num(0)},
		{"EXHTTL e a", num(5)},
		{"EXHSET e a y", num(0)},
		{"EXHTTL e a", num(-1)},
		{"EXHEXPIRE e a 100", num(1)},
		{"EXHTTL e a", num(100)},
		{"EXHPEXPIRE e a 1500 VER 1", exStale},
		{"EXHPEXPIRE e a 1500 ABS 42", num(1)},
		{"EXHVER e a", num(42)},
		{"EXHPTTL e a", num(1500)},
		{"EXHEXPIREAT e zz 1", num(0)},
		{"EXHEXPIRE nokey a 10", num(0)},
		{"EXHEXPIRE e a x", syntax},
		{"EXHEXPIRE e c 0", num(1)}, // 0 expires at once
	})
	h.wantProp("EXHEXPIRE e c 0", []string{"EXHDEL e c"})
	h.run([]step{
		{"EXHEXISTS e c", num(0)},
		{"EXHLEN e", num(1)},
		{"TTL e", num(2)}, // every field expires: the key follows the last
	})
	h.clock.Advance(3 * time.Second)
	h.run([]step{
		{"EXISTS e", num(0)},
		{"EXHGET e a", null},
	})
}

func TestExHashPropagation(t *testing.T) {
	h := newHarness(t)
	now := testEpoch.UnixMilli()
	h.runProp([]propStep{
		{"EXHSET p f v EX 10", []string{"EXHSET p f v ABS 1 PXAT " + exItoa(now+10000)}},
		{"EXHSET p f v2 KEEPTTL", []string{"EXHSET p f v2 ABS 2 PXAT " + exItoa(now+10000)}},
		{"EXHSET p f v3", []string{"EXHSET p f v3 ABS 3"}},
		{"EXHSET p f v3 NX", nil},
		{"EXHINCRBY p n 2 PX 100", []string{"EXHSET p n 2 ABS 1 PXAT " + exItoa(now+100)}},
		{"EXHINCRBYFLOAT p x 1.5", []string{"EXHSET p x 1.5 ABS 1"}},
		{"EXHEXPIRE p f 5", []string{"EXHPEXPIREAT p f " + exItoa(now+5000) + " ABS 3"}},
		{"EXHEXPIRE p zz 5", nil},
		{"EXHGET p f", nil},
		{"EXHMSET p a 1 b 2", []string{"EXHMSET p a 1 b 2"}},
		{"EXHDEL p a zz", []string{"EXHDEL p a zz"}},
		{"EXHDEL p zz", nil},
		{"EXHDELWITHVER p b 0 x 0", []string{"EXHDEL p b x"}},
	})
}

func TestExHashKeyVersion(t *testing.T) {
	h := newHarness(t)
	h.line("EXHSET v f a")
	h.line("EXHSET v f b")
	h.line("EXHSET v g c NX")
	h.line("EXHSET v g c NX") // no-op: -1
	h.line("EXHGET v f")
	if got := h.version("v"); got != 3 {
		t.Fatalf("key version %d, want 3", got)
	}
}

func exItoa(n int64) string { return string(Int64Bytes(n)) }

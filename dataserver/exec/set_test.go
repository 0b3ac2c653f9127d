package exec

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// TestDSScanLarge walks HSCAN/SSCAN/ZSCAN/EXHSCAN over 1000 elements and
// checks that every element comes back exactly once, with changes made
// during the scan not disturbing the elements that stay.
func TestDSScanLarge(t *testing.T) {
	h := newHarness(t)
	for i := 0; i < 1000; i++ {
		m := fmt.Sprintf("m%04d", i)
		h.line("HSET h " + m + " v")
		h.line("SADD s " + m)
		h.line("ZADD z " + strconv.Itoa(i) + " " + m)
		h.line("EXHSET x " + m + " v")
	}
	for _, cmd := range []string{"HSCAN h", "SSCAN s", "ZSCAN z", "EXHSCAN x"} {
		seen := map[string]int{}
		cursor := "0"
		calls := 0
		pairs := cmd[0] != 'S'
		for {
			out := h.line(cmd + " " + cursor + " COUNT 10")
			next, items := parseScanReply(t, out)
			for i := 0; i < len(items); i++ {
				seen[items[i]]++
				if pairs {
					i++
				}
			}
			calls++
			if calls == 3 { // a change mid-scan
				change := map[string]string{"HSCAN h": "HSET h added 1", "SSCAN s": "SADD s added",
					"ZSCAN z": "ZADD z 1 added", "EXHSCAN x": "EXHSET x added 1"}[cmd]
				if got := h.line(change); got != num(1) {
					t.Fatalf("%s: %q", change, got)
				}
			}
			if next == "0" {
				break
			}
			cursor = next
			if calls > 500 {
				t.Fatalf("%s does not end", cmd)
			}
		}
		if calls < 50 {
			t.Errorf("%s: %d calls for 1000 elements with COUNT 10", cmd, calls)
		}
		for i := 0; i < 1000; i++ {
			if n := seen[fmt.Sprintf("m%04d", i)]; n != 1 {
				t.Fatalf("%s: m%04d seen %d times", cmd, i, n)
			}
		}
	}
	if got := h.line("SSCAN s 0 MATCH m000? COUNT 2000"); !strings.HasPrefix(got, "*2\r\n$1\r\n0\r\n*10\r\n") {
		t.Errorf("SSCAN MATCH: %.60q", got)
	}
}

// parseScanReply splits [cursor, [items...]] (the cursor a bulk string or
// an integer, as EXHSCAN sends it).
func parseScanReply(t *testing.T, out string) (string, []string) {
	t.Helper()
	lines := strings.Split(out, "\r\n")
	if len(lines) < 4 || lines[0] != "*2" {
		t.Fatalf("not a scan reply: %.80q", out)
	}
	var cursor string
	i := 1
	if strings.HasPrefix(lines[i], ":") {
		cursor, i = lines[i][1:], i+1
	} else {
		cursor, i = lines[i+1], i+2
	}
	n, _ := strconv.Atoi(strings.TrimPrefix(lines[i], "*"))
	i++
	items := make([]string, 0, n)
	for k := 0; k < n; k++ {
		items = append(items, lines[i+1])
		i += 2
	}
	return cursor, items
}

// TestDSRandom checks the shapes of the random-pick commands.
func TestDSRandom(t *testing.T) {
	h := newHarness(t)
	h.run([]step{{"SADD s a b c", num(3)}, {"HSET h a 1 b 2 c 3", num(3)}, {"ZADD z 1 a 2 b 3 c", num(3)}})
	members := map[string]bool{"a": true, "b": true, "c": true}
	check := func(cmd string, n int, distinct bool, stride int) {
		t.Helper()
		for round := 0; round < 20; round++ {
			_, items := parseScanReply(t, "*2\r\n$1\r\n0\r\n"+h.line(cmd))
			if len(items) != n*stride {
				t.Fatalf("%s: %d items, want %d", cmd, len(items), n*stride)
			}
			seen := map[string]bool{}
			for i := 0; i < len(items); i += stride {
				if !members[items[i]] || (distinct && seen[items[i]]) {
					t.Fatalf("%s: bad pick %v", cmd, items)
				}
				seen[items[i]] = true
			}
		}
	}
	check("SRANDMEMBER s 2", 2, true, 1)
	check("SRANDMEMBER s 5", 3, true, 1)
	check("SRANDMEMBER s -5", 5, false, 1)
	check("HRANDFIELD h 2", 2, true, 1)
	check("HRANDFIELD h -4 WITHVALUES", 4, false, 2)
	check("ZRANDMEMBER z 2 WITHSCORES", 2, true, 2)
	check("ZRANDMEMBER z -7", 7, false, 1)
	for i := 0; i < 20; i++ {
		for _, cmd := range []string{"SRANDMEMBER s", "HRANDFIELD h", "ZRANDMEMBER z"} {
			got := h.line(cmd)
			if got != bulk("a") && got != bulk("b") && got != bulk("c") {
				t.Fatalf("%s: %q", cmd, got)
			}
		}
	}
	popped := map[string]bool{}
	for i := 0; i < 3; i++ {
		got := h.line("SPOP s")
		popped[got] = true
	}
	if len(popped) != 3 || h.line("EXISTS s") != num(0) {
		t.Fatalf("SPOP popped %v", popped)
	}
}

// TestScanCheckOrder: as Redis, HSCAN, SSCAN and ZSCAN parse the cursor,
// then look the key up (missing: an empty scan whatever the options;
// wrong type: WRONGTYPE), then parse the options.
func TestScanCheckOrder(t *testing.T) {
	onEngines(t, func(t *testing.T, engine string) {
		h := newHarnessOn(t, engine)
		emptyScan := arr(bulk("0"), arr())
		h.run([]step{
			{"SET str v", ok},
			{"SADD s a", num(1)},
			{"ZADD z 1 a", num(1)},
			{"HSET h f v", num(1)},
		})
		for _, cmd := range []string{"SSCAN", "ZSCAN", "HSCAN"} {
			h.run([]step{
				{cmd + " none x", errReply("ERR invalid cursor")},
				{cmd + " none 0 COUNT 0", emptyScan},
				{cmd + " none 0 FOO", emptyScan},
				{cmd + " str 0 COUNT x", wrongT},
				{cmd + " str 0 FOO", wrongT},
				{cmd + " str x", errReply("ERR invalid cursor")},
				{cmd + " " + strings.ToLower(cmd[:1]) + " 0 COUNT x", notInt},
				{cmd + " " + strings.ToLower(cmd[:1]) + " 0 COUNT 0", syntax},
				{cmd + " " + strings.ToLower(cmd[:1]) + " 0 FOO", syntax},
			})
		}
	})
}

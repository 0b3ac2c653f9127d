package proxy

import (
	"strconv"
	"testing"
	"time"
)

func TestSlowlogRing(t *testing.T) {
	ss := &session{addr: "1.2.3.4:5"}
	empty := ""
	ss.info.name.Store(&empty)
	l := &slowlog{max: 3}
	for i := 0; i < 5; i++ {
		l.add(ss, [][]byte{[]byte("get"), []byte(strconv.Itoa(i))}, time.Duration(i)*time.Millisecond)
	}
	if n := l.length(); n != 3 {
		t.Fatalf("len %d, want 3", n)
	}
	ids := func(es []slowEntry) (out []int64) {
		for _, e := range es {
			out = append(out, e.id)
		}
		return out
	}
	if got := ids(l.newest(-1)); len(got) != 3 || got[0] != 2 || got[2] != 4 {
		t.Fatalf("entries %v, want [2 3 4]", got)
	}
	if got := ids(l.newest(2)); len(got) != 2 || got[0] != 3 || got[1] != 4 {
		t.Fatalf("newest 2: %v, want [3 4]", got)
	}
	if e := l.newest(1)[0]; e.args[1] != "4" || e.dur != 4*time.Millisecond {
		t.Fatalf("newest entry %+v", e)
	}
	l.setMax(2)
	if got := ids(l.newest(-1)); len(got) != 2 || got[0] != 3 || got[1] != 4 {
		t.Fatalf("after shrink %v, want [3 4]", got)
	}
	l.add(ss, [][]byte{[]byte("get"), []byte("x")}, time.Millisecond)
	if got := ids(l.newest(-1)); len(got) != 2 || got[0] != 4 || got[1] != 5 {
		t.Fatalf("after add %v, want [4 5]", got)
	}
	l.setMax(10)
	l.add(ss, [][]byte{[]byte("get"), []byte("y")}, time.Millisecond)
	if got := ids(l.newest(-1)); len(got) != 3 || got[2] != 6 {
		t.Fatalf("after grow %v, want [4 5 6]", got)
	}
	l.reset()
	if l.length() != 0 {
		t.Fatal("reset left entries")
	}
	l.setMax(0)
	l.add(ss, [][]byte{[]byte("get")}, time.Millisecond)
	if l.length() != 0 {
		t.Fatal("max 0 kept an entry")
	}
}

package command

import "bytes"

// Streams (dataserver/exec stream.go). XREAD and XREADGROUP take their
// keys after STREAMS (xreadKeys); their keys must share a bucket (Atomic:
// CROSSSLOT otherwise). They are Blocking: the proxy polls their BLOCK
// (proxy/streamblock.go); the dataserver makes one non-blocking attempt.
// XGROUP and XINFO are containers in Redis: the key is at 2 (none for
// HELP).
func init() {
	r, w := ReadOnly, Write
	one := func(name string, arity int, f Flag) *Spec {
		return &Spec{Name: name, Arity: arity, Flags: f, FirstKey: 1, LastKey: 1, Step: 1, Group: "stream"}
	}
	Register(
		one("xadd", -5, w),
		one("xtrim", -4, w),
		one("xlen", 2, r),
		one("xrange", -4, r),
		one("xrevrange", -4, r),
		one("xdel", -3, w),
		one("xsetid", -3, w),
		one("xack", -4, w),
		one("xpending", -3, r),
		one("xclaim", -6, w),
		one("xautoclaim", -6, w),
		&Spec{Name: "xread", Arity: -4, Flags: r | Blocking | Atomic, KeysFunc: xreadKeys, Group: "stream"},
		&Spec{Name: "xreadgroup", Arity: -7, Flags: w | Blocking | Atomic, KeysFunc: xreadKeys, Group: "stream"},
		&Spec{Name: "xgroup", Arity: -2, Flags: w, FirstKey: 2, LastKey: 2, Step: 1, Group: "stream"},
		&Spec{Name: "xinfo", Arity: -2, Flags: r, FirstKey: 2, LastKey: 2, Step: 1, Group: "stream"},
	)
}

// xreadKeys is Redis's xreadGetKeys: the keys are the first half of the
// arguments after STREAMS, found by skipping the options before it.
func xreadKeys(args [][]byte) []int {
	pos := -1
	for i := 1; i < len(args); i++ {
		a := args[i]
		if j := bytes.IndexByte(a, 0); j >= 0 {
			a = a[:j]
		}
		switch {
		case bytes.EqualFold(a, []byte("block")), bytes.EqualFold(a, []byte("count")):
			i++
		case bytes.EqualFold(a, []byte("group")):
			i += 2
		case bytes.EqualFold(a, []byte("noack")):
		case bytes.EqualFold(a, []byte("streams")):
			pos = i
		}
		if pos >= 0 || !(bytes.EqualFold(a, []byte("block")) || bytes.EqualFold(a, []byte("count")) ||
			bytes.EqualFold(a, []byte("group")) || bytes.EqualFold(a, []byte("noack"))) {
			break
		}
	}
	if pos < 0 {
		return nil
	}
	n := len(args) - pos - 1
	if n == 0 || n%2 != 0 {
		return nil
	}
	out := make([]int, 0, n/2)
	for i := pos + 1; i <= pos+n/2; i++ {
		out = append(out, i)
	}
	return out
}

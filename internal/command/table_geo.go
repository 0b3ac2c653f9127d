package command

import "bytes"

// The geo commands (dataserver/exec geo.go): positions are sorted-set
// members. GEORADIUS and GEORADIUSBYMEMBER are writes, as in Redis, for
// their STORE and STOREDIST destinations (their _RO forms take none);
// GEOSEARCHSTORE writes its first key. A destination must share its
// source's bucket (Atomic: CROSSSLOT otherwise).
func init() {
	r, w := ReadOnly, Write
	one := func(name string, arity int, f Flag) *Spec {
		return &Spec{Name: name, Arity: arity, Flags: f, FirstKey: 1, LastKey: 1, Step: 1}
	}
	Register(
		one("geoadd", -5, w),
		one("geodist", -4, r),
		one("geohash", -2, r),
		one("geopos", -2, r),
		// GEORADIUS key lon lat radius unit [options]: options from 6;
		// GEORADIUSBYMEMBER key member radius unit [options]: from 5.
		&Spec{Name: "georadius", Arity: -6, Flags: w | Atomic, KeysFunc: geoRadiusKeys(6)},
		&Spec{Name: "georadiusbymember", Arity: -5, Flags: w | Atomic, KeysFunc: geoRadiusKeys(5)},
		one("georadius_ro", -6, r),
		one("georadiusbymember_ro", -5, r),
		one("geosearch", -7, r),
		// GEOSEARCHSTORE destination source ...
		&Spec{Name: "geosearchstore", Arity: -8, Flags: w | Atomic, FirstKey: 1, LastKey: 2, Step: 1},
	)
}

// geoRadiusKeys finds a GEORADIUS's keys: the source, and every STORE and
// STOREDIST destination among the options that start at from (Redis uses
// the last one; all of them must share the source's bucket here).
func geoRadiusKeys(from int) func(args [][]byte) []int {
	return func(args [][]byte) []int {
		if len(args) < 2 {
			return nil
		}
		out := []int{1}
		for i := from; i < len(args); i++ {
			a := args[i]
			if j := bytes.IndexByte(a, 0); j >= 0 {
				a = a[:j] // Redis compares options as C strings
			}
			switch {
			case bytes.EqualFold(a, []byte("count")):
				i++ // its value
			case (bytes.EqualFold(a, []byte("store")) || bytes.EqualFold(a, []byte("storedist"))) && i+1 < len(args):
				out = append(out, i+1)
				i++
			}
		}
		return out
	}
}

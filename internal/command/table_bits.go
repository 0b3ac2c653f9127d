package command

// Bitmaps (dataserver/exec bitmap.go): strings addressed bit by bit.
// BITOP's destination and sources must share a bucket (Atomic, else
// CROSSSLOT). BITFIELD is a write (it goes to the master) even when it
// only GETs, as in Redis; BITFIELD_RO is its read-only form.
func init() {
	r, w := ReadOnly, Write
	one := func(name string, arity int, f Flag) *Spec {
		return &Spec{Name: name, Arity: arity, Flags: f, FirstKey: 1, LastKey: 1, Step: 1}
	}
	Register(
		one("setbit", 4, w),
		one("getbit", 3, r),
		one("bitcount", -2, r),
		one("bitpos", -3, r),
		&Spec{Name: "bitop", Arity: -4, Flags: w | Atomic, FirstKey: 2, LastKey: -1, Step: 1},
		one("bitfield", -2, w),
		one("bitfield_ro", -2, r),
	)
}

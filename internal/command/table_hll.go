package command

// HyperLogLogs (dataserver/exec hll.go). PFCOUNT is a Write, as Redis
// flags it "may replicate": counting one key caches the cardinality in
// its value, which slaves must get too (the read runs on the master).
// PFCOUNT and PFMERGE of several keys are Atomic: their keys share a
// bucket, else CROSSSLOT. PFDEBUG's key is its second argument.
// PFSELFTEST is not served.
func init() {
	Register(
		&Spec{Name: "pfadd", Arity: -2, Flags: Write, FirstKey: 1, LastKey: 1, Step: 1},
		&Spec{Name: "pfcount", Arity: -2, Flags: Write | Atomic, FirstKey: 1, LastKey: -1, Step: 1},
		&Spec{Name: "pfmerge", Arity: -2, Flags: Write | Atomic, FirstKey: 1, LastKey: -1, Step: 1},
		&Spec{Name: "pfdebug", Arity: 3, Flags: Write, FirstKey: 2, LastKey: 2, Step: 1},
	)
}

package command

// Scripting (dataserver/script.go, proxy/script.go). EVAL and FCALL
// count their keys with numkeys (the argument after the script or the
// function); every key must be in one bucket (else CROSSSLOT). The
// proxy answers SCRIPT and FUNCTION with the dataservers and the
// configserver (see proxy/script.go).
func init() {
	keys := NumKeysAt(2)
	Register(
		&Spec{Name: "eval", Arity: -3, Flags: Atomic, KeysFunc: keys},
		&Spec{Name: "evalsha", Arity: -3, Flags: Atomic, KeysFunc: keys},
		&Spec{Name: "eval_ro", Arity: -3, Flags: ReadOnly | Atomic, KeysFunc: keys},
		&Spec{Name: "evalsha_ro", Arity: -3, Flags: ReadOnly | Atomic, KeysFunc: keys},
		&Spec{Name: "fcall", Arity: -3, Flags: Atomic, KeysFunc: keys},
		&Spec{Name: "fcall_ro", Arity: -3, Flags: ReadOnly | Atomic, KeysFunc: keys},
		&Spec{Name: "script", Arity: -2, Flags: NoKey},
		&Spec{Name: "function", Arity: -2, Flags: NoKey},
	)
}

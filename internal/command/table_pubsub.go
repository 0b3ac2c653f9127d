package command

// Pub/sub (proxy/pubsub.go): the proxy answers every one of these itself,
// and no dataserver sees them. SSUBSCRIBE, SUNSUBSCRIBE and SPUBLISH name
// their channels as keys, as Redis's key specs do (flagged not_key there),
// so that cluster clients route them by the channel's slot; any proxy
// serves any channel. TAIR.PUBFWD is the proxies' own: a peer proxy
// forwards PUBLISH/SPUBLISH with it and gathers PUBSUB counts.
func init() {
	ps := func(name string, arity int) *Spec {
		return &Spec{Name: name, Arity: arity, Flags: NoKey, Group: "pubsub"}
	}
	sharded := func(name string, arity, last int) *Spec {
		return &Spec{Name: name, Arity: arity, FirstKey: 1, LastKey: last, Step: 1, Group: "pubsub"}
	}
	Register(
		ps("subscribe", -2),
		ps("psubscribe", -2),
		ps("unsubscribe", -1),
		ps("punsubscribe", -1),
		ps("publish", 3),
		ps("pubsub", -2),
		sharded("ssubscribe", -2, -1),
		sharded("sunsubscribe", -1, -1),
		sharded("spublish", 3, 1),
		&Spec{Name: "tair.pubfwd", Arity: -2, Flags: NoKey | Tair},
	)
}

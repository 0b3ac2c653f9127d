package exec

// Access tracking: which commands count as an access of their keys (the
// engine's LFU counter and access time behind OBJECT FREQ and OBJECT
// IDLETIME, engines.AccessTracker), as Redis's lookupKey decides.
//
// Every command that reads or writes a key touches it, except those that
// only inspect it, which Redis looks up with LOOKUP_NOTOUCH, and every
// command of a client in CLIENT NO-TOUCH mode (Request.NoTouch), but
// TOUCH, whose point is the touch (Redis 7.2's lookupKey).

// inspectOnly are the commands whose keys Redis looks up with
// LOOKUP_NOTOUCH (checked against redis-server in TestAccessAgainstRedis).
var inspectOnly = map[string]bool{
	"exists": true, "type": true, "ttl": true, "pttl": true, "expiretime": true, "pexpiretime": true,
	"object": true, "memory": true,
}

// touchesKeys reports whether the command r, run for req, counts as an
// access of its keys.
func (r registered) touchesKeys(req *Request) bool {
	if r.inspects {
		return false
	}
	return !req.NoTouch || r.spec.Name == "touch"
}

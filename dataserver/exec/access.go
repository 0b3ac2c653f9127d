package exec

// Access tracking: which commands count as an access of their keys (the
// engine's LFU counter and access time behind OBJECT FREQ and OBJECT
// IDLETIME, engines.AccessTracker), as Redis's lookupKey decides.
//
// Every command that reads or writes a key touches it, except those that
// only inspect it, which Redis looks up with LOOKUP_NOTOUCH, and every
// command of a client in CLIENT NO-TOUCH mode (Request.NoTouch), but
// TOUCH, whose point is the touch (Redis 7.2's lookupKey).

// inspectOnly are the commands Redis looks their keys up for with
// LOOKUP_NOTOUCH (checked against redis-server in
// TestAccessAgainstRedis).
var inspectOnly = map[string]bool{
	"exists": true, "type": true, "ttl": true, "pttl": true, "expiretime": true, "pexpiretime": true,
	"object": true, "memory": true,
}

// Request is what the dataserver knows of a command besides its
// arguments.
type Request struct {
	Area  uint16
	Proto int // RESP version of the reply, 2 or 3
	// Replica: the command comes from the master's replication stream;
	// handlers then skip checks that only the master makes.
	Replica bool
	// NoTouch: the client is in CLIENT NO-TOUCH mode (the envelope's
	// flag): its commands, but TOUCH, leave the access fields alone.
	NoTouch bool
}

// touchesKeys reports whether the command r, run for req, counts as an
// access of its keys.
func (r registered) touchesKeys(req *Request) bool {
	if r.inspects {
		return false
	}
	return !req.NoTouch || r.spec.Name == "touch"
}

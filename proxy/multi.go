package proxy

import (
	"bytes"
	"strconv"

	"github.com/tairkv/tair/internal/command"
	"github.com/tairkv/tair/internal/luascript"
	"github.com/tairkv/tair/internal/route"
	"github.com/tairkv/tair/resp"
)

// txState is a session's transaction: MULTI queues commands in the
// proxy; EXEC sends them as one atomic MULTIEXEC to the master of their
// one bucket:
//
//	TAIR.X <area> <ver> <proto> MULTIEXEC <n> (<argc> <arg>...){n} [WATCH <m> (<key> <version>){m}]
//
// replying like EXEC (an array of the n replies), or a null array when a
// watched key's version changed. WATCH asks the versions first:
//
//	TAIR.X <area> <ver> <proto> TAIR.KEYVER <key>...  -> array of integers (0 = missing)
type txState struct {
	active  bool
	dirty   bool
	cmds    [][][]byte // copies of the queued commands
	watched [][]byte   // watched keys (copies)
	vers    [][]byte   // their versions, as text; nil when not known
	watchOK bool       // versions known (the dataserver has TAIR.KEYVER)
}

func (tx *txState) reset() {
	tx.active, tx.dirty = false, false
	tx.cmds = tx.cmds[:0]
	tx.watched, tx.vers = nil, nil
	tx.watchOK = false
}

func txControl(name string) bool {
	switch name {
	case "exec", "discard", "multi", "watch", "quit", "reset", "unwatch":
		return true
	}
	return false
}

// runsInProxy: the proxy's own commands a transaction may hold; EXEC
// runs them in the proxy, in their place among the dataserver's replies,
// once the dataserver's part has run (so PUBLISH publishes only when the
// transaction ran, and answers its receivers, as in Redis).
func runsInProxy(name string) bool {
	switch name {
	case "ping", "echo", "time", "publish", "spublish":
		return true
	}
	return false
}

// isScriptCall: the commands that run a script. Inside MULTI they run on
// the transaction's dataserver, at their place (dataserver/multi.go).
func isScriptCall(name string) bool {
	switch name {
	case "eval", "evalsha", "eval_ro", "evalsha_ro", "fcall", "fcall_ro":
		return true
	}
	return false
}

// queue adds a command to the transaction (MULTI is active).
//
// Refused here (README, "MULTI"): the proxy's other own commands and the
// keyless ones, which act on every node, on the connection or on the
// proxy (SELECT, KEYS, SCAN, DBSIZE, FLUSHDB, SCRIPT, FUNCTION, CLIENT
// ...), so that one bucket's master cannot run them atomically with the
// rest; and SUBSCRIBE and the like, which Redis 7 runs inside MULTI but
// answers with one EXEC element per channel under an array header that
// counts commands (a reply clients cannot read) before the connection
// turns subscriber.
func (tx *txState) queue(ss *session, r *request, args [][]byte) {
	name := r.spec.Name
	if !runsInProxy(name) && !isScriptCall(name) && (localHandlers[name] != nil || r.spec.Has(command.NoKey)) {
		tx.dirty = true
		r.setError("ERR " + name + " is not supported inside MULTI by this cluster")
		return
	}
	// The transaction runs on one bucket's master: a key of another
	// bucket is refused when queued, as Redis Cluster does, and EXEC
	// then answers EXECABORT.
	if keys := r.spec.KeyIndexes(args); len(keys) > 0 {
		first := tx.firstKey()
		if first == nil {
			first = args[keys[0]]
		}
		b := ss.bucketOf(first)
		for _, k := range keys {
			if ss.bucketOf(args[k]) != b {
				tx.dirty = true
				r.setError(crossSlot)
				return
			}
		}
	}
	c := make([][]byte, len(args))
	for i, a := range args {
		c[i] = append([]byte(nil), a...)
	}
	tx.cmds = append(tx.cmds, c)
	r.status("QUEUED")
}

// firstKey is the first key of the queued commands or the watch, or nil.
func (tx *txState) firstKey() []byte {
	for _, c := range tx.cmds {
		if spec := command.Lookup(c[0]); !spec.Has(command.NoKey) {
			if ks := spec.KeyIndexes(c); len(ks) > 0 {
				return c[ks[0]]
			}
		}
	}
	if len(tx.watched) > 0 {
		return tx.watched[0]
	}
	return nil
}

func cmdMulti(ss *session, r *request) {
	if ss.tx.active {
		r.setError("ERR MULTI calls can not be nested")
		return
	}
	ss.tx.active = true
	ss.tx.dirty = false
	ss.tx.cmds = ss.tx.cmds[:0]
	ss.info.multi.Store(0)
	r.ok()
}

func cmdDiscard(ss *session, r *request) {
	if !ss.tx.active {
		r.setError("ERR DISCARD without MULTI")
		return
	}
	ss.tx.reset()
	ss.info.multi.Store(-1)
	r.ok()
}

func cmdUnwatch(ss *session, r *request) {
	ss.tx.watched, ss.tx.vers = nil, nil
	r.ok()
}

func cmdWatch(ss *session, r *request) {
	if ss.tx.active {
		r.setError("ERR WATCH inside MULTI is not allowed")
		return
	}
	r.barrier = func(r *request) { ss.watch(r) }
}

func (ss *session) watch(r *request) {
	keys := r.args[1:]
	all := append(append([][]byte(nil), ss.tx.watched...), keys...)
	if !sameBucket(ss, all) {
		r.setError(crossSlot)
		return
	}
	args := append([][]byte{[]byte("TAIR.KEYVER")}, keys...)
	p := ss.part(r, args)
	p.bucket = ss.bucketOf(keys[0])
	ss.send(p)
	ss.finish(p)
	ss.account(p)
	for _, k := range keys {
		ss.tx.watched = append(ss.tx.watched, append([]byte(nil), k...))
	}
	vs, err := flatFields(p.reply)
	if err != nil || len(vs) != len(keys) {
		// No versions from the dataserver: the watch is not enforced.
		if ss.srv.watchWarned.CompareAndSwap(false, true) {
			ss.srv.log.Warn("WATCH is not enforced: the dataservers do not answer TAIR.KEYVER", "reply", string(p.reply))
		}
		ss.tx.watchOK = false
		ss.tx.vers = nil
		r.ok()
		return
	}
	if len(ss.tx.vers) == 0 && len(ss.tx.watched) == len(keys) {
		ss.tx.watchOK = true
	}
	for _, v := range vs {
		ss.tx.vers = append(ss.tx.vers, append([]byte(nil), v...))
	}
	r.ok()
}

// txScriptRoute is what a script call routes by when it names no key,
// as outside MULTI (proxy/script.go cmdEval): the body's sha for EVAL,
// the sha for EVALSHA, the function's name for FCALL.
func txScriptRoute(name string, c [][]byte) []byte {
	switch name {
	case "eval", "eval_ro":
		return []byte(luascript.Sha1Hex(c[1]))
	case "evalsha", "evalsha_ro":
		return bytes.ToLower(c[1])
	}
	return c[1]
}

func (ss *session) bucketOf(key []byte) route.BucketID {
	q := uint32(route.DefaultBuckets)
	if rt := ss.srv.r.load(); rt != nil {
		q = rt.t.Buckets
	}
	return route.BucketOf(key, q)
}

func sameBucket(ss *session, keys [][]byte) bool {
	if len(keys) == 0 {
		return true
	}
	b := ss.bucketOf(keys[0])
	for _, k := range keys[1:] {
		if ss.bucketOf(k) != b {
			return false
		}
	}
	return true
}

func cmdExec(ss *session, r *request) {
	if !ss.tx.active {
		r.setError("ERR EXEC without MULTI")
		return
	}
	if ss.tx.dirty {
		ss.tx.reset()
		ss.info.multi.Store(-1)
		r.setError("EXECABORT Transaction discarded because of previous errors.")
		return
	}
	r.barrier = func(r *request) { ss.exec(r) }
}

func (ss *session) exec(r *request) {
	tx := &ss.tx
	defer func() {
		tx.reset()
		ss.info.multi.Store(-1)
	}()
	// The keys of the commands the dataserver runs and of the watch
	// route the transaction; SPUBLISH's channel must share their bucket
	// too (as in Redis Cluster) but routes nothing.
	var keys, channels [][]byte
	var data []int
	var scriptRoute []byte // the first script's, for a transaction without keys
	for i, c := range tx.cmds {
		spec := command.Lookup(c[0])
		if spec.Has(command.NoKey) {
			continue
		}
		if runsInProxy(spec.Name) {
			for _, k := range spec.KeyIndexes(c) {
				channels = append(channels, c[k])
			}
			continue
		}
		for _, k := range spec.KeyIndexes(c) {
			keys = append(keys, c[k])
		}
		data = append(data, i)
		if isScriptCall(spec.Name) && scriptRoute == nil {
			scriptRoute = txScriptRoute(spec.Name, c)
		}
	}
	keys = append(keys, tx.watched...)
	if !sameBucket(ss, append(channels, keys...)) {
		r.setError(crossSlot)
		return
	}
	// A watch is checked on the dataserver even when no command goes
	// there (MULTIEXEC 0 WATCH ...): a transaction of PINGs and
	// PUBLISHes must not run when a watched key changed either.
	watchOnly := len(data) == 0 && tx.watchOK && len(tx.watched) > 0
	var sub []byte // the MULTIEXEC reply
	var subElems [][]byte
	if len(data) > 0 && len(keys) == 0 && scriptRoute == nil {
		// Data commands that name no key (ZDIFF 0 ...: each fails its
		// own way) and no watch: nothing to run atomically, and
		// MULTIEXEC needs a key to route by (keys[0] panicked here).
		// Each goes to any master, as outside MULTI.
		for _, i := range data {
			q := ss.part(r, tx.cmds[i])
			q.spec = command.Lookup(tx.cmds[i][0])
			ss.anyNode(q)
			subElems = append(subElems, q.reply)
		}
	} else if len(data) > 0 || watchOnly {
		args := [][]byte{[]byte("MULTIEXEC"), strconv.AppendInt(nil, int64(len(data)), 10)}
		for _, i := range data {
			c := tx.cmds[i]
			args = append(args, strconv.AppendInt(nil, int64(len(c)), 10))
			args = append(args, c...)
		}
		if tx.watchOK && len(tx.watched) > 0 {
			args = append(args, []byte("WATCH"), strconv.AppendInt(nil, int64(len(tx.watched)), 10))
			for i, k := range tx.watched {
				args = append(args, k, tx.vers[i])
			}
		}
		if scriptRoute != nil {
			// Scripts run off the dataserver's event loops: the
			// transaction goes as a script does, to its keys' bucket,
			// or with none to the bucket the first script would run on
			// alone. (Redis Cluster runs a keyless script of a
			// transaction on the node of the transaction's keys; with
			// no key anywhere, any node: here the script's own.)
			b := ss.bucketOf(scriptRoute)
			if len(keys) > 0 {
				b = ss.bucketOf(keys[0])
			}
			sub = ss.sendScript(r, b, args, true)
		} else {
			p := ss.part(r, args)
			p.bucket = ss.bucketOf(keys[0])
			p.write = true
			ss.send(p)
			ss.finish(p)
			ss.account(p)
			sub = p.reply
		}
		if len(sub) > 0 && (sub[0] == '-' || bytes.Equal(sub, []byte("*-1\r\n")) || bytes.Equal(sub, []byte("_\r\n"))) {
			r.raw(sub)
			return
		}
		var err error
		subElems, err = rawElements(sub)
		if err != nil || len(subElems) != len(data) {
			r.setError("ERR bad MULTIEXEC reply from dataserver")
			return
		}
	}
	// Splice the proxy's own replies (PING, ECHO, TIME, PUBLISH) in place.
	b := resp.AppendArray(r.reply[:0], len(tx.cmds))
	di := 0
	for i, c := range tx.cmds {
		if di < len(data) && data[di] == i {
			b = append(b, subElems[di]...)
			di++
			continue
		}
		q := ss.part(r, c)
		q.spec = command.Lookup(c[0])
		localHandlers[q.spec.Name](ss, q)
		b = append(b, q.reply...)
	}
	r.raw(b)
}

// Package exec runs Redis and Tair commands against an engines.Engine: it
// is where the command semantics live (argument parsing, Redis-exact
// replies and errors, Tair versions and expiry). The dataserver calls
// Executor.Exec for each command it owns; the proxy never executes.
//
// # Replication
//
// A write's effect must reach the bucket's slaves deterministically: each
// handler records the commands a slave replays (Ctx.Propagate), with
// relative expiries turned absolute and random choices made concrete, as
// Redis does for its replicas. A handler that records nothing for a
// successful write of a Write-flagged command gets its own arguments
// propagated unchanged (Exec does this), which is right for deterministic
// commands only.
package exec

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tairkv/tair/engines"
	"github.com/tairkv/tair/internal/command"
	"github.com/tairkv/tair/internal/route"
	"github.com/tairkv/tair/resp"
)

// Options configure an Executor.
type Options struct {
	// Buckets is Q: each key's bucket is route.BucketOf(key, Buckets).
	Buckets uint32
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// MaxValueSize is SPEC's value limit (default 1 MiB), checked by
	// commands that grow a value (APPEND, SETRANGE) before building it.
	MaxValueSize int
	// FieldExpiry, when set, is told about every TairHash a command
	// stored or deleted (tairhash_expire.go), on a master and on a
	// replica alike.
	FieldExpiry FieldExpiryFunc
}

// Handler runs one command. It appends exactly one reply to c.Out.
type Handler func(c *Ctx)

// registered is a command as Exec runs it: its handler and its spec from
// the shared command table, found together by one lookup.
type registered struct {
	h    Handler
	spec *command.Spec // nil: a handler without a spec, unknown to Exec
	// inspects: the command only inspects its keys, which it does not
	// touch (access.go).
	inspects bool
}

// commands maps lower-case names to their handlers and specs.
var commands = map[string]registered{}

// maxNameLen bounds command names, so that Exec can lower-case a name in
// a stack buffer; a longer argument cannot name a command.
const maxNameLen = 32

// Register installs the handler of a command (lower-case name); files of
// this package call it from init, one per command family. The spec is
// resolved here, once: the command table is complete by then, as its
// package is initialised before this one.
func Register(name string, h Handler) {
	name = strings.ToLower(name)
	if len(name) > maxNameLen {
		panic("exec: command name too long: " + name)
	}
	commands[name] = registered{h: h, spec: command.Lookup([]byte(name)), inspects: inspectOnly[name]}
}

// Supported reports whether the executor has a handler for name.
func Supported(name string) bool { _, ok := commands[strings.ToLower(name)]; return ok }

// lookup finds the command named by name, ignoring ASCII case, without
// allocating: the name is lower-cased into a stack buffer, and indexing a
// map with string(buf) does not copy. (Names are ASCII: a non-ASCII byte
// matches nothing, as with command.Lookup.)
func lookup(name []byte) (registered, bool) {
	var buf [maxNameLen]byte
	if len(name) > len(buf) {
		return registered{}, false
	}
	r, ok := commands[string(resp.AppendLower(buf[:0], name))]
	return r, ok
}

// Executor runs commands on one engine. Safe for concurrent use; commands
// on the same key are serialised by the caller (the dataserver holds a
// per-bucket lock around Exec and the replication append) or by the
// engine's atomic operations.
type Executor struct {
	eng  engines.Engine
	opts Options
}

// New returns an Executor over eng.
func New(eng engines.Engine, o Options) *Executor {
	if o.Buckets == 0 {
		o.Buckets = route.DefaultBuckets
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Executor{eng: eng, opts: o}
}

// Engine returns the engine.
func (x *Executor) Engine() engines.Engine { return x.eng }

// Exec runs args (args[0] is the command name) in area, replying in RESP
// proto (2 or 3). It appends the reply to out and returns it, with the
// commands slaves must replay (nil for reads and failed writes).
// replica is true when the command comes from the master's replication
// stream: handlers then skip checks that only the master makes, and
// nothing is propagated (nil).
func (x *Executor) Exec(area uint16, proto int, replica bool, args [][]byte, out []byte) ([]byte, [][][]byte) {
	return x.ExecRequest(Request{Area: area, Proto: proto, Replica: replica}, args, out)
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
	// Versions: on a replica, the key and version pairs of the versions
	// entry before the command (versions.go, Entry).
	Versions [][]byte
	// KeyVersion: on a replica, the version of the key the command names
	// first, from the short versions entry before it.
	KeyVersion []byte
}

// ExecRequest is Exec for the command of req.
func (x *Executor) ExecRequest(req Request, args [][]byte, out []byte) ([]byte, [][][]byte) {
	if len(args) == 0 {
		return resp.AppendError(out, "ERR empty command"), nil
	}
	r, ok := lookup(args[0])
	if !ok || r.spec == nil {
		return resp.AppendError(out, unknownCommand(args)), nil
	}
	spec := r.spec
	if !spec.ArityOK(len(args)) {
		return resp.AppendError(out, fmt.Sprintf("ERR wrong number of arguments for '%s' command", spec.Name)), nil
	}
	c := getCtx()
	c.X, c.Eng, c.Area, c.Proto, c.Replica, c.Args, c.Out, c.spec = x, x.eng, req.Area, req.Proto, req.Replica, args, out, spec
	c.noTouch = !r.touchesKeys(&req)
	c.vers.given = req.Versions
	if req.KeyVersion != nil && len(args) > 1 {
		c.vers.pair = [2][]byte{args[1], req.KeyVersion}
		c.vers.given = c.vers.pair[:]
	}
	start := len(out)
	r.h(c)
	out, prop := c.Out, c.prop
	switch {
	case spec.Has(command.Write) && !c.propagated && !c.noPropagate && !c.Replica && len(c.Out) > start && c.Out[start] != '-':
		// The command propagates itself, after the versions its stores
		// gave (withVersions copies the list: one allocation for both).
		self := [1][][]byte{args}
		if len(c.vers.stored) > 0 {
			prop = c.vers.withVersions(self[:], nil)
		} else {
			prop = append(prop, args)
		}
	case len(prop) > 0 && len(c.vers.stored) > 0:
		// The versions the stores gave go ahead of the commands.
		prop = c.vers.withVersions(prop, c.room)
	}
	putCtx(c)
	return out, prop
}

// Ctxs are pooled: one per command would be the executor's largest
// allocation. This is safe because a Ctx does not outlive its Exec call:
// handlers run synchronously (no goroutines), the UpdateFuncs and
// callbacks that capture a Ctx are only called by the engine during the
// call they are passed to, and no handler stores a Ctx anywhere. What Exec
// returns (the reply and the propagated commands) never points into the
// Ctx. Every field but the bound method values (which refer to the Ctx
// itself) is cleared before the Ctx is pooled (putCtx).
var ctxPool = sync.Pool{New: func() any { return new(Ctx) }}

func getCtx() *Ctx { return ctxPool.Get().(*Ctx) }

// putCtx clears c, keeping only its bound method values, and pools it.
func putCtx(c *Ctx) {
	stored := c.vers.stored
	clear(stored)
	*c = Ctx{bound: c.bound}
	c.vers.stored = stored[:0] // its array serves the next command
	ctxPool.Put(c)
}

func unknownCommand(args [][]byte) string {
	var b strings.Builder
	fmt.Fprintf(&b, "ERR unknown command '%s', with args beginning with: ", args[0])
	for _, a := range args[1:] {
		fmt.Fprintf(&b, "'%s' ", a)
	}
	return b.String()
}

// Ctx is one command's execution.
type Ctx struct {
	X       *Executor
	Eng     engines.Engine
	Area    uint16
	Proto   int
	Replica bool
	Args    [][]byte
	// Out is the reply buffer: append exactly one reply.
	Out []byte

	// now is the command's clock reading (see Now); hasNow says it is taken.
	now    time.Time
	hasNow bool

	spec        *command.Spec
	noTouch     bool // the command's keys are not touched (access.go)
	prop        [][][]byte
	room        *versioned1 // where Propagate put the one command of prop
	propagated  bool
	noPropagate bool

	// State of the write paths that allocate no closure: the engine takes
	// an UpdateFunc, and a closure over a command's locals is allocated
	// per call, so the hot paths use method values bound to the Ctx
	// (made once per pooled Ctx, see boundFuncs) that read their inputs
	// and write their results here.
	upd   engines.UpdateFunc // UpdateKey's fn while the engine runs it
	fx    fieldExpiryNote    // what applyVisible saw of a TairHash (tairhash_expire.go)
	vers  versionLog         // the versions its stores gave or take (versions.go)
	set   setState           // setGeneric's
	incr  incrState          // incrBy's
	bound boundFuncs
}

// boundFuncs are method values of their Ctx, made on first use and kept
// when the Ctx is pooled: binding a method value allocates.
type boundFuncs struct {
	visible, set, incr engines.UpdateFunc
}

// Now is the command's clock: one reading per command, as Redis, taken
// on first use (most commands need none, and reading the clock is not
// free).
func (c *Ctx) Now() time.Time {
	if !c.hasNow {
		c.now, c.hasNow = c.X.opts.Now(), true
	}
	return c.now
}

// Key returns the engine key for args[i] in this area.
func (c *Ctx) Key(i int) engines.Key {
	k := c.Args[i]
	return engines.Key{Bucket: uint32(route.BucketOf(k, c.X.opts.Buckets)), Area: c.Area, Key: k, Replica: c.Replica, NoTouch: c.noTouch,
		Versions: &c.vers}
}

// Propagate records a command slaves replay for this one (call it once per
// replayed command; deterministic arguments only). The arguments are
// copied (use propagateCmd to hand over a slice built for the purpose).
func (c *Ctx) Propagate(args ...[]byte) {
	c.propagated = true
	if c.Replica {
		// A slave's commands go no further: what it passes on (to a
		// move's destination) is its master's commands as they came.
		return
	}
	switch {
	case c.prop != nil || len(args) > 5: // a second command, or a long one
		c.prop = append(c.prop, slices.Clone(args))
	case len(args) <= 3:
		p := new(prop3)
		p.v.cmds[1] = p.args[:copy(p.args[:], args):len(args)]
		c.prop, c.room = p.v.cmds[1:2], &p.v
	default:
		p := new(prop5)
		p.v.cmds[1] = p.args[:copy(p.args[:], args):len(args)]
		c.prop, c.room = p.v.cmds[1:2], &p.v
	}
}

// prop3 and prop5 hold the usual propagation, one command of a few
// arguments, in one allocation (the list, the command and room for its
// short versions entry together) sized to the arguments.
type (
	prop3 struct {
		v    versioned1 // the list is v.cmds[1:2], or v.cmds[:] with the entry
		args [3][]byte
	}
	prop5 struct {
		v    versioned1
		args [5][]byte
	}
)

// propagateCmd is Propagate for a command slice built to be propagated
// (the caller does not touch it again): it is kept, not copied.
func (c *Ctx) propagateCmd(cmd [][]byte) {
	c.propagated = true
	if !c.Replica {
		c.prop = append(c.prop, cmd)
	}
}

// NoPropagate says this write changed nothing (e.g. SETNX on an existing key).
func (c *Ctx) NoPropagate() { c.noPropagate = true }

// Reply helpers: each appends one reply.

func (c *Ctx) OK()                 { c.Out = resp.AppendOK(c.Out) }
func (c *Ctx) Status(s string)     { c.Out = resp.AppendStatus(c.Out, s) }
func (c *Ctx) Int(n int64)         { c.Out = resp.AppendInt(c.Out, n) }
func (c *Ctx) Bulk(b []byte)       { c.Out = resp.AppendBulk(c.Out, b) }
func (c *Ctx) BulkString(s string) { c.Out = resp.AppendBulkString(c.Out, s) }
func (c *Ctx) Null()               { c.Out = resp.AppendNull(c.Out, c.Proto) }
func (c *Ctx) NullArray()          { c.Out = resp.AppendNullArray(c.Out, c.Proto) }
func (c *Ctx) Array(n int)         { c.Out = resp.AppendArray(c.Out, n) }
func (c *Ctx) Map(n int)           { c.Out = resp.AppendMap(c.Out, n, c.Proto) }
func (c *Ctx) Set(n int)           { c.Out = resp.AppendSet(c.Out, n, c.Proto) }
func (c *Ctx) Double(f float64)    { c.Out = resp.AppendDouble(c.Out, f, c.Proto) }
func (c *Ctx) Error(msg string)    { c.Out = resp.AppendError(c.Out, msg) }

// Err appends err as an error reply (Tair codes become their prefixes).
func (c *Ctx) Err(err error) { c.Out = resp.AppendErr(c.Out, err) }

// SyntaxErr appends Redis's "ERR syntax error".
func (c *Ctx) SyntaxErr() { c.Error("ERR syntax error") }

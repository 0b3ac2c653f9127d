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
	"strings"
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
}

// Handler runs one command. It appends exactly one reply to c.Out.
type Handler func(c *Ctx)

var handlers = map[string]Handler{}

// Register installs the handler of a command (lower-case name); files of
// this package call it from init, one per command family.
func Register(name string, h Handler) { handlers[strings.ToLower(name)] = h }

// Supported reports whether the executor has a handler for name.
func Supported(name string) bool { _, ok := handlers[strings.ToLower(name)]; return ok }

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
// stream: handlers then skip checks that only the master makes.
func (x *Executor) Exec(area uint16, proto int, replica bool, args [][]byte, out []byte) ([]byte, [][][]byte) {
	if len(args) == 0 {
		return resp.AppendError(out, "ERR empty command"), nil
	}
	name := strings.ToLower(string(args[0]))
	h, ok := handlers[name]
	spec := command.Lookup(args[0])
	if !ok || spec == nil {
		return resp.AppendError(out, unknownCommand(args)), nil
	}
	if !spec.ArityOK(len(args)) {
		return resp.AppendError(out, fmt.Sprintf("ERR wrong number of arguments for '%s' command", name)), nil
	}
	c := &Ctx{X: x, Eng: x.eng, Area: area, Proto: proto, Replica: replica, Args: args, Out: out, Now: x.opts.Now(), spec: spec}
	start := len(out)
	h(c)
	if spec.Has(command.Write) && !c.propagated && !c.noPropagate && len(c.Out) > start && c.Out[start] != '-' {
		c.prop = append(c.prop, args)
	}
	return c.Out, c.prop
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
	// Now is the command's clock reading (one per command, as Redis).
	Now time.Time

	spec        *command.Spec
	prop        [][][]byte
	propagated  bool
	noPropagate bool
}

// Key returns the engine key for args[i] in this area.
func (c *Ctx) Key(i int) engines.Key {
	k := c.Args[i]
	return engines.Key{Bucket: route.BucketOf(k, c.X.opts.Buckets), Area: c.Area, Key: k}
}

// Propagate records a command slaves replay for this one (call it once per
// replayed command; deterministic arguments only).
func (c *Ctx) Propagate(args ...[]byte) {
	c.propagated = true
	c.prop = append(c.prop, args)
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

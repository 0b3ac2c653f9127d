// Package luascript is the Lua environment of EVAL and FCALL as Redis 7
// has it, on github.com/yuin/gopher-lua (Lua 5.1, as Redis): the
// sandbox (no os, io, loadfile, dofile, require; globals and library
// tables read-only; reading a nonexistent global is an error), the redis
// library (call, pcall, error_reply, status_reply, sha1hex, log,
// setresp, set_repl ...), Redis's conversions between RESP replies and
// Lua values both ways, and the libraries Redis bundles (cjson,
// cmsgpack, bit, struct), written in Go.
//
// The package knows nothing of the cluster: a script's commands go to a
// Caller, which answers each with its RESP reply (its own refusals, such
// as a key of another bucket, are error replies too).
package luascript

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/parse"

	"github.com/tairkv/tair/internal/command"
)

// Caller runs the commands a script calls.
type Caller interface {
	// Call runs args and returns its RESP reply in protocol proto (2 or
	// 3, the script's redis.setresp). A refusal is an error reply.
	Call(spec *command.Spec, args [][]byte, proto int) []byte
}

// Script is a compiled script body.
type Script struct {
	Sha   string
	Body  []byte
	proto *lua.FunctionProto
}

// Sha1Hex is the lower-case hex SHA1 of b (a script's name).
func Sha1Hex(b []byte) string {
	h := sha1.Sum(b)
	return hex.EncodeToString(h[:])
}

// chunkName is the name Redis gives a script's chunk.
const chunkName = "user_script"

// Compile parses and compiles body. The error is the reply's text
// ("Error compiling script (new function): ...", without "ERR ").
func Compile(body []byte) (*Script, error) {
	p, err := compile(body, chunkName)
	if err != nil {
		return nil, fmt.Errorf("Error compiling script (new function): %s", err)
	}
	// The chunk is a vararg function, so Lua 5.1's compatibility would
	// build it an "arg" table on every run; a chunk (unlike a function
	// declared in it) has no local of that name to see it, in Redis as
	// here, so the table is never made.
	p.IsVarArg &^= lua.VarArgNeedsArg
	return &Script{Sha: Sha1Hex(body), Body: body, proto: p}, nil
}

func compile(body []byte, name string) (p *lua.FunctionProto, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s: %v", name, r)
		}
	}()
	chunk, err := parse.Parse(strings.NewReader(string(body)), name)
	if err != nil {
		return nil, errors.New(compileMessage(err, body, name))
	}
	return lua.Compile(chunk, name)
}

// compileMessage puts gopher-lua's parse error in Lua's shape,
// "user_script:<line>: unexpected symbol near '<token>'" (the wording of
// the cause stays gopher-lua's).
func compileMessage(err error, body []byte, name string) string {
	var pe *parse.Error
	if !errors.As(err, &pe) {
		return name + ": " + err.Error()
	}
	msg := strings.TrimSpace(pe.Message)
	if msg == "syntax error" {
		msg = "unexpected symbol"
	}
	line, near := pe.Pos.Line, pe.Token
	if line <= 0 || near == "" || near == "EOF" {
		line, near = strings.Count(string(body), "\n")+1, "<eof>"
	}
	return fmt.Sprintf("%s:%d: %s near '%s'", name, line, msg, near)
}

// Env is one node's Lua environment: the state shared across scripts
// (math.random's generator, the log).
type Env struct {
	Log *slog.Logger
	mu  sync.Mutex
	rnd rand48
	// states are set-up Lua states a script ended cleanly in, reused:
	// building one (libraries, read-only proxies) costs far more than a
	// short script. Nothing a script does survives in one: globals and
	// library tables refuse writes (the string metatable too), KEYS and
	// ARGV are replaced, and a state that saw an error is dropped.
	states sync.Pool
}

// NewEnv returns an environment whose math.random starts from Redis's
// seed.
func NewEnv(log *slog.Logger) *Env {
	if log == nil {
		log = slog.Default()
	}
	e := &Env{Log: log}
	e.rnd.seed(0)
	return e
}

// Run is one script's execution.
type Run struct {
	Keys, Args [][]byte
	// Proto is the client's protocol (2 or 3): the reply's.
	Proto  int
	Caller Caller
	// ReadOnly refuses writes (EVAL_RO, FCALL_RO, no-writes functions).
	ReadOnly bool
	// Ctx stops the script (SCRIPT KILL, FUNCTION KILL).
	Ctx context.Context
	// Name is the name error replies give ("script: <name>"): the sha
	// for EVAL, the function's name for FCALL.
	Name string
}

// luaLimits bound what a script can take of the process: the call
// depth (a stack overflow is an error) and the value stack.
const (
	callStackSize   = 200
	registrySize    = 1024 * 4
	registryMaxSize = 1024 * 1024
)

// state is one Lua state set up as Redis's, with the run it serves.
type state struct {
	L     *lua.LState
	env   *Env
	run   *Run
	resp  int // the script's protocol for redis.call (setresp)
	ro    map[*lua.LTable]bool
	null  *lua.LUserData // cjson.null
	guard *lua.LTable
	chunk string // the chunk's name in error positions
	// loading: a library's code runs at FUNCTION LOAD (no redis.call).
	loading    bool
	onRegister lua.LGFunction
	emptyView  lua.LValue // what getmetatable gives of a read-only table
}

// newState opens the libraries Redis gives scripts and protects them.
func (e *Env) newState(run *Run) *state {
	L := lua.NewState(lua.Options{SkipOpenLibs: true, CallStackSize: callStackSize,
		RegistrySize: registrySize, RegistryMaxSize: registryMaxSize, MinimizeStackMemory: true})
	st := &state{L: L, env: e, run: run, resp: 2, ro: map[*lua.LTable]bool{}, chunk: chunkName}
	for _, lib := range []struct {
		name string
		f    lua.LGFunction
	}{{lua.BaseLibName, lua.OpenBase}, {lua.TabLibName, lua.OpenTable}, {lua.StringLibName, lua.OpenString},
		{lua.MathLibName, lua.OpenMath}, {lua.CoroutineLibName, lua.OpenCoroutine}} {
		L.Push(L.NewFunction(lib.f))
		L.Push(lua.LString(lib.name))
		L.Call(1, 0)
	}
	g := L.G.Global
	for _, n := range []string{"print", "dofile", "loadfile", "getfenv", "setfenv", "newproxy", "module",
		"require", "_printregs", "_GOPHER_LUA_VERSION", "package", "channel"} {
		g.RawSetString(n, lua.LNil)
	}
	g.RawSetString("gcinfo", L.NewFunction(func(L *lua.LState) int { L.Push(lua.LNumber(0)); return 1 }))
	g.RawSetString("rawset", L.NewFunction(st.rawset))
	g.RawSetString("setmetatable", L.NewFunction(st.setmetatable))
	g.RawSetString("tostring", L.NewFunction(luaToString))
	g.RawSetString("tonumber", L.NewFunction(luaToNumber))
	g.RawSetString("error", L.NewFunction(st.luaError))
	g.RawSetString("pcall", L.NewFunction(st.pcall))
	g.RawSetString("unpack", L.NewFunction(luaUnpack))
	if t, ok := g.RawGetString("string").(*lua.LTable); ok {
		t.RawSetString("rep", L.NewFunction(stringRep))
	}
	if t, ok := g.RawGetString("math").(*lua.LTable); ok {
		t.RawSetString("random", L.NewFunction(st.mathRandom))
		t.RawSetString("randomseed", L.NewFunction(st.mathRandomSeed))
	}
	if t, ok := g.RawGetString("table").(*lua.LTable); ok {
		t.RawSetString("getn", L.NewFunction(func(L *lua.LState) int {
			L.Push(lua.LNumber(L.CheckTable(1).Len()))
			return 1
		}))
	}
	g.RawSetString("redis", st.redisLib())
	g.RawSetString("cjson", st.cjsonLib())
	g.RawSetString("cmsgpack", st.msgpackLib())
	g.RawSetString("bit", st.bitLib())
	g.RawSetString("struct", st.structLib())
	// Every library table read-only: the script sees proxies.
	for _, n := range []string{"string", "table", "math", "coroutine", "redis", "cjson", "cmsgpack", "bit", "struct"} {
		if t, ok := g.RawGetString(n).(*lua.LTable); ok {
			g.RawSetString(n, st.readOnly(t, false))
		}
	}
	// The strings' metatable: getmetatable('') gives a read-only view
	// whose __index is the read-only string library.
	if smt, ok := L.GetMetatable(lua.LString("")).(*lua.LTable); ok {
		if sp, ok := g.RawGetString("string").(*lua.LTable); ok {
			smt.RawSetString("__index", sp)
			view := L.NewTable()
			view.RawSetString("__index", sp)
			smt.RawSetString("__metatable", st.readOnly(view, false))
		}
	}
	st.guard = st.readOnly(g, true)
	g.RawSetString("_G", st.guard)
	L.Env = st.guard
	return st
}

// readOnly returns a proxy of t that refuses writes; with strict,
// reading a missing name is an error (the globals).
func (st *state) readOnly(t *lua.LTable, strict bool) *lua.LTable {
	L := st.L
	p := L.NewTable()
	mt := L.NewTable()
	mt.RawSetString("__index", t)
	if strict {
		// A name t lacks is an error, from t's own metatable: a name it
		// has is then found table to table, with no Go function called
		// (and no key boxed) per global a script reads.
		missing := L.NewTable()
		missing.RawSetString("__index", L.NewFunction(func(L *lua.LState) int {
			L.RaiseError("Script attempted to access nonexistent global variable '%s'", lua.LVAsString(L.Get(2)))
			return 0
		}))
		L.SetMetatable(t, missing)
	}
	mt.RawSetString("__newindex", L.NewFunction(func(L *lua.LState) int {
		L.RaiseError("Attempt to modify a readonly table")
		return 0
	}))
	if st.emptyView == nil {
		st.emptyView = lua.LFalse
		st.emptyView = st.readOnly(L.NewTable(), false)
	}
	mt.RawSetString("__metatable", st.emptyView)
	L.SetMetatable(p, mt)
	st.ro[p] = true
	return p
}

func (st *state) rawset(L *lua.LState) int {
	t := L.CheckTable(1)
	if st.ro[t] {
		L.Error(lua.LString("Attempt to modify a readonly table"), 0)
	}
	k := L.CheckAny(2)
	if k == lua.LNil {
		L.ArgError(2, "table index is nil")
	}
	t.RawSet(k, L.CheckAny(3))
	L.Push(t)
	return 1
}

func (st *state) setmetatable(L *lua.LState) int {
	if t, ok := L.Get(1).(*lua.LTable); ok && st.ro[t] {
		L.Error(lua.LString("Attempt to modify a readonly table"), 0)
	}
	obj := L.CheckTable(1)
	mt := L.Get(2)
	if m, ok := mt.(*lua.LTable); !ok && mt != lua.LNil {
		L.ArgError(2, "nil or table expected")
	} else if ok && st.ro[m] {
		L.ArgError(2, "nil or table expected")
	}
	if cur := L.GetMetaField(obj, "__metatable"); cur != lua.LNil {
		L.RaiseError("cannot change a protected metatable")
	}
	L.SetMetatable(obj, mt)
	L.SetTop(1)
	return 1
}

// maxStringRep bounds string.rep (a reply cannot exceed 512 MB anyway):
// gopher-lua would try to allocate whatever a script asks.
const maxStringRep = 512 << 20

func stringRep(L *lua.LState) int {
	s := L.CheckString(1)
	n := L.CheckInt(2)
	if n <= 0 || len(s) == 0 {
		L.Push(lua.LString(""))
		return 1
	}
	if int64(len(s))*int64(n) > maxStringRep {
		L.RaiseError("not enough memory")
	}
	L.Push(lua.LString(strings.Repeat(s, n)))
	return 1
}

// luaToString is Lua 5.1's tostring: numbers as "%.14g".
func luaToString(L *lua.LState) int {
	v := L.CheckAny(1)
	if n, ok := v.(lua.LNumber); ok {
		L.Push(lua.LString(fmtNumber(float64(n))))
		return 1
	}
	if mt := L.GetMetaField(v, "__tostring"); mt != lua.LNil {
		L.Push(mt)
		L.Push(v)
		L.Call(1, 1)
		return 1
	}
	switch x := v.(type) {
	case lua.LString:
		L.Push(x)
	case *lua.LNilType:
		L.Push(lua.LString("nil"))
	case lua.LBool:
		L.Push(lua.LString(x.String()))
	case *lua.LTable:
		L.Push(lua.LString(fmt.Sprintf("table: %p", x)))
	case *lua.LFunction:
		L.Push(lua.LString(fmt.Sprintf("function: %p", x)))
	default:
		L.Push(lua.LString(v.String()))
	}
	return 1
}

// fmtNumber formats n as C's "%.14g" (lua_Number to string).
func fmtNumber(n float64) string {
	switch {
	case n != n:
		return "nan"
	case n > 1.7976931348623157e308:
		return "inf"
	case n < -1.7976931348623157e308:
		return "-inf"
	}
	return strconv.FormatFloat(n, 'g', 14, 64)
}

// rand48 is Redis's redisLrand48 (rand.c): the 48-bit generator
// math.random uses, seeded with 0 at start, so scripts get the same
// sequence on every node.
type rand48 struct{ x uint64 }

const randMax = 1<<31 - 1

func (r *rand48) seed(s int32) { r.x = (uint64(uint32(s))<<16 | 0x330e) & (1<<48 - 1) }

func (r *rand48) next() int32 {
	r.x = (0x5deece66d*r.x + 0xb) & (1<<48 - 1)
	return int32(r.x >> 17)
}

func (st *state) mathRandom(L *lua.LState) int {
	st.env.mu.Lock()
	v := st.env.rnd.next()
	st.env.mu.Unlock()
	r := float64(v%randMax) / float64(randMax)
	switch L.GetTop() {
	case 0:
		L.Push(lua.LNumber(r))
	case 1:
		u := L.CheckInt(1)
		if 1 > u {
			argError(L, 1, "random", "interval is empty")
		}
		L.Push(lua.LNumber(float64(int64(r*float64(u))) + 1))
	case 2:
		l, u := L.CheckInt(1), L.CheckInt(2)
		if l > u {
			argError(L, 2, "random", "interval is empty")
		}
		L.Push(lua.LNumber(float64(int64(r*float64(u-l+1))) + float64(l)))
	default:
		L.RaiseError("wrong number of arguments")
	}
	return 1
}

func (st *state) mathRandomSeed(L *lua.LState) int {
	st.env.mu.Lock()
	st.env.rnd.seed(int32(L.CheckInt(1)))
	st.env.mu.Unlock()
	return 0
}

// getState is a pooled state, or a new one, for run.
func (e *Env) getState(run *Run) *state {
	st, _ := e.states.Get().(*state)
	if st == nil {
		return e.newState(run)
	}
	st.run, st.resp, st.chunk = run, 2, chunkName
	return st
}

// putState pools st when its script ended cleanly, else closes it.
func (e *Env) putState(st *state, clean bool) {
	st.L.RemoveContext()
	st.run, st.onRegister = nil, nil
	if !clean || st.loading || st.L.GetTop() != 0 {
		st.L.Close()
		return
	}
	e.states.Put(st)
}

// Run runs a compiled script with its keys and arguments and appends
// its reply (or the error reply) to out.
func (e *Env) Run(out []byte, s *Script, run *Run) []byte {
	st := e.getState(run)
	if run.Ctx != nil {
		st.L.SetContext(run.Ctx)
	}
	L := st.L
	g := L.G.Global
	g.RawSetString("KEYS", strTable(L, run.Keys))
	g.RawSetString("ARGV", strTable(L, run.Args))
	fn := L.NewFunctionFromProto(s.proto)
	fn.Env = st.guard
	out, clean := st.call(out, fn, 0)
	e.putState(st, clean)
	return out
}

func strTable(L *lua.LState, l [][]byte) *lua.LTable {
	t := L.CreateTable(len(l), 0)
	for i, a := range l {
		t.RawSetInt(i+1, lua.LString(a))
	}
	return t
}

// Killed is the text of a script stopped by SCRIPT KILL.
const Killed = "ERR Script killed by user with SCRIPT KILL..."

// call runs fn with nargs arguments on the stack and appends the reply
// of its first result; clean is false when the script failed.
func (st *state) call(out []byte, fn *lua.LFunction, nargs int) (_ []byte, clean bool) {
	L := st.L
	L.Insert(fn, L.GetTop()-nargs+1)
	err := L.PCall(nargs, 1, nil)
	if err != nil {
		if st.run.Ctx != nil && st.run.Ctx.Err() != nil {
			return appendError(out, Killed+st.trailer(err)), false
		}
		return appendError(out, st.errorText(err)), false
	}
	v := L.Get(-1)
	L.Pop(1)
	return st.toRESP(out, v, 0), true
}

// errorText is the error reply of a script that failed: Redis's text,
// with " script: <name>, on @user_script:<line>." when the error came
// from the script.
func (st *state) errorText(err error) string {
	ae, ok := err.(*lua.ApiError)
	if !ok {
		return "ERR " + err.Error()
	}
	var msg string
	if ae.Type == lua.ApiErrorPanic && strings.Contains(ae.Error(), "callstack overflow") {
		// Lua's "stack overflow", at the line the recursion was.
		tr := st.trailer(err)
		line := tr[strings.LastIndexByte(tr, ':')+1 : len(tr)-1]
		return "ERR " + st.chunk + ":" + line + ": stack overflow" + tr
	}
	switch o := ae.Object.(type) {
	case *lua.LTable:
		if e, ok := o.RawGetString("err").(lua.LString); ok {
			msg = string(e)
		} else {
			msg = "ERR " + luaString(o)
		}
	case lua.LString:
		msg = "ERR " + string(o)
	case lua.LNumber:
		msg = "ERR " + fmtNumber(float64(o))
	default:
		if ae.Type == lua.ApiErrorPanic {
			msg = "ERR " + ae.Error()
		} else {
			msg = "ERR " + luaString(ae.Object)
		}
	}
	return msg + st.trailer(err)
}

// trailer is " script: <name>, on @user_script:<line>." from the error's
// stack trace: the innermost Lua frame.
func (st *state) trailer(err error) string {
	ae, ok := err.(*lua.ApiError)
	if !ok {
		return ""
	}
	line := ""
	for _, l := range strings.Split(ae.StackTrace, "\n") {
		l = strings.TrimSpace(l)
		if rest, ok := strings.CutPrefix(l, st.chunk+":"); ok {
			if i := strings.IndexByte(rest, ':'); i > 0 {
				line = rest[:i]
				break
			}
		}
	}
	if line == "" {
		// The error's own position ("user_script:3: ...").
		if s, ok := ae.Object.(lua.LString); ok {
			if rest, ok := strings.CutPrefix(string(s), st.chunk+":"); ok {
				if i := strings.IndexByte(rest, ':'); i > 0 {
					line = rest[:i]
				}
			}
		}
	}
	if line == "" {
		line = "0"
	}
	return " script: " + st.run.Name + ", on @" + st.chunk + ":" + line + "."
}

func luaString(v lua.LValue) string {
	if n, ok := v.(lua.LNumber); ok {
		return fmtNumber(float64(n))
	}
	return v.String()
}

// luaToNumber is Lua 5.1's tonumber (gopher-lua's refuses "1e2").
func luaToNumber(L *lua.LState) int {
	v := L.CheckAny(1)
	base := 10
	if L.GetTop() >= 2 && L.Get(2) != lua.LNil {
		base = int(checkNumber(L, 2, "tonumber"))
	}
	if base == 10 {
		switch x := v.(type) {
		case lua.LNumber:
			L.Push(x)
		case lua.LString:
			if f, err := parseLuaNumber(string(x)); err == nil {
				L.Push(lua.LNumber(f))
			} else {
				L.Push(lua.LNil)
			}
		default:
			L.Push(lua.LNil)
		}
		return 1
	}
	if base < 2 || base > 36 {
		argError(L, 2, "tonumber", "base out of range")
	}
	s := strings.ToLower(strings.TrimSpace(checkString(L, 1, "tonumber")))
	n, err := strconv.ParseInt(s, base, 64)
	if err != nil {
		L.Push(lua.LNil)
	} else {
		L.Push(lua.LNumber(n))
	}
	return 1
}

// luaError is Lua 5.1's error: a string (or number) message gets the
// position of the function at level (1: the caller), unless that is a
// Go function.
func (st *state) luaError(L *lua.LState) int {
	v := L.Get(1)
	level := 1
	if L.GetTop() >= 2 {
		level = int(checkNumber(L, 2, "error"))
	}
	switch v.(type) {
	case lua.LString, lua.LNumber:
		if level > 0 {
			if dbg, ok := L.GetStack(level); ok {
				if _, err := L.GetInfo("Sl", dbg, lua.LNil); err == nil && dbg.CurrentLine > 0 {
					v = lua.LString(fmt.Sprintf("%s:%d: %s", st.chunk, dbg.CurrentLine, luaString(v)))
				}
			}
		}
	}
	L.Error(v, 0)
	return 0
}

// pcall is Redis's (luaRedisPcall): an error table becomes its err
// text. A killed script's error is not caught.
func (st *state) pcall(L *lua.LState) int {
	L.CheckAny(1)
	nargs := L.GetTop() - 1
	err := L.PCall(nargs, lua.MultRet, nil)
	if err == nil {
		L.Insert(lua.LTrue, 1)
		return L.GetTop()
	}
	var obj lua.LValue = lua.LString(err.Error())
	if ae, ok := err.(*lua.ApiError); ok {
		obj = ae.Object
	}
	if st.run.Ctx != nil && st.run.Ctx.Err() != nil {
		L.Error(obj, 0)
	}
	if t, ok := obj.(*lua.LTable); ok {
		if e, ok := t.RawGetString("err").(lua.LString); ok {
			obj = e
		}
	}
	L.Push(lua.LFalse)
	L.Push(obj)
	return 2
}

// maxResults is Lua 5.1's LUAI_MAXCSTACK: how many values a function
// may push (unpack of a huge range fails instead of filling memory).
const maxResults = 8000

func luaUnpack(L *lua.LState) int {
	t := L.CheckTable(1)
	i := 1
	if L.GetTop() >= 2 && L.Get(2) != lua.LNil {
		i = int(checkNumber(L, 2, "unpack"))
	}
	e := t.Len()
	if L.GetTop() >= 3 && L.Get(3) != lua.LNil {
		e = int(checkNumber(L, 3, "unpack"))
	}
	if i > e {
		return 0
	}
	n := e - i + 1
	if n <= 0 || n > maxResults {
		L.RaiseError("too many results to unpack")
	}
	for j := i; j <= e; j++ {
		L.Push(t.RawGetInt(j))
	}
	return n
}

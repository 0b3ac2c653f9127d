package luascript

import (
	"log/slog"
	"strconv"
	"strings"
	"time"

	lua "github.com/yuin/gopher-lua"

	"github.com/tairkv/tair/resp"
)

// Version is the Redis version scripts see (redis.REDIS_VERSION).
const Version = "7.0.15"

// versionNum is Version as 0x00MMmmpp.
const versionNum = 7<<16 | 0<<8 | 15

func (st *state) redisLib() *lua.LTable {
	L := st.L
	t := L.NewTable()
	fns := map[string]lua.LGFunction{
		"call":               func(L *lua.LState) int { return st.redisCall(L, true) },
		"pcall":              func(L *lua.LState) int { return st.redisCall(L, false) },
		"error_reply":        st.errorReply,
		"status_reply":       st.statusReply,
		"sha1hex":            sha1hexLua,
		"log":                st.log,
		"setresp":            st.setResp,
		"set_repl":           setRepl,
		"replicate_commands": func(L *lua.LState) int { L.Push(lua.LTrue); return 1 },
		"breakpoint":         func(L *lua.LState) int { L.Push(lua.LFalse); return 1 },
		"debug":              func(L *lua.LState) int { return 0 },
		"acl_check_cmd":      st.aclCheck,
		"register_function": func(L *lua.LState) int {
			if st.onRegister == nil {
				L.RaiseError("redis.register_function can only be called on FUNCTION LOAD command")
			}
			return st.onRegister(L)
		},
	}
	for n, f := range fns {
		t.RawSetString(n, L.NewFunction(f))
	}
	for n, v := range map[string]int{"LOG_DEBUG": 0, "LOG_VERBOSE": 1, "LOG_NOTICE": 2, "LOG_WARNING": 3,
		"REPL_NONE": 0, "REPL_AOF": 1, "REPL_SLAVE": 2, "REPL_REPLICA": 2, "REPL_ALL": 3} {
		t.RawSetString(n, lua.LNumber(v))
	}
	t.RawSetString("REDIS_VERSION", lua.LString(Version))
	t.RawSetString("REDIS_VERSION_NUM", lua.LNumber(versionNum))
	return t
}

// raise raises a Redis error table built from a "-CODE msg" or "msg"
// text (luaPushErrorBuff).
func (st *state) raise(L *lua.LState, text string) {
	L.Error(errorTable(L, text), 1)
}

// errorTable is Redis's error table for text: {err="CODE msg"}, with
// "ERR" when text names no code ("-msg" with no space, or no "-").
func errorTable(L *lua.LState, text string) *lua.LTable {
	var code, msg string
	if strings.HasPrefix(text, "-") {
		if i := strings.IndexByte(text, ' '); i < 0 {
			code, msg = "ERR", text[1:]
		} else {
			code, msg = text[1:i], text[i+1:]
		}
	} else {
		code, msg = "ERR", text
	}
	msg = strings.Trim(msg, "\r\n")
	t := L.CreateTable(0, 1)
	t.RawSetString("err", lua.LString(code+" "+msg))
	return t
}

// callArgs converts redis.call's arguments: strings, and numbers as Lua
// prints them.
func callArgs(L *lua.LState) ([][]byte, string) {
	n := L.GetTop()
	if n == 0 {
		return nil, "Please specify at least one argument for this redis lib call"
	}
	args := make([][]byte, n)
	for i := 1; i <= n; i++ {
		switch v := L.Get(i).(type) {
		case lua.LString:
			args[i-1] = []byte(v)
		case lua.LNumber:
			args[i-1] = strconv.AppendFloat(nil, float64(v), 'g', 17, 64)
		default:
			return nil, "Lua redis lib command arguments must be strings or integers"
		}
	}
	return args, ""
}

func (st *state) redisCall(L *lua.LState, raise bool) int {
	if st.loading {
		L.RaiseError("Script attempted to access nonexistent global variable 'call'")
	}
	args, bad := callArgs(L)
	if bad != "" {
		if raise {
			st.raise(L, bad)
		}
		L.Push(errorTable(L, bad))
		return 1
	}
	spec, refused := CheckCall(args, st.run.ReadOnly)
	if refused != "" {
		if raise {
			st.raise(L, "-"+refused)
		}
		L.Push(errorTable(L, "-"+refused))
		return 1
	}
	reply, ok := Builtin(args)
	if !ok {
		reply = st.run.Caller.Call(spec, args, st.resp)
	}
	v, _, err := st.fromRESP(L, reply)
	if err != nil {
		L.RaiseError("bad reply from the server: %v", err)
	}
	if raise && len(reply) > 0 && reply[0] == '-' {
		L.Error(v, 1)
	}
	L.Push(v)
	return 1
}

func (st *state) errorReply(L *lua.LState) int {
	if L.GetTop() != 1 || L.Get(1).Type() != lua.LTString {
		L.Error(errorTable(L, "wrong number or type of arguments"), 1)
	}
	s := L.CheckString(1)
	if !strings.HasPrefix(s, "-") {
		s = "-" + s
	}
	L.Push(errorTable(L, s))
	return 1
}

func (st *state) statusReply(L *lua.LState) int {
	if L.GetTop() != 1 || L.Get(1).Type() != lua.LTString {
		L.Error(errorTable(L, "wrong number or type of arguments"), 1)
	}
	t := L.CreateTable(0, 1)
	t.RawSetString("ok", L.Get(1))
	L.Push(t)
	return 1
}

func sha1hexLua(L *lua.LState) int {
	if L.GetTop() != 1 {
		L.Error(errorTable(L, "wrong number of arguments"), 1)
	}
	var s string
	switch v := L.Get(1).(type) {
	case lua.LString:
		s = string(v)
	case lua.LNumber:
		s = fmtNumber(float64(v))
	}
	L.Push(lua.LString(Sha1Hex([]byte(s))))
	return 1
}

func (st *state) log(L *lua.LState) int {
	n := L.GetTop()
	if n < 2 {
		L.Error(errorTable(L, "redis.log() requires two arguments or more."), 1)
	}
	lv, ok := L.Get(1).(lua.LNumber)
	if !ok {
		L.Error(errorTable(L, "First argument must be a number (log level)."), 1)
	}
	if lv < 0 || lv > 3 {
		L.Error(errorTable(L, "Invalid debug level."), 1)
	}
	parts := make([]string, 0, n-1)
	for i := 2; i <= n; i++ {
		switch v := L.Get(i).(type) {
		case lua.LString:
			parts = append(parts, string(v))
		case lua.LNumber:
			parts = append(parts, fmtNumber(float64(v)))
		}
	}
	level := [...]slog.Level{slog.LevelDebug, slog.LevelDebug, slog.LevelInfo, slog.LevelWarn}[int(lv)]
	st.env.Log.Log(nil, level, strings.Join(parts, " "), "script", st.run.Name)
	return 0
}

func (st *state) setResp(L *lua.LState) int {
	if L.GetTop() != 1 {
		L.Error(errorTable(L, "redis.setresp() requires one argument."), 1)
	}
	n, ok := L.Get(1).(lua.LNumber)
	if !ok || (n != 2 && n != 3) {
		L.Error(errorTable(L, "RESP version must be 2 or 3."), 1)
	}
	st.resp = int(n)
	return 0
}

// setRepl accepts the flags and does nothing: Redis 7 replicates a
// script's effects, always.
func setRepl(L *lua.LState) int {
	if L.GetTop() != 1 {
		L.Error(errorTable(L, "redis.set_repl() requires one argument."), 1)
	}
	n, ok := L.Get(1).(lua.LNumber)
	if !ok || n < 0 || n > 3 || float64(n) != float64(int(n)) {
		L.Error(errorTable(L, "Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE."), 1)
	}
	return 0
}

// aclCheck: every command is allowed (the proxy authenticates clients
// as a whole; there are no ACL users).
func (st *state) aclCheck(L *lua.LState) int {
	if _, bad := callArgs(L); bad != "" {
		L.Error(errorTable(L, bad), 1)
	}
	L.Push(lua.LTrue)
	return 1
}

// Builtin answers the commands a dataserver serves outside its executor
// (PING, ECHO, TIME) as Redis answers them in a script.
func Builtin(args [][]byte) ([]byte, bool) {
	switch strings.ToLower(string(args[0])) {
	case "ping":
		switch len(args) {
		case 1:
			return []byte("+PONG\r\n"), true
		case 2:
			return resp.AppendBulk(nil, args[1]), true
		}
		// PING's arity (-1) lets more through: its own check refuses them
		return resp.AppendError(nil, "ERR wrong number of arguments for 'ping' command"), true
	case "echo":
		return resp.AppendBulk(nil, args[1]), true
	case "time":
		now := time.Now()
		out := resp.AppendArray(nil, 2)
		out = resp.AppendBulkString(out, strconv.FormatInt(now.Unix(), 10))
		return resp.AppendBulkString(out, strconv.FormatInt(int64(now.Nanosecond()/1000), 10)), true
	}
	return nil, false
}

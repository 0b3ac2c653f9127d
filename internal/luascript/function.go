package luascript

import (
	"errors"
	"fmt"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// Redis 7 functions: a library's code starts with "#!lua name=<lib>"
// and registers its functions with redis.register_function(name,
// callback) or redis.register_function{function_name=..., callback=...,
// flags={...}, description=...}. LoadLibrary runs the code once to learn
// its functions (with no redis.call: Redis runs it at load time); Call
// runs it again in a fresh state and calls the function with its keys
// and arguments.

// Library is a loaded function library.
type Library struct {
	Name      string
	Code      []byte
	Functions []*Function
	proto     *lua.FunctionProto
}

// Function is one registered function.
type Function struct {
	Name        string
	Description string // "" when none
	Flags       []string
	NoWrites    bool
	Lib         *Library
}

const functionChunk = "user_function"

var functionFlags = map[string]bool{"no-writes": true, "allow-oom": true, "allow-stale": true, "no-cluster": true, "allow-cross-slot-keys": true}

func validName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// LibraryName reads the library's name from code's metadata line,
// checked as Redis checks it before it looks for a library of that name
// (and so before the code is compiled and run).
func LibraryName(code []byte) (string, error) {
	s := string(code)
	if !strings.HasPrefix(s, "#!") {
		return "", errors.New("ERR Missing library metadata")
	}
	first, _, _ := strings.Cut(s, "\n")
	fields := strings.Fields(first[2:])
	if len(fields) == 0 {
		return "", errors.New("ERR Missing library metadata")
	}
	if !strings.EqualFold(fields[0], "lua") {
		return "", fmt.Errorf("ERR Engine '%s' not found", fields[0])
	}
	var name string
	for _, f := range fields[1:] {
		v, ok := strings.CutPrefix(f, "name=")
		if !ok {
			return "", fmt.Errorf("ERR Invalid metadata value given: %s", f)
		}
		name = v
	}
	if name == "" {
		return "", errors.New("ERR Library name was not given")
	}
	if !validName(name) {
		return "", errors.New("ERR Library names can only contain letters, numbers, or underscores(_) and must be at least one character long")
	}
	return name, nil
}

// LoadLibrary parses and runs a library's code; the error is the reply's
// text with its code ("ERR ...").
func LoadLibrary(e *Env, code []byte) (*Library, error) {
	name, err := LibraryName(code)
	if err != nil {
		return nil, err
	}
	_, rest, _ := strings.Cut(string(code), "\n")
	lib := &Library{Code: append([]byte(nil), code...), Name: name}
	p, err := compile([]byte("\n"+rest), functionChunk)
	if err != nil {
		return nil, fmt.Errorf("ERR Error compiling function: %s", err)
	}
	lib.proto = p
	st := e.newState(&Run{Name: lib.Name})
	defer st.L.Close()
	st.chunk, st.loading = functionChunk, true
	if _, err := st.register(lib); err != nil {
		return nil, errors.New("ERR Error registering functions: " + err.Error())
	}
	if len(lib.Functions) == 0 {
		return nil, errors.New("ERR No functions registered")
	}
	return lib, nil
}

// register runs lib's code in st, collecting its functions (and, in a
// call, their callbacks).
func (st *state) register(lib *Library) (map[string]*lua.LFunction, error) {
	L := st.L
	cbs := map[string]*lua.LFunction{}
	loading := st.loading
	st.onRegister = func(L *lua.LState) int {
		// Redis raises these without the caller's position
		// ("user_function:2: "), unlike L.RaiseError.
		raise := func(msg string) { L.Error(lua.LString(msg), 0) }
		var name, desc string
		var cb *lua.LFunction
		var flags []string
		switch L.GetTop() {
		case 1:
			t, ok := L.Get(1).(*lua.LTable)
			if !ok {
				raise("calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments).")
			}
			var bad string
			t.ForEach(func(k, v lua.LValue) {
				switch lua.LVAsString(k) {
				case "function_name":
					name = lua.LVAsString(v)
				case "callback":
					cb, _ = v.(*lua.LFunction)
				case "description":
					desc = lua.LVAsString(v)
				case "flags":
					ft, ok := v.(*lua.LTable)
					if !ok {
						bad = "flags argument to redis.register_function must be a table representing function flags"
						return
					}
					ft.ForEach(func(_, f lua.LValue) {
						fs := lua.LVAsString(f)
						if !functionFlags[fs] {
							bad = "unknown flag given"
						}
						flags = append(flags, fs)
					})
				default:
					bad = "unknown argument given to redis.register_function"
				}
			})
			if bad != "" {
				raise(bad)
			}
		case 2:
			name = lua.LVAsString(L.Get(1))
			cb, _ = L.Get(2).(*lua.LFunction)
		default:
			raise("wrong number of arguments to redis.register_function")
		}
		if name == "" {
			raise("redis.register_function must get a function name argument")
		}
		if cb == nil {
			raise("redis.register_function must get a callback argument")
		}
		if !validName(name) {
			raise("Function names can only contain letters, numbers, or underscores(_) and must be at least one character long")
		}
		if _, dup := cbs[name]; dup {
			raise("Function already exists in the library")
		}
		cbs[name] = cb
		if loading {
			f := &Function{Name: name, Description: desc, Flags: flags, Lib: lib}
			for _, fl := range flags {
				f.NoWrites = f.NoWrites || fl == "no-writes"
			}
			lib.Functions = append(lib.Functions, f)
		}
		return 0
	}
	fn := L.NewFunctionFromProto(lib.proto)
	fn.Env = st.guard
	L.Push(fn)
	if err := L.PCall(0, 0, nil); err != nil {
		msg := st.errorText(err)
		if i := strings.LastIndex(msg, " script: "); i >= 0 {
			msg = msg[:i]
		}
		return nil, errors.New(msg)
	}
	st.onRegister = nil
	return cbs, nil
}

// Call runs function f of its library with the run's keys and
// arguments and appends its reply.
func (e *Env) Call(out []byte, f *Function, run *Run) []byte {
	st := e.getState(run)
	st.chunk = functionChunk
	if run.Ctx != nil {
		st.L.SetContext(run.Ctx)
	}
	cbs, err := st.register(f.Lib)
	if err != nil {
		e.putState(st, false)
		return appendError(out, err.Error())
	}
	cb := cbs[f.Name]
	if cb == nil {
		e.putState(st, false)
		return appendError(out, "ERR Function not found")
	}
	L := st.L
	L.Push(strTable(L, run.Keys))
	L.Push(strTable(L, run.Args))
	out, clean := st.call(out, cb, 2)
	e.putState(st, clean)
	return out
}

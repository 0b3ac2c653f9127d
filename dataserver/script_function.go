package dataserver

import (
	"sort"
	"strings"

	"github.com/tairkv/tair/internal/envelope"
	"github.com/tairkv/tair/internal/errs"
	"github.com/tairkv/tair/internal/glob"
	"github.com/tairkv/tair/internal/luascript"
	"github.com/tairkv/tair/internal/rdbcodec"
	"github.com/tairkv/tair/internal/wire"
	"github.com/tairkv/tair/resp"
)

// # Functions
//
// The cluster's function libraries live in the configserver (name →
// code, with a version that counts changes). FUNCTION LOAD, DELETE and
// FLUSH go to one dataserver, which checks them (loading the code as
// Redis does) and writes the configserver; the proxy then sends every
// dataserver FUNCTION REFRESH, which reloads the set from the
// configserver. A node that lacks a function FCALL names (one that
// joined later, or missed a refresh) reloads the set before answering
// "Function not found".

// libraries is a node's copy of the cluster's libraries (guarded by
// scriptHost.mu).
type libraries struct {
	version int64
	byName  map[string]*luascript.Library
	fns     map[string]*luascript.Function
}

// refreshLibraries reloads the cluster's libraries from the configserver.
func (s *Server) refreshLibraries() error {
	h := s.scripting()
	rep, err := s.csScripts(&wire.ScriptRequest{Op: "flist"})
	if err != nil {
		return err
	}
	h.mu.Lock()
	cur := h.libs
	h.mu.Unlock()
	next := libraries{version: rep.Version, byName: map[string]*luascript.Library{}, fns: map[string]*luascript.Function{}}
	for name, code := range rep.Libraries {
		lib := cur.byName[name]
		if lib == nil || string(lib.Code) != code {
			if lib, err = luascript.LoadLibrary(h.env, []byte(code)); err != nil {
				s.log.Warn("a library of the configserver does not load", "library", name, "err", err)
				continue
			}
		}
		next.byName[name] = lib
		for _, f := range lib.Functions {
			next.fns[f.Name] = f
		}
	}
	h.mu.Lock()
	h.libs = next
	h.mu.Unlock()
	return nil
}

// changeLibraries sends a change of the cluster's libraries (fload,
// fdelete) to the configserver. Unless it took the change (ok), the
// reply is out with the configserver's refusal or why it could not be
// asked.
func (s *Server) changeLibraries(out []byte, req *wire.ScriptRequest) (reply []byte, ok bool) {
	rep, err := s.csScripts(req)
	if err != nil {
		return appendLibrariesErr(out, err), false
	}
	if rep.Error != "" {
		return resp.AppendError(out, rep.Error), false
	}
	return out, true
}

// appendLibrariesErr answers a command that could not read or write the
// configserver's libraries.
func appendLibrariesErr(out []byte, err error) []byte {
	return resp.AppendErr(out, errs.Newf(errs.Timeout, "the configserver's libraries: %v", err))
}

// findFunction is FCALL's function, reloading the libraries once when
// this node lacks it.
func (s *Server) findFunction(name string) (*luascript.Function, string) {
	h := s.scripting()
	for try := 0; try < 2; try++ {
		h.mu.Lock()
		f := h.libs.fns[name]
		h.mu.Unlock()
		if f != nil {
			return f, ""
		}
		if try == 0 {
			if err := s.refreshLibraries(); err != nil {
				return nil, "ERR Function not found"
			}
		}
	}
	return nil, "ERR Function not found"
}

// functionCmd serves FUNCTION LOAD, DELETE, FLUSH, LIST, STATS, KILL and
// the proxy's REFRESH on this node.
func (s *Server) functionCmd(out []byte, env envelope.Header, cmd [][]byte) []byte {
	h := s.scripting()
	if len(cmd) < 2 {
		return resp.AppendError(out, "ERR wrong number of arguments for 'function' command")
	}
	sub := strings.ToLower(string(cmd[1]))
	bad := func() []byte {
		return resp.AppendError(out, "ERR unknown subcommand or wrong number of arguments for '"+string(cmd[1])+"'. Try FUNCTION HELP.")
	}
	csErr := func(err error) []byte { return appendLibrariesErr(out, err) }
	switch sub {
	case "load":
		if len(cmd) < 3 {
			return bad()
		}
		// Redis reads every argument before the code as an option
		// (REPLACE, any number of times).
		replace := false
		for _, o := range cmd[2 : len(cmd)-1] {
			if !strings.EqualFold(string(o), "replace") {
				return resp.AppendError(out, "ERR Unknown option given: "+errs.Quoted(o, len(o)))
			}
			replace = true
		}
		// Redis looks for a library of that name before it runs the
		// code: "already exists" comes before the code's own errors.
		name, err := luascript.LibraryName(cmd[len(cmd)-1])
		if err != nil {
			return resp.AppendError(out, err.Error())
		}
		if err := s.refreshLibraries(); err != nil {
			return csErr(err)
		}
		h.mu.Lock()
		exists := h.libs.byName[name] != nil
		h.mu.Unlock()
		if exists && !replace {
			return resp.AppendError(out, "ERR Library '"+name+"' already exists")
		}
		lib, err := luascript.LoadLibrary(h.env, cmd[len(cmd)-1])
		if err != nil {
			return resp.AppendError(out, err.Error())
		}
		h.mu.Lock()
		old := h.libs.byName[lib.Name]
		var clash string
		for _, f := range lib.Functions {
			if o := h.libs.fns[f.Name]; o != nil && o.Lib.Name != lib.Name {
				clash = f.Name
				break
			}
		}
		h.mu.Unlock()
		if old != nil && !replace {
			return resp.AppendError(out, "ERR Library '"+lib.Name+"' already exists")
		}
		if clash != "" {
			return resp.AppendError(out, "ERR Function "+clash+" already exists")
		}
		if r, ok := s.changeLibraries(out, &wire.ScriptRequest{Op: "fload", Name: lib.Name, Body: string(lib.Code), Replace: replace}); !ok {
			return r
		}
		_ = s.refreshLibraries()
		return resp.AppendBulkString(out, lib.Name)
	case "delete":
		if len(cmd) != 3 {
			return bad()
		}
		if r, ok := s.changeLibraries(out, &wire.ScriptRequest{Op: "fdelete", Name: string(cmd[2])}); !ok {
			return r
		}
		_ = s.refreshLibraries()
		return resp.AppendOK(out)
	case "flush":
		if len(cmd) > 3 {
			return bad()
		}
		if len(cmd) == 3 && !strings.EqualFold(string(cmd[2]), "async") && !strings.EqualFold(string(cmd[2]), "sync") {
			return resp.AppendError(out, "ERR FUNCTION FLUSH only supports SYNC|ASYNC option")
		}
		if _, err := s.csScripts(&wire.ScriptRequest{Op: "fflush"}); err != nil {
			return csErr(err)
		}
		_ = s.refreshLibraries()
		return resp.AppendOK(out)
	case "refresh":
		if err := s.refreshLibraries(); err != nil {
			return csErr(err)
		}
		return resp.AppendOK(out)
	case "kill":
		if len(cmd) != 2 {
			return bad()
		}
		return h.appendKill(out)
	case "list":
		var pattern []byte
		withCode := false
		for i := 2; i < len(cmd); i++ {
			switch {
			case strings.EqualFold(string(cmd[i]), "withcode") && !withCode:
				withCode = true
			case strings.EqualFold(string(cmd[i]), "libraryname") && pattern == nil:
				if i+1 >= len(cmd) {
					return resp.AppendError(out, "ERR library name argument was not given")
				}
				pattern = cmd[i+1]
				i++
			default:
				// %s in Redis's format: the argument up to a NUL
				return resp.AppendError(out, "ERR Unknown argument "+errs.Quoted(cmd[i], len(cmd[i])))
			}
		}
		if err := s.refreshLibraries(); err != nil {
			return csErr(err)
		}
		h.mu.Lock()
		var libs []*luascript.Library
		for _, l := range h.libs.byName {
			if pattern == nil || glob.Match(pattern, []byte(l.Name), false) {
				libs = append(libs, l)
			}
		}
		h.mu.Unlock()
		sort.Slice(libs, func(i, j int) bool { return libs[i].Name < libs[j].Name })
		p := env.Proto
		out = resp.AppendArray(out, len(libs))
		for _, l := range libs {
			n := 3
			if withCode {
				n = 4
			}
			out = resp.AppendMap(out, n, p)
			out = resp.AppendBulkString(out, "library_name")
			out = resp.AppendBulkString(out, l.Name)
			out = resp.AppendBulkString(out, "engine")
			out = resp.AppendBulkString(out, "LUA")
			out = resp.AppendBulkString(out, "functions")
			out = resp.AppendArray(out, len(l.Functions))
			for _, f := range l.Functions {
				out = resp.AppendMap(out, 3, p)
				out = resp.AppendBulkString(out, "name")
				out = resp.AppendBulkString(out, f.Name)
				out = resp.AppendBulkString(out, "description")
				if f.Description == "" {
					out = resp.AppendNull(out, p)
				} else {
					out = resp.AppendBulkString(out, f.Description)
				}
				out = resp.AppendBulkString(out, "flags")
				out = resp.AppendSet(out, len(f.Flags), p)
				for _, fl := range f.Flags {
					out = resp.AppendStatus(out, fl)
				}
			}
			if withCode {
				out = resp.AppendBulkString(out, "library_code")
				out = resp.AppendBulk(out, l.Code)
			}
		}
		return out
	case "stats":
		if len(cmd) != 2 {
			return bad()
		}
		if err := s.refreshLibraries(); err != nil {
			return csErr(err)
		}
		h.mu.Lock()
		nl, nf := len(h.libs.byName), len(h.libs.fns)
		h.mu.Unlock()
		p := env.Proto
		out = resp.AppendMap(out, 2, p)
		out = resp.AppendBulkString(out, "running_script")
		out = resp.AppendNull(out, p)
		out = resp.AppendBulkString(out, "engines")
		out = resp.AppendMap(out, 1, p)
		out = resp.AppendBulkString(out, "LUA")
		out = resp.AppendMap(out, 2, p)
		out = resp.AppendBulkString(out, "libraries_count")
		out = resp.AppendInt(out, int64(nl))
		out = resp.AppendBulkString(out, "functions_count")
		out = resp.AppendInt(out, int64(nf))
		return out
	case "dump":
		if err := s.refreshLibraries(); err != nil {
			return csErr(err)
		}
		h.mu.Lock()
		var names []string
		for n := range h.libs.byName {
			names = append(names, n)
		}
		sort.Strings(names)
		codes := make([][]byte, len(names))
		for i, n := range names {
			codes[i] = h.libs.byName[n].Code
		}
		h.mu.Unlock()
		return resp.AppendBulk(out, rdbcodec.EncodeFunctions(codes))
	case "restore":
		return s.functionRestore(out, cmd)
	}
	return bad()
}

// functionRestore: FUNCTION RESTORE payload [FLUSH|APPEND|REPLACE].
func (s *Server) functionRestore(out []byte, cmd [][]byte) []byte {
	h := s.scripting()
	policy := "append"
	if len(cmd) == 4 {
		policy = strings.ToLower(string(cmd[3]))
	}
	if len(cmd) > 4 || policy != "append" && policy != "flush" && policy != "replace" {
		return resp.AppendError(out, "ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.")
	}
	codes, err := rdbcodec.DecodeFunctions(cmd[2], rdbcodec.Limits{})
	switch {
	case err == rdbcodec.ErrNotFunction:
		return resp.AppendError(out, "ERR given type is not a function")
	case err == rdbcodec.ErrChecksum:
		return resp.AppendError(out, "ERR DUMP payload version or checksum are wrong")
	case err != nil:
		return resp.AppendError(out, "ERR function restore failed")
	}
	var libs []*luascript.Library
	seen := map[string]string{} // function → library, within the payload
	for _, c := range codes {
		lib, err := luascript.LoadLibrary(h.env, c)
		if err != nil {
			return resp.AppendError(out, err.Error())
		}
		for _, f := range lib.Functions {
			if l, dup := seen[f.Name]; dup && l != lib.Name {
				return resp.AppendError(out, "ERR Function "+f.Name+" already exists")
			}
			seen[f.Name] = lib.Name
		}
		libs = append(libs, lib)
	}
	if err := s.refreshLibraries(); err != nil {
		return appendLibrariesErr(out, err)
	}
	if policy != "flush" {
		h.mu.Lock()
		var clash string
		for _, lib := range libs {
			if h.libs.byName[lib.Name] != nil && policy == "append" {
				clash = "ERR Library " + lib.Name + " already exists"
				break
			}
			for _, f := range lib.Functions {
				if o := h.libs.fns[f.Name]; o != nil && o.Lib.Name != lib.Name {
					clash = "ERR Function " + f.Name + " already exists"
				}
			}
		}
		h.mu.Unlock()
		if clash != "" {
			return resp.AppendError(out, clash)
		}
	} else if _, err := s.csScripts(&wire.ScriptRequest{Op: "fflush"}); err != nil {
		return appendLibrariesErr(out, err)
	}
	for _, lib := range libs {
		if r, ok := s.changeLibraries(out, &wire.ScriptRequest{Op: "fload", Name: lib.Name, Body: string(lib.Code), Replace: policy != "append"}); !ok {
			return r
		}
	}
	_ = s.refreshLibraries()
	return resp.AppendOK(out)
}

package configserver

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tairkv/tair/internal/wire"
)

// The cluster's Lua scripts and function libraries, in etcd:
//
//	<prefix>/scripts/<sha>        the body of a script (SCRIPT LOAD, EVAL)
//	<prefix>/functions/<name>     the code of a function library
//	<prefix>/functions-version    counts the libraries' changes
//
// Dataservers fetch a script they are asked to run by sha and do not
// hold, and the libraries when FCALL names a function they lack or the
// version moved (dataserver/script.go); SCRIPT FLUSH and FUNCTION
// FLUSH/DELETE clear them here too.

func (s *store) scriptKey(sha string) string    { return s.prefix + "/scripts/" + sha }
func (s *store) functionKey(name string) string { return s.prefix + "/functions/" + name }
func (s *store) functionsVersionKey() string    { return s.prefix + "/functions-version" }
func (s *store) scriptsPrefix() string          { return s.prefix + "/scripts/" }
func (s *store) functionsPrefix() string        { return s.prefix + "/functions/" }

// maxScriptBody bounds a stored script or library (etcd's request limit
// is 1.5 MiB by default).
const maxScriptBody = 1 << 20

func (s *Server) handleScripts(w http.ResponseWriter, r *http.Request) {
	var req wire.ScriptRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4<<20)).Decode(&req); err != nil {
		http.Error(w, fmt.Sprintf("bad scripts request: %v", err), http.StatusBadRequest)
		return
	}
	ctx, st := r.Context(), s.store
	var reply wire.ScriptReply
	fail := func(err error) {
		http.Error(w, "scripts: "+err.Error(), http.StatusServiceUnavailable)
	}
	switch req.Op {
	case "load":
		if len(req.Body) > maxScriptBody || req.Sha == "" {
			http.Error(w, "script too large", http.StatusBadRequest)
			return
		}
		if _, err := s.cli.Put(ctx, st.scriptKey(req.Sha), req.Body); err != nil {
			fail(err)
			return
		}
	case "get", "exists":
		ops := make([]clientv3.Op, len(req.Shas))
		for i, sha := range req.Shas {
			if req.Op == "exists" {
				ops[i] = clientv3.OpGet(st.scriptKey(sha), clientv3.WithCountOnly())
			} else {
				ops[i] = clientv3.OpGet(st.scriptKey(sha))
			}
		}
		res, err := s.cli.Txn(ctx).Then(ops...).Commit()
		if err != nil {
			fail(err)
			return
		}
		for _, rr := range res.Responses {
			g := rr.GetResponseRange()
			if req.Op == "exists" {
				reply.Exists = append(reply.Exists, g.Count > 0)
				continue
			}
			body := ""
			if len(g.Kvs) > 0 {
				body = string(g.Kvs[0].Value)
			}
			reply.Bodies = append(reply.Bodies, body)
		}
	case "flush":
		if _, err := s.cli.Delete(ctx, st.scriptsPrefix(), clientv3.WithPrefix()); err != nil {
			fail(err)
			return
		}
	case "fload", "fdelete", "fflush":
		var ops []clientv3.Op
		var cmps []clientv3.Cmp
		switch req.Op {
		case "fload":
			if len(req.Body) > maxScriptBody || req.Name == "" {
				http.Error(w, "library too large", http.StatusBadRequest)
				return
			}
			if !req.Replace {
				cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(st.functionKey(req.Name)), "=", 0))
			}
			ops = append(ops, clientv3.OpPut(st.functionKey(req.Name), req.Body))
		case "fdelete":
			cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(st.functionKey(req.Name)), ">", 0))
			ops = append(ops, clientv3.OpDelete(st.functionKey(req.Name)))
		case "fflush":
			ops = append(ops, clientv3.OpDelete(st.functionsPrefix(), clientv3.WithPrefix()))
		}
		v, err := s.functionsVersion(r)
		if err != nil {
			fail(err)
			return
		}
		ops = append(ops, clientv3.OpPut(st.functionsVersionKey(), strconv.FormatInt(v+1, 10)))
		res, err := s.cli.Txn(ctx).If(cmps...).Then(ops...).Commit()
		if err != nil {
			fail(err)
			return
		}
		if !res.Succeeded {
			if req.Op == "fload" {
				reply.Error = "ERR Library '" + req.Name + "' already exists"
			} else {
				reply.Error = "ERR Library not found"
			}
		}
		reply.Version = v + 1
	case "flist":
		res, err := s.cli.Txn(ctx).Then(clientv3.OpGet(st.functionsPrefix(), clientv3.WithPrefix()),
			clientv3.OpGet(st.functionsVersionKey())).Commit()
		if err != nil {
			fail(err)
			return
		}
		reply.Libraries = map[string]string{}
		for _, kv := range res.Responses[0].GetResponseRange().Kvs {
			reply.Libraries[string(kv.Key[len(st.functionsPrefix()):])] = string(kv.Value)
		}
		if kvs := res.Responses[1].GetResponseRange().Kvs; len(kvs) > 0 {
			reply.Version, _ = strconv.ParseInt(string(kvs[0].Value), 10, 64)
		}
	default:
		http.Error(w, "unknown scripts op "+strconv.Quote(req.Op), http.StatusBadRequest)
		return
	}
	writeJSON(w, http.StatusOK, &reply)
}

func (s *Server) functionsVersion(r *http.Request) (int64, error) {
	res, err := s.cli.Get(r.Context(), s.store.functionsVersionKey())
	if err != nil || len(res.Kvs) == 0 {
		return 0, err
	}
	return strconv.ParseInt(string(res.Kvs[0].Value), 10, 64)
}

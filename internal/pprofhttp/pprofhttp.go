// Package pprofhttp mounts Go's profiling endpoints (/debug/pprof/) on a
// server's own mux, so each role's --http address serves them without the
// global http.DefaultServeMux.
package pprofhttp

import (
	"net/http"
	"net/http/pprof"
)

// Register adds /debug/pprof/ and its profile, trace, symbol and cmdline
// handlers to mux.
func Register(mux *http.ServeMux) {
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
}

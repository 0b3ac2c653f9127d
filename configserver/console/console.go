// Package console is the configserver's web console: static HTML, CSS
// and JavaScript (no framework, no build step) embedded in the binary and
// served at / on every configserver's --http address.
//
// The page polls the configserver it was loaded from every second:
// /status (which configserver, leader or standby), and the API a standby
// forwards to the leader (configserver.Server's consoleAPI): /v1/nodes,
// /v1/stats, /v1/migrations, /v1/areas, /v1/proxies, /v1/events and
// /v1/table (fetched again only when its version changed). Operations go
// through POST /v1/admin, each after a confirmation dialog.
package console

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"net/http"
	"path"
	"strings"
)

//go:embed static
var static embed.FS

// contentTypes are the types of the files the console serves, by
// extension (not left to the host's mime tables).
var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".svg":  "image/svg+xml",
	".png":  "image/png",
}

type file struct {
	data        []byte
	contentType string
	etag        string
}

// Handler serves the console's files: / is index.html; any other path
// names a file of static/, else 404. Responses carry an ETag and
// Cache-Control: no-cache, so a browser revalidates and picks up a new
// binary's page at once.
func Handler() http.Handler {
	files := map[string]file{}
	err := fs.WalkDir(static, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := static.ReadFile(p)
		if err != nil {
			return err
		}
		ct := contentTypes[path.Ext(p)]
		if ct == "" {
			ct = "application/octet-stream"
		}
		sum := sha256.Sum256(data)
		files[strings.TrimPrefix(p, "static")] = file{data: data, contentType: ct, etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
		return nil
	})
	if err != nil {
		panic("console: embedded files: " + err.Error())
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		p := r.URL.Path
		if p == "/" {
			p = "/index.html"
		}
		f, ok := files[p]
		if !ok {
			http.NotFound(w, r)
			return
		}
		h := w.Header()
		h.Set("Content-Type", f.contentType)
		h.Set("Cache-Control", "no-cache")
		h.Set("ETag", f.etag)
		h.Set("X-Content-Type-Options", "nosniff")
		if p == "/index.html" {
			// The console's own scripts and styles only; never framed.
			h.Set("Content-Security-Policy", "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; frame-ancestors 'none'")
		}
		if r.Header.Get("If-None-Match") == f.etag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		if r.Method == http.MethodHead {
			return
		}
		_, _ = w.Write(f.data)
	})
}

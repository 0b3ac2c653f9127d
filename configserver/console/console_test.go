package console

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func get(t *testing.T, h http.Handler, method, path string, hdr ...string) *http.Response {
	t.Helper()
	req := httptest.NewRequest(method, path, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Result()
}

// TestHandlerServesFiles: / is the page, its assets have their types,
// anything else is 404, writes are 405, and an ETag revalidates.
func TestHandlerServesFiles(t *testing.T) {
	h := Handler()
	for _, c := range []struct{ path, ctype, contains string }{
		{"/", "text/html; charset=utf-8", `<script src="app.js"></script>`},
		{"/index.html", "text/html; charset=utf-8", "<title>Tair console</title>"},
		{"/app.js", "text/javascript; charset=utf-8", "async function refresh()"},
		{"/style.css", "text/css; charset=utf-8", "#buckets"},
	} {
		resp := get(t, h, "GET", c.path)
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s: %d", c.path, resp.StatusCode)
		}
		if got := resp.Header.Get("Content-Type"); got != c.ctype {
			t.Errorf("GET %s: Content-Type %q, want %q", c.path, got, c.ctype)
		}
		if !strings.Contains(string(body), c.contains) {
			t.Errorf("GET %s: body lacks %q", c.path, c.contains)
		}
		if resp.Header.Get("Cache-Control") != "no-cache" || resp.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s: headers %v", c.path, resp.Header)
		}
		etag := resp.Header.Get("ETag")
		if etag == "" {
			t.Fatalf("GET %s: no ETag", c.path)
		}
		if r := get(t, h, "GET", c.path, "If-None-Match", etag); r.StatusCode != http.StatusNotModified {
			t.Errorf("GET %s with its ETag: %d, want 304", c.path, r.StatusCode)
		}
		if r := get(t, h, "HEAD", c.path); r.StatusCode != 200 || r.Header.Get("Content-Type") != c.ctype {
			t.Errorf("HEAD %s: %d %q", c.path, r.StatusCode, r.Header.Get("Content-Type"))
		}
	}
	if csp := get(t, h, "GET", "/").Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") {
		t.Errorf("page CSP %q", csp)
	}
	for _, p := range []string{"/nope.js", "/static/app.js", "/v1/nodes", "/../console.go"} {
		if r := get(t, h, "GET", p); r.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", p, r.StatusCode)
		}
	}
	if r := get(t, h, "POST", "/"); r.StatusCode != http.StatusMethodNotAllowed || r.Header.Get("Allow") == "" {
		t.Errorf("POST /: %d", r.StatusCode)
	}
}

// TestPageNamesItsParts: the page has the elements app.js fills and the
// operations it offers, so a rename on one side shows here.
func TestPageNamesItsParts(t *testing.T) {
	html, _ := static.ReadFile("static/index.html")
	js, _ := static.ReadFile("static/app.js")
	for _, id := range []string{"nodes", "buckets", "legend", "moves", "events", "areas", "proxies", "confirm", "confirm-ok",
		"cred", "area-form", "add-node", "summary", "progress-bar", "flash", "error"} {
		if !strings.Contains(string(html), `id="`+id+`"`) {
			t.Errorf("index.html has no #%s", id)
		}
		if !strings.Contains(string(js), `$('`+id+`')`) {
			t.Errorf("app.js never uses #%s", id)
		}
	}
	for _, op := range []string{"node-drain", "node-add", "node-remove", "rebalance", "migrations-pause", "migrations-resume",
		"migrations-cancel", "area-set"} {
		if !strings.Contains(string(html)+string(js), op) {
			t.Errorf("no %s operation in the page", op)
		}
	}
	for _, api := range []string{"/status", "/v1/nodes", "/v1/stats", "/v1/migrations", "/v1/areas", "/v1/proxies",
		"/v1/events", "/v1/table?after=", "/v1/admin"} {
		if !strings.Contains(string(js), "'"+api) {
			t.Errorf("app.js does not call %s", api)
		}
	}
}

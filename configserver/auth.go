package configserver

import (
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net/http"
	"os"
	"strings"

	"github.com/tairkv/tair/internal/wire"
)

// The admin credential (Config.AdminToken) guards the operator's
// actions: POST /v1/admin (drain, add, remove, rebalance, pause, resume
// and cancel migrations, area and hook settings), on --listen and on the
// console's --http alike (a standby's console forwards the request with
// its Authorization header to the leader's --listen, which checks it).
//
// Left open on purpose, because they are the cluster's own traffic and
// not an operator's action: POST /v1/heartbeat (dataservers), POST
// /v1/proxies (proxies' beats), POST /v1/invalid (TAIR.INVALID from the
// dataservers and proxies) and POST /v1/scripts (SCRIPT LOAD and FUNCTION
// through any proxy, fetched by the dataservers). Guarding them would
// need the secret on every node of the data path, which is what the
// network (--listen on a private address) protects already. The GETs
// are read-only.

// loadAdminToken reads AdminTokenFile into AdminToken (its first line,
// trimmed) when it is set.
func (c *Config) loadAdminToken() error {
	if c.AdminTokenFile == "" {
		return nil
	}
	if c.AdminToken != "" {
		return fmt.Errorf("configserver: give the admin credential or its file, not both")
	}
	data, err := os.ReadFile(c.AdminTokenFile)
	if err != nil {
		return fmt.Errorf("configserver: admin credential file: %w", err)
	}
	tok, _, _ := strings.Cut(string(data), "\n")
	if c.AdminToken = strings.TrimSpace(tok); c.AdminToken == "" {
		return fmt.Errorf("configserver: admin credential file %s is empty", c.AdminTokenFile)
	}
	return nil
}

// requireAdmin refuses a request without the admin credential, when one
// is configured, with 401 and a wire.AuthError.
func (s *Server) requireAdmin(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if want := s.cfg.AdminToken; want != "" {
			got, ok := credential(r)
			if !ok {
				w.Header().Set("WWW-Authenticate", `Bearer realm="tair"`)
				writeJSON(w, http.StatusUnauthorized, wire.AuthError{Error: "admin credential required (tair ctl --admin-token or $TAIR_ADMIN_TOKEN)"})
				return
			}
			// Compare digests: constant time, and of the same length
			// whatever was sent.
			g, x := sha256.Sum256([]byte(got)), sha256.Sum256([]byte(want))
			if subtle.ConstantTimeCompare(g[:], x[:]) != 1 {
				w.Header().Set("WWW-Authenticate", `Bearer realm="tair", error="invalid_token"`)
				writeJSON(w, http.StatusUnauthorized, wire.AuthError{Error: "wrong admin credential"})
				return
			}
		}
		h(w, r)
	}
}

// credential is the request's "Authorization: Bearer X" (or Basic with
// any user and X as the password, for curl -u).
func credential(r *http.Request) (string, bool) {
	if tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		return strings.TrimSpace(tok), true
	}
	if _, pw, ok := r.BasicAuth(); ok {
		return pw, true
	}
	return "", false
}

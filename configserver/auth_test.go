package configserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tairkv/tair/internal/route"
	"github.com/tairkv/tair/internal/wire"
)

// postAdminAuth POSTs req to base+/v1/admin with the Authorization header
// auth ("" = none) and returns the status and the body.
func postAdminAuth(t *testing.T, base, auth string, req wire.AdminRequest) (int, []byte) {
	t.Helper()
	data, _ := json.Marshal(req)
	hr, _ := http.NewRequest(http.MethodPost, base+"/v1/admin", bytes.NewReader(data))
	hr.Header.Set("Content-Type", "application/json")
	if auth != "" {
		hr.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(hr)
	if err != nil {
		t.Fatalf("POST admin: %v", err)
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(resp.Body)
	return resp.StatusCode, buf.Bytes()
}

// TestAdminCredential: with an admin credential configured, an admin
// operation without it or with a wrong one is refused with 401 and a JSON
// error, on --listen, on the leader's console and through a standby's
// console (which forwards the credential); with it the operation is done.
// Heartbeats and proxy beats need none.
func TestAdminCredential(t *testing.T) {
	const token = "s3cret-admin"
	cfg := sharedEtcdConfig(t)
	// One server from a credential file, the other from the flag's value.
	file := filepath.Join(t.TempDir(), "admin-token")
	if err := os.WriteFile(file, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfgA := cfg
	cfgA.AdminTokenFile = file
	a := startLeader(t, cfgA)
	cfgB := cfg
	cfgB.AdminToken = token
	b := startServer(t, cfgB)
	startFakes(t, dsAddrs[:2], a.Addr(), b.Addr()) // heartbeats: no credential
	waitTable(t, a, 5*time.Second, func(*route.Table) bool { return true }, "any")

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := wire.NewClient(a.Addr()).ProxyBeat(ctx, &wire.ProxyBeat{Addr: "127.0.0.1:1"}); err != nil {
		t.Fatalf("proxy beat without credential: %v", err)
	}

	pause := wire.AdminRequest{Op: "migrations-pause"}
	for _, base := range []string{"http://" + a.Addr(), "http://" + a.HTTPAddr(), "http://" + b.HTTPAddr()} {
		for _, auth := range []string{"", "Bearer wrong", "Bearer " + token + "x", "Basic " + "dTpub3Bl"} {
			status, body := postAdminAuth(t, base, auth, pause)
			var ae wire.AuthError
			if status != http.StatusUnauthorized || json.Unmarshal(body, &ae) != nil || ae.Error == "" {
				t.Fatalf("%s with %q: %d %s, want 401 and a JSON error", base, auth, status, body)
			}
			if a.metaState.Load().Paused {
				t.Fatalf("%s with %q: paused without the credential", base, auth)
			}
		}
		status, body := postAdminAuth(t, base, "Bearer "+token, pause)
		if status != http.StatusOK || !strings.Contains(string(body), `"ok":true`) {
			t.Fatalf("%s with the credential: %d %s", base, status, body)
		}
		if !a.metaState.Load().Paused {
			t.Fatalf("%s: not paused with the credential", base)
		}
		if status, body := postAdminAuth(t, base, "Bearer "+token, wire.AdminRequest{Op: "migrations-resume"}); status != http.StatusOK {
			t.Fatalf("%s resume: %d %s", base, status, body)
		}
	}
	// curl -u any:TOKEN works too.
	if status, body := postAdminAuth(t, "http://"+a.Addr(), "Basic "+basic("ops", token), pause); status != http.StatusOK {
		t.Fatalf("basic auth: %d %s", status, body)
	}

	// wire.Client: ErrUnauthorized without it (through the standby, which
	// names the leader), done with it.
	if _, err := wire.NewClient(b.Addr(), a.Addr()).Admin(ctx, &wire.AdminRequest{Op: "migrations-resume"}); !errors.Is(err, wire.ErrUnauthorized) {
		t.Fatalf("admin without credential: %v, want ErrUnauthorized", err)
	}
	c := wire.NewClient(b.Addr(), a.Addr())
	c.SetAdminToken(token)
	if r, err := c.Admin(ctx, &wire.AdminRequest{Op: "migrations-resume"}); err != nil || !r.OK {
		t.Fatalf("admin with credential: %v %+v", err, r)
	}
	if a.metaState.Load().Paused {
		t.Fatal("still paused")
	}
}

// TestAdminCredentialOff: without a credential configured, admin
// operations need none (and an Authorization header sent anyway is
// ignored).
func TestAdminCredentialOff(t *testing.T) {
	a := startLeader(t, sharedEtcdConfig(t))
	for _, auth := range []string{"", "Bearer whatever"} {
		if status, body := postAdminAuth(t, "http://"+a.Addr(), auth, wire.AdminRequest{Op: "migrations-resume"}); status != http.StatusOK {
			t.Fatalf("with %q: %d %s", auth, status, body)
		}
	}
}

// TestAdminCredentialFile: an empty or missing file, or both a file and a
// value, are refused at start.
func TestAdminCredentialFile(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	_ = os.WriteFile(empty, []byte("\n"), 0o600)
	for _, c := range []Config{{AdminTokenFile: empty}, {AdminTokenFile: filepath.Join(dir, "missing")},
		{AdminTokenFile: empty, AdminToken: "x"}} {
		cfg := testConfig()
		cfg.AdminToken, cfg.AdminTokenFile = c.AdminToken, c.AdminTokenFile
		if _, err := New(cfg, nil); err == nil {
			t.Errorf("New with %+v: no error", c)
		}
	}
}

func basic(user, pw string) string {
	r, _ := http.NewRequest(http.MethodGet, "http://x/", nil)
	r.SetBasicAuth(user, pw)
	return strings.TrimPrefix(r.Header.Get("Authorization"), "Basic ")
}

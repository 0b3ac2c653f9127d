package main

import (
	"strings"
	"testing"

	"github.com/tairkv/tair/cluster"
	"github.com/tairkv/tair/configserver"
	"github.com/tairkv/tair/internal/testcluster"
)

// TestCtlAdminToken: against configservers started with an admin
// credential, the commands that change the cluster fail without it (the
// configserver's reason shown), succeed with --admin-token or
// $TAIR_ADMIN_TOKEN (the flag wins), and the read-only ones need none.
func TestCtlAdminToken(t *testing.T) {
	const token = "ctl-secret"
	c := testcluster.New(t, testcluster.Options{Options: cluster.Options{
		ConfigServers: 2, DataServers: 2, Copies: 2, Buckets: 16,
		ConfigServer: func(_ int, cfg *configserver.Config) { cfg.AdminToken = token },
	}})
	cs := strings.Join(c.ConfigServerAddrs(), ",")
	t.Setenv("TAIR_ADMIN_TOKEN", "")

	wantContains(t, ctl(t, cs, "status"), "dataservers     2 alive of 2")
	for _, args := range [][]string{
		{"migrate", "pause"},
		{"migrate", "pause", "--admin-token", "wrong"},
		{"area", "set", "3", "--ops", "100"},
		{"hooks", "on", "audit"},
	} {
		out, err := ctlErr(cs, args...)
		if err == nil || !strings.Contains(err.Error(), "admin credential") {
			t.Fatalf("ctl %v without the credential: %v\n%s", args, err, out)
		}
	}
	if out := ctl(t, cs, "status", "--json"); !strings.Contains(out, `"paused":false`) {
		t.Fatalf("paused by a refused command:\n%s", out)
	}

	wantContains(t, ctl(t, cs, "migrate", "pause", "--admin-token", token), "OK")
	wantContains(t, ctl(t, cs, "status"), "paused=true")

	t.Setenv("TAIR_ADMIN_TOKEN", token)
	wantContains(t, ctl(t, cs, "migrate", "resume"), "OK")
	wantContains(t, ctl(t, cs, "status"), "paused=false")
	wantContains(t, ctl(t, cs, "area", "set", "3", "--ops", "100"), "OK area 3: quota none, ops/s 100")
	// The flag wins over the environment.
	if out, err := ctlErr(cs, "migrate", "pause", "--admin-token", "wrong"); err == nil || !strings.Contains(err.Error(), "wrong admin credential") {
		t.Fatalf("--admin-token wrong with the right one in the environment: %v\n%s", err, out)
	}
}

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSettingsPrecedence(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "proxy.yaml")
	if err := os.WriteFile(file, []byte("listen: 127.0.0.1:7000\nrequirepass: fromfile\nmax-clients: 7\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TAIR_REQUIREPASS", "fromenv")
	cmd := proxyCmd()
	if err := cmd.ParseFlags([]string{"--config", file, "--max-clients", "9"}); err != nil {
		t.Fatal(err)
	}
	v, err := settings(cmd)
	if err != nil {
		t.Fatal(err)
	}
	c := proxyConfig(v)
	if c.Listen != "127.0.0.1:7000" {
		t.Errorf("listen = %q, want the file's", c.Listen)
	}
	if c.RequirePass != "fromenv" {
		t.Errorf("requirepass = %q, want the environment's", c.RequirePass)
	}
	if c.MaxClients != 9 {
		t.Errorf("max-clients = %d, want the flag's", c.MaxClients)
	}
}

func TestSettingsRejectUnknownKey(t *testing.T) {
	file := filepath.Join(t.TempDir(), "ds.yaml")
	if err := os.WriteFile(file, []byte("engine: ldb\nengnie: typo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := dataserverCmd()
	if err := cmd.ParseFlags([]string{"--config", file}); err != nil {
		t.Fatal(err)
	}
	if _, err := settings(cmd); err == nil || !strings.Contains(err.Error(), `unknown setting "engnie"`) {
		t.Fatalf("want an unknown-setting error, got %v", err)
	}
}

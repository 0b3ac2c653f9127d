package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// After `tair up` (what `make run` runs), `tair ctl status` with no flags
// reaches that cluster, and the discovery file goes when up stops.
func TestCtlFindsTheRunningUp(t *testing.T) {
	file := filepath.Join(t.TempDir(), "up.json")
	t.Setenv("TAIR_UP_FILE", file)
	p := startTair(t, []string{"TAIR_UP_FILE=" + file}, "up", "--dataservers", "2", "--copies", "1", "--buckets", "16",
		"--engine", "mdb", "--port", strings.TrimPrefix(freeAddr(t), "127.0.0.1:"))
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, ok := readUpInfo(); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("tair up wrote no discovery file within 60 s; it logged:\n%s", p.logged())
		}
		time.Sleep(50 * time.Millisecond)
	}
	info, _ := readUpInfo()
	if info.PID != p.cmd.Process.Pid || info.Proxy == "" {
		t.Fatalf("discovery file %+v, want pid %d and a proxy", info, p.cmd.Process.Pid)
	}

	// Both dataservers heartbeat within a few seconds of the file.
	var out string
	for deadline := time.Now().Add(20 * time.Second); ; {
		cmd := ctlCmd()
		var buf bytes.Buffer
		cmd.SetOut(&buf)
		cmd.SetErr(&buf)
		cmd.SetArgs([]string{"status"})
		err := cmd.Execute()
		out = buf.String()
		if err == nil && strings.Contains(out, "dataservers     2 alive of 2\n") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("tair ctl status with no flags: %v\n%s", err, out)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !strings.Contains(out, "buckets         16\ncopies          1\n") {
		t.Fatalf("tair ctl status reached another cluster:\n%s", out)
	}

	// up made an admin credential: the configserver asks for it, ctl with
	// no flags sends the one in the discovery file, and never to a
	// configserver named on its command line.
	if len(info.AdminToken) != 32 || strings.Trim(info.AdminToken, "0123456789abcdef") != "" {
		t.Fatalf("discovery file's admin credential %q, want 32 hex digits", info.AdminToken)
	}
	t.Setenv("TAIR_ADMIN_TOKEN", "")
	runCtl := func(args ...string) (string, error) {
		cmd := ctlCmd()
		var buf bytes.Buffer
		cmd.SilenceUsage, cmd.SilenceErrors = true, true
		cmd.SetOut(&buf)
		cmd.SetErr(&buf)
		cmd.SetArgs(args)
		err := cmd.Execute()
		return buf.String(), err
	}
	if out, err := runCtl("migrate", "pause"); err != nil || !strings.Contains(out, "OK") {
		t.Fatalf("tair ctl migrate pause with no flags: %v\n%s", err, out)
	}
	if out, err := runCtl("migrate", "resume", "--configserver", info.ConfigServers[0]); err == nil || !strings.Contains(err.Error(), "admin credential required") {
		t.Fatalf("tair ctl --configserver (named) without a credential: %v\n%s", err, out)
	}
	if out, err := runCtl("migrate", "resume", "--admin-token", "wrong"); err == nil || !strings.Contains(err.Error(), "wrong admin credential") {
		t.Fatalf("tair ctl --admin-token wrong: %v\n%s", err, out)
	}
	if out, err := runCtl("migrate", "resume"); err != nil || !strings.Contains(out, "OK") {
		t.Fatalf("tair ctl migrate resume with no flags: %v\n%s", err, out)
	}

	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code, _ := p.wait(t, 5*time.Second); code != 0 {
		t.Fatalf("tair up exited %d", code)
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Fatalf("the discovery file outlived tair up: %v", err)
	}
}

// A file left by a process that is gone (kill -9) is ignored, and a new
// `tair up` replaces it.
func TestUpInfoOfADeadProcessIsIgnored(t *testing.T) {
	file := filepath.Join(t.TempDir(), "up.json")
	t.Setenv("TAIR_UP_FILE", file)
	// Pid 0 is never a process a user runs; a large pid that is free
	// stands for one that died.
	dead := 1 << 22
	for processAlive(dead) {
		dead++
	}
	if err := os.WriteFile(file, []byte(`{"pid":`+strconv.Itoa(dead)+`,"configservers":["127.0.0.1:1"]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if info, ok := readUpInfo(); ok {
		t.Fatalf("readUpInfo = %+v for a dead process", info)
	}
	remove, err := writeUpInfo(upInfo{PID: os.Getpid(), ConfigServers: []string{"127.0.0.1:2"}})
	if err != nil {
		t.Fatal(err)
	}
	if info, ok := readUpInfo(); !ok || info.ConfigServers[0] != "127.0.0.1:2" {
		t.Fatalf("readUpInfo = %+v %v after writeUpInfo", info, ok)
	}
	remove()
	if _, ok := readUpInfo(); ok {
		t.Fatal("the file outlived its remove")
	}
}

// upAdminToken: the one given, none when asked, else a new random one,
// kept in --dir (0600) so a restart there takes it again.
func TestUpAdminToken(t *testing.T) {
	if tok, err := upAdminToken("given", false, ""); err != nil || tok != "given" {
		t.Fatalf("given: %q, %v", tok, err)
	}
	if tok, err := upAdminToken("", true, ""); err != nil || tok != "" {
		t.Fatalf("none: %q, %v", tok, err)
	}
	if _, err := upAdminToken("given", true, ""); err == nil {
		t.Fatal("--admin-token with --no-admin-token: no error")
	}
	a, errA := upAdminToken("", false, "")
	b, errB := upAdminToken("", false, "")
	if errA != nil || errB != nil || len(a) != 32 || a == b {
		t.Fatalf("made without a dir: %q (%v), %q (%v): want two different 32-digit credentials", a, errA, b, errB)
	}
	dir := t.TempDir()
	first, err := upAdminToken("", false, dir)
	if err != nil || len(first) != 32 {
		t.Fatalf("made in a dir: %q, %v", first, err)
	}
	st, err := os.Stat(filepath.Join(dir, "admin-token"))
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("kept credential's mode %v, want 0600", st.Mode().Perm())
	}
	if again, err := upAdminToken("", false, dir); err != nil || again != first {
		t.Fatalf("restart on the dir: %q, %v; want the kept %q", again, err, first)
	}
}

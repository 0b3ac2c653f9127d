package cluster

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStartFailsCleanly: a cluster whose proxy port is taken reports
// why, stops what it started and leaves no temporary directory (it used
// to panic on a nil cluster).
func TestStartFailsCleanly(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	before, _ := filepath.Glob(filepath.Join(os.TempDir(), "tair-up-*"))
	c, err := Start(Options{DataServers: 1, ProxyPort: port})
	if err == nil {
		c.Close()
		t.Fatal("a cluster started with its proxy port taken")
	}
	if !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("error %q does not say the port is in use", err)
	}
	after, _ := filepath.Glob(filepath.Join(os.TempDir(), "tair-up-*"))
	if len(after) > len(before) {
		t.Fatalf("temporary directories left: %v (before %v)", after, before)
	}
}

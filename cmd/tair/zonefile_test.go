package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tairkv/tair/internal/wire"
)

// --zone-file (how a Kubernetes dataserver learns its node's zone, which
// an init container writes): the dataserver's heartbeats carry the
// file's zone, --zone wins over it, and a missing file stops the start.
func TestDataserverZoneFile(t *testing.T) {
	zones := make(chan string, 64)
	cs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == "/v1/heartbeat" {
			var hb wire.Heartbeat
			if json.NewDecoder(r.Body).Decode(&hb) == nil {
				select {
				case zones <- hb.Zone:
				default:
				}
			}
			_ = json.NewEncoder(w).Encode(wire.HeartbeatReply{})
			return
		}
		time.Sleep(100 * time.Millisecond)
		w.WriteHeader(http.StatusNotModified)
	}))
	defer cs.Close()
	csAddr := strings.TrimPrefix(cs.URL, "http://")
	file := filepath.Join(t.TempDir(), "zone")
	if err := os.WriteFile(file, []byte("zone-b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	firstZone := func(args ...string) string {
		t.Helper()
		for len(zones) > 0 {
			<-zones
		}
		p := startTair(t, nil, append([]string{"dataserver", "--configserver", csAddr,
			"--listen", freeAddr(t), "--http", freeAddr(t)}, args...)...)
		defer p.cmd.Process.Kill()
		select {
		case z := <-zones:
			return z
		case <-time.After(20 * time.Second):
			t.Fatalf("no heartbeat from the dataserver; its log:\n%s", p.logged())
			return ""
		}
	}
	if z := firstZone("--zone-file", file); z != "zone-b" {
		t.Errorf("with --zone-file: heartbeat zone %q, want zone-b", z)
	}
	if z := firstZone("--zone-file", file, "--zone", "zone-a"); z != "zone-a" {
		t.Errorf("with --zone and --zone-file: heartbeat zone %q, want zone-a", z)
	}
	bin, err := tairBinary()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "dataserver", "--configserver", csAddr, "--listen", freeAddr(t),
		"--http", freeAddr(t), "--zone-file", filepath.Join(t.TempDir(), "missing"))
	outb, err := cmd.CombinedOutput()
	if out := string(outb); err == nil || !strings.Contains(out, "--zone-file") {
		t.Errorf("a missing --zone-file: err %v, output %q; want a failed start naming --zone-file", err, out)
	}
}

package testcluster

import (
	"net"
	"strings"
	"testing"
)

// A first start whose port another process took after FreePort picked it
// starts again on new ports (seen in the chaos suite: a dataserver's
// --http port taken, the run failed before any fault).
func TestStartRepicksATakenPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	taken := ln.Addr().String()
	p := NewProc(t, "dataserver", "--configserver", "127.0.0.1:1")
	for i := range p.Args {
		if p.Args[i] == p.HTTP {
			p.Args[i] = taken
		}
	}
	p.HTTP = taken
	p.Start()
	if p.HTTP == taken || !strings.Contains(strings.Join(p.Args, " "), "--http "+p.HTTP) {
		t.Fatalf("started with --http %s (args %v); want a new port instead of the taken %s", p.HTTP, p.Args, taken)
	}
	if _, err := p.Status(); err != nil {
		t.Fatalf("/status on the new port: %v", err)
	}
}

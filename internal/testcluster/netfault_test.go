package testcluster

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tairkv/tair/internal/testutil"
)

// TestMain lets the test binary run as the network helper of
// TestNetFaultsCut (TAIR_NETFAULT_HELPER set); as the tests, it fails
// them when a goroutine they started still runs after the last (goleak).
func TestMain(m *testing.M) {
	if target := os.Getenv("TAIR_NETFAULT_HELPER"); target != "" {
		netHelper(target)
		return
	}
	goleak.VerifyTestMain(m, testutil.GnetPool...) // cluster links gnet in
}

// greet answers every connection l accepts with line and closes it,
// until l is closed.
func greet(l net.Listener, line string) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		_, _ = c.Write([]byte(line))
		c.Close()
	}
}

// netHelper accepts TCP connections (answering "hi\n"), sends a UDP
// "ping" to target every 20 ms, and echoes every UDP datagram it gets.
func netHelper(target string) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	uc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	dst, err := net.ResolveUDPAddr("udp", target)
	if err != nil {
		panic(err)
	}
	fmt.Printf("tcp=%s udp=%s\n", l.Addr(), uc.LocalAddr())
	go greet(l, "hi\n")
	go func() {
		for {
			_, _ = uc.WriteTo([]byte("ping"), dst)
			time.Sleep(20 * time.Millisecond)
		}
	}()
	buf := make([]byte, 64)
	for {
		n, from, err := uc.ReadFrom(buf)
		if err != nil {
			return
		}
		if string(buf[:n]) == "echo?" {
			_, _ = uc.WriteTo([]byte("echo!"), from)
		}
	}
}

// Each direction of a cut drops what it says and only that, for a
// process started in its cgroup, and Heal restores the traffic; the
// test process's own loopback traffic is never touched.
func TestNetFaultsCut(t *testing.T) {
	n := RequireNetFaults(t)
	p := &Proc{t: t, Kind: "helper"}
	if err := n.Attach(p); err != nil {
		t.Fatal(err)
	}
	uc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer uc.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "TAIR_NETFAULT_HELPER="+uc.LocalAddr().String())
	dir, err := os.Open(p.Cgroup)
	if err != nil {
		t.Fatal(err)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: int(dir.Fd())}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	dir.Close()
	p.cmd = cmd
	t.Cleanup(p.Kill)
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("helper: %v", err)
	}
	var tcpAddr, udpAddr string
	if _, err := fmt.Sscanf(strings.TrimSpace(line), "tcp=%s udp=%s", &tcpAddr, &udpAddr); err != nil {
		t.Fatalf("helper said %q: %v", line, err)
	}
	helperUDP, err := net.ResolveUDPAddr("udp", udpAddr)
	if err != nil {
		t.Fatal(err)
	}
	// A connection inside the test process, which no cut may touch.
	own, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer own.Close()
	go greet(own, "own\n")

	type seen struct{ pings, echoes, tcp, own bool }
	observe := func() seen {
		var s seen
		deadline := time.Now().Add(700 * time.Millisecond)
		buf := make([]byte, 64)
		for time.Now().Before(deadline) {
			_, _ = uc.WriteTo([]byte("echo?"), helperUDP)
			_ = uc.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
			for {
				k, _, err := uc.ReadFrom(buf)
				if err != nil {
					break
				}
				switch string(buf[:k]) {
				case "ping":
					s.pings = true
				case "echo!":
					s.echoes = true
				}
			}
		}
		read := func(addr, want string) bool {
			c, err := net.DialTimeout("tcp", addr, 300*time.Millisecond)
			if err != nil {
				return false
			}
			defer c.Close()
			_ = c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
			got, err := bufio.NewReader(c).ReadString('\n')
			return err == nil && got == want
		}
		s.tcp = read(tcpAddr, "hi\n")
		s.own = read(own.Addr().String(), "own\n")
		return s
	}
	// drain drops the datagrams that queued before a change.
	drain := func() {
		time.Sleep(50 * time.Millisecond)
		buf := make([]byte, 64)
		for {
			_ = uc.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
			if _, _, err := uc.ReadFrom(buf); err != nil {
				return
			}
		}
	}
	open := seen{pings: true, echoes: true, tcp: true, own: true}
	if got := observe(); got != open {
		t.Fatalf("before any cut: %+v, want %+v", got, open)
	}
	for _, c := range []struct {
		d    Direction
		want seen
	}{
		// In: its pings still leave; nothing reaches it (no echo, no
		// connection).
		{In, seen{pings: true, own: true}},
		// Out: nothing leaves it: no ping, no echo, no answer.
		{Out, seen{own: true}},
		{Both, seen{own: true}},
	} {
		if err := n.Cut(p, c.d); err != nil {
			t.Fatal(err)
		}
		drain()
		if got := observe(); got != c.want {
			t.Errorf("cut %v: %+v, want %+v", c.d, got, c.want)
		}
		if err := n.Heal(p); err != nil {
			t.Fatal(err)
		}
		drain()
		if got := observe(); got != open {
			t.Errorf("healed after %v: %+v, want %+v", c.d, got, open)
		}
	}
}

package testutil

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"
)

// StartRedis starts a plain redis-server on a free 127.0.0.1 port for the
// differential tests and returns its address; it is killed at cleanup.
// When redis-server is not installed the test is skipped, except in CI
// (CI or TAIR_REQUIRE_REDIS set), where a missing redis-server fails the
// test instead: `make tools` installs it.
func StartRedis(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") != "" || os.Getenv("TAIR_REQUIRE_REDIS") != "" {
			t.Fatal("redis-server not installed (make tools installs it)")
		}
		t.Skip("redis-server not installed (make tools installs it)")
	}
	port := FreePort(t)
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "",
		"--appendonly", "no", "--daemonize", "no", "--protected-mode", "no")
	if err := cmd.Start(); err != nil {
		t.Fatalf("redis-server: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	Eventually(t, 5*time.Second, func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	}, "redis-server did not start")
	return addr
}

// DialRedis starts a redis-server (see StartRedis) and connects to it
// (Dial).
func DialRedis(t testing.TB) (net.Conn, *bufio.Reader) {
	t.Helper()
	return Dial(t, StartRedis(t))
}

// Dial connects to addr for raw RESP; the connection is closed at
// cleanup and fails reads after 2 minutes instead of hanging the test.
func Dial(t testing.TB, addr string) (net.Conn, *bufio.Reader) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	_ = conn.SetDeadline(time.Now().Add(2 * time.Minute))
	return conn, bufio.NewReader(conn)
}

// ReadReply reads one complete raw RESP2 or RESP3 reply.
func ReadReply(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return "", fmt.Errorf("bad RESP line %q", line)
	}
	out := line
	body := line[1 : len(line)-2]
	switch line[0] {
	case '$', '=', '!':
		n, err := strconv.Atoi(body)
		if err != nil {
			return "", fmt.Errorf("bad RESP length %q", line)
		}
		if n < 0 {
			return out, nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return "", err
		}
		return out + string(buf), nil
	case '*', '~', '>', '%', '|':
		n, err := strconv.Atoi(body)
		if err != nil {
			return "", fmt.Errorf("bad RESP length %q", line)
		}
		if line[0] == '%' || line[0] == '|' {
			n *= 2
		}
		if line[0] == '|' {
			n++ // an attribute precedes the reply it describes
		}
		for i := 0; i < n; i++ {
			s, err := ReadReply(r)
			if err != nil {
				return "", err
			}
			out += s
		}
	}
	return out, nil
}

package resp

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tairkv/tair/internal/testutil"
)

// SplitArgs splits an inline request as redis-server's sdssplitargs
// does: each line goes to a real redis-server as an inline RPUSH, whose
// list then says how Redis split it; a line Redis refuses as unbalanced
// is one SplitArgs refuses.
func TestSplitArgsAgainstRedis(t *testing.T) {
	addr := testutil.StartRedis(t)
	lines := []string{
		`a b  c`,
		`ab"cd" x`, // a quote opens anywhere in an argument
		`ab'cd' x`,
		`"a b" 'c d'`,
		`"" ''`,
		`"\x41\x4a\x4" "\n\r\t\b\a\\\"\q"`,
		`'it\'s' 'a\b'`,
		`"q"r`, // a closing quote must end the argument
		`'q'r`,
		`"open`,
		`'open`,
		`a"b c"d`,
	}
	for _, line := range lines {
		conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
		r := bufio.NewReader(conn)
		if _, err := conn.Write([]byte("DEL l\r\nRPUSH l " + line + "\r\nLRANGE l 0 -1\r\n")); err != nil {
			t.Fatal(err)
		}
		var redisArgs []string
		redisErr := ""
		if _, err := r.ReadString('\n'); err != nil { // DEL
			t.Fatal(err)
		}
		first, err := r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(first, "-") {
			redisErr = strings.TrimSpace(first)
		} else {
			hdr, _ := r.ReadString('\n') // LRANGE's array
			var n int
			if _, err := fmt.Sscan(hdr[1:], &n); err != nil {
				t.Fatalf("%q: LRANGE answered %q", line, hdr)
			}
			for range n {
				h, err := r.ReadString('\n') // $len
				var size int
				if err == nil {
					_, err = fmt.Sscan(h[1:], &size)
				}
				if err != nil {
					t.Fatal(err)
				}
				v := make([]byte, size+2)
				if _, err := io.ReadFull(r, v); err != nil {
					t.Fatal(err)
				}
				redisArgs = append(redisArgs, string(v[:size]))
			}
		}
		conn.Close()

		got, err := SplitArgs([]byte("RPUSH l " + line))
		if redisErr != "" {
			if err == nil || !strings.Contains(redisErr, "unbalanced quotes") {
				t.Errorf("%q: Redis answered %s; SplitArgs gave %q, %v", line, redisErr, got, err)
			}
			continue
		}
		var gotArgs []string
		for _, a := range got[2:] {
			gotArgs = append(gotArgs, string(a))
		}
		if err != nil || !slices.Equal(gotArgs, redisArgs) {
			t.Errorf("%q: SplitArgs gave %q, %v; Redis split it as %q", line, gotArgs, err, redisArgs)
		}
	}
}

package dataserver

import (
	"bufio"
	"fmt"
	"testing"
	"time"

	"github.com/tairkv/tair/internal/luascript"
	"github.com/tairkv/tair/internal/route"
	"github.com/tairkv/tair/resp"
)

// BenchmarkReplicatedSet: SETs pipelined 16 to a round trip (as a proxy
// sends them) to a master whose buckets have copies-1 slaves, all in this
// process: ns/op and allocs/op are the whole write path's, the slave's
// apply included, per SET. Issue 16's replication cost: compare copies=2
// with copies=1.
func BenchmarkReplicatedSet(b *testing.B) {
	for _, copies := range []int{1, 2} {
		b.Run(fmt.Sprintf("copies=%d", copies), func(b *testing.B) {
			const q, depth = 64, 16
			c := benchNodes(b, q, copies)
			// Keys of the buckets the first node masters.
			var cmds [][]string
			for i := 0; i < depth; i++ {
				bk := route.BucketID(uint32(i*copies) % q)
				cmds = append(cmds, x(1, "SET", keyIn("bench", bk, q, i), "value-of-sixteen"))
			}
			benchPipeline(b, c, cmds, func(reply []byte) bool { return string(reply) == "+OK\r\n" })
		})
	}
}

// BenchmarkPipelinedScript: EVALSHA of a read-modify-write script (GET,
// +1, SET) in envelopes pipelined 16 deep, as a proxy forwards a warm
// script on its loop, beside INCR of the same keys: issue 15's EVALSHA
// against INCR, on the dataserver alone (copy count 2).
func BenchmarkPipelinedScript(b *testing.B) {
	const incr = "local v = tonumber(redis.call('GET', KEYS[1]) or '0') + 1 redis.call('SET', KEYS[1], v) return v"
	sha := luascript.Sha1Hex([]byte(incr))
	for _, cmd := range []string{"INCR", "EVALSHA"} {
		b.Run(cmd, func(b *testing.B) {
			const q, depth, copies = 64, 16, 2
			c := benchNodes(b, q, copies)
			load := resp.AppendCommand(nil, []byte("TAIR.SCRIPT"), []byte("0"), []byte("TAIR.X"), []byte("0"), []byte("1"), []byte("2"),
				[]byte("SCRIPT"), []byte("LOAD"), []byte(incr))
			if _, err := c.roundTrip(load, 5*time.Second); err != nil {
				b.Fatal(err)
			}
			var cmds [][]string
			for i := 0; i < depth; i++ {
				k := keyIn("bench", route.BucketID(uint32(i*copies)%q), q, i)
				if cmd == "EVALSHA" {
					cmds = append(cmds, x(1, "EVALSHA", sha, "1", k))
				} else {
					cmds = append(cmds, x(1, "INCR", k))
				}
			}
			benchPipeline(b, c, cmds, func(reply []byte) bool { return reply[0] == ':' })
		})
	}
}

// benchNodes starts copies nodes under a fake configserver with a ring
// table of q buckets and connects to the first.
func benchNodes(b *testing.B, q uint32, copies int) *peerConn {
	cs := newFakeCS(b)
	var nodes []*Server
	var addrs []string
	for i := 0; i < copies; i++ {
		n := startNode(b, testConfig(cs.addr()))
		nodes, addrs = append(nodes, n), append(addrs, n.Addr())
	}
	cs.setTable(ringTable(1, q, copies, addrs...))
	waitVersion(b, 1, nodes...)
	c, err := dialPeer(nodes[0].Addr(), time.Second)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close() })
	return c
}

// benchPipeline sends cmds pipelined in one write per round trip until
// b.N commands ran, checking each one-line reply with ok.
func benchPipeline(b *testing.B, c *peerConn, cmds [][]string, ok func(reply []byte) bool) {
	batch := encodeCommands(cmds)
	_ = c.c.SetDeadline(time.Time{}) // (a round trip before set one)
	rd := bufio.NewReader(c.c)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += len(cmds) {
		if _, err := c.c.Write(batch); err != nil {
			b.Fatal(err)
		}
		for range cmds {
			line, err := rd.ReadSlice('\n')
			if err != nil || !ok(line) {
				b.Fatalf("reply %q, %v", line, err)
			}
		}
	}
}

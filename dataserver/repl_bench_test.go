package dataserver

import (
	"bufio"
	"fmt"
	"testing"
	"time"

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
			cs := newFakeCS(b)
			var nodes []*Server
			var addrs []string
			for i := 0; i < copies; i++ {
				n := startNode(b, testConfig(cs.addr()))
				nodes, addrs = append(nodes, n), append(addrs, n.Addr())
			}
			cs.setTable(ringTable(1, q, copies, addrs...))
			waitVersion(b, 1, nodes...)
			// Keys of the buckets the first node masters.
			var batch []byte
			for i := 0; i < depth; i++ {
				bk := route.BucketID(uint32(i*copies) % q)
				args := x(1, "SET", keyIn("bench", bk, q, i), "value-of-sixteen")
				bs := make([][]byte, len(args))
				for j, a := range args {
					bs[j] = []byte(a)
				}
				batch = resp.AppendCommand(batch, bs...)
			}
			c, err := dialPeer(nodes[0].Addr(), time.Second)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			rd := bufio.NewReader(c.c)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i += depth {
				if _, err := c.c.Write(batch); err != nil {
					b.Fatal(err)
				}
				for j := 0; j < depth; j++ {
					line, err := rd.ReadSlice('\n')
					if err != nil || string(line) != "+OK\r\n" {
						b.Fatalf("reply %q, %v", line, err)
					}
				}
			}
		})
	}
}

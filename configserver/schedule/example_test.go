package schedule_test

import (
	"fmt"

	"github.com/tairkv/tair/configserver/schedule"
)

// A cluster of three nodes gets a fourth: the destination keeps every
// copy it can, the new node takes its share, and Diff lists the moves.
func ExampleBuild() {
	nodes := []schedule.Node{{Addr: "a"}, {Addr: "b"}, {Addr: "c"}}
	o := schedule.Options{Buckets: 6, Copies: 2}
	serving, _ := schedule.Build(nil, nodes, o)
	fmt.Println("first:", serving)

	dest, _ := schedule.Build(serving, append(nodes, schedule.Node{Addr: "d"}), o)
	fmt.Println("dest: ", dest)
	for _, m := range schedule.Diff(serving, dest) {
		fmt.Printf("move bucket %d: %s -> %s\n", m.Bucket, m.From, m.To)
	}
	// Output:
	// first: [[a b] [c a] [b c] [a b] [c a] [b c]]
	// dest:  [[a b] [c a] [b c] [d a] [c d] [b d]]
	// move bucket 3: b -> d
	// move bucket 4: a -> d
	// move bucket 5: c -> d
}

package proccpu

import (
	"os"
	"runtime"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	got := Parse("proxy1 (cache on)=12, bad, ds=x,configserver=7")
	want := []Proc{{"proxy1 (cache on)", 12}, {"configserver", 7}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("Parse = %v, want %v", got, want)
	}
}

// TestSecondsCountsOwnCPU: the test's own process, spinning, shows its
// CPU time growing (by 50 ms, within 10 s of wall time however loaded
// the machine is); a process that does not exist is left out.
func TestSecondsCountsOwnCPU(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	procs := []Proc{{"me", os.Getpid()}, {"gone", 1 << 30}}
	before := Seconds(procs)
	if _, ok := before["gone"]; ok {
		t.Fatal("a process that does not exist has a CPU time")
	}
	x := 0
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		for i := 0; i < 1_000_000; i++ {
			x += i
		}
		if Seconds(procs)["me"]-before["me"] >= 0.05 {
			return
		}
	}
	t.Fatalf("own CPU grew by %.2f s in 10 s of spinning (x=%d)", Seconds(procs)["me"]-before["me"], x)
}

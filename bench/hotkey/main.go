// Command hotkey is the driver of bench/hotkey-push.sh: a skewed read
// load, where one key takes half the reads, through two proxies without
// the hot-key cache and two proxies with it (the same cluster: two
// dataservers), in alternating rounds, and the hot key's GET rate with
// the cache over without it beside issue 16's aim (at least 3x).
//
// Half the connections read the hot key, the other half random keys of
// the loaded set; each connection sends pipelines of GETs and waits for
// their replies (a closed loop), so a side that serves the hot key faster
// reads it more. Without the cache the two halves run at about the same
// rate (the hot key takes half the reads); the cache lets its half go
// faster.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"math/rand"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tairkv/tair/bench/internal/benchload"
	"github.com/tairkv/tair/bench/internal/proccpu"
)

const hotKey = "hot:key"

func main() {
	off := flag.String("off", "", "proxies without the hot-key cache, comma-separated")
	on := flag.String("on", "", "proxies with the hot-key cache, comma-separated")
	keys := flag.Int("keys", 100000, "keys loaded for the other half of the reads")
	conns := flag.Int("conns", 16, "connections per side (half read the hot key)")
	pipeline := flag.Int("pipeline", 16, "GETs per pipeline")
	dur := flag.Duration("time", 3*time.Second, "measured time per side and round")
	warm := flag.Duration("warm", 1500*time.Millisecond, "unmeasured load before each measurement (the detector's window)")
	rounds := flag.Int("rounds", 3, "rounds (each: off, then on)")
	aim := flag.Float64("aim", 3, "the aim: the hot key's rate with the cache over without")
	pidsFlag := flag.String("pids", "", "name=pid,... of the cluster's processes: each side's CPU by process is printed (Linux /proc)")
	flag.Parse()
	procs := parseProcs(*pidsFlag)
	offs, ons := split(*off), split(*on)
	if len(offs) == 0 || len(ons) == 0 {
		fail("-off and -on are needed")
	}
	ctx := context.Background()
	if err := benchload.Load(ctx, offs[0], 0, *keys, 3); err != nil {
		fail("load: %v", err)
	}
	cl := redis.NewClient(&redis.Options{Addr: offs[0]})
	if err := cl.Set(ctx, hotKey, benchload.Value(-1, 0), 0).Err(); err != nil {
		fail("SET %s: %v", hotKey, err)
	}
	_ = cl.Close()

	fmt.Printf("%d keys loaded (16 B keys, 32 B values); %d connections per side over its %d proxies, half reading %q, half random keys; pipelines of %d GETs; %v measured per side and round after %v of warm-up\n\n",
		*keys, *conns, len(offs), hotKey, *pipeline, *dur, *warm)
	fmt.Println("| round | side | hot key GET/s | other GET/s | all GET/s | hot key's share |")
	fmt.Println("|---|---|---:|---:|---:|---:|")
	var hotOff, hotOn []float64
	cpuBySide := map[string]map[string]float64{} // side -> process -> cores, summed over rounds
	for r := 1; r <= *rounds; r++ {
		for _, side := range []struct {
			name  string
			addrs []string
			hot   *[]float64
		}{{"cache off", offs, &hotOff}, {"cache on", ons, &hotOn}} {
			run(side.addrs, *keys, *conns, *pipeline, *warm) // warm-up
			before, t0 := proccpu.Seconds(procs), time.Now()
			hot, other := run(side.addrs, *keys, *conns, *pipeline, *dur)
			after, el := proccpu.Seconds(procs), time.Since(t0).Seconds()
			if cpuBySide[side.name] == nil {
				cpuBySide[side.name] = map[string]float64{}
			}
			for name, t := range after {
				cpuBySide[side.name][name] += (t - before[name]) / el / float64(*rounds)
			}
			*side.hot = append(*side.hot, hot)
			fmt.Printf("| %d | %s | %.0f | %.0f | %.0f | %.0f %% |\n", r, side.name, hot, other, hot+other, 100*hot/(hot+other))
		}
	}
	ratio := median(hotOn) / median(hotOff)
	verdict := "met"
	if ratio < *aim {
		verdict = "**missed**"
	}
	fmt.Println()
	fmt.Println("| aim | bound | measured | |")
	fmt.Println("|---|---|---|---|")
	fmt.Printf("| hot key's GET rate, cache on / off (medians %.0f / %.0f) | at least %gx | %.2f | %s |\n", median(hotOn), median(hotOff), *aim, ratio, verdict)
	if len(procs) > 0 {
		printCPU(procs, cpuBySide)
	}
	fmt.Println()
	for _, a := range ons {
		fmt.Printf("%s (cache on): %s\n", a, cacheStats(a))
	}
}

// run reads for d through addrs and returns the hot key's and the other
// keys' GETs per second. The connections speak RESP themselves
// (pre-encoded pipelines, replies counted as they are scanned), as
// redis-benchmark does: on a machine whose cores the cluster shares, a
// client library's cost per command would be what is measured.
func run(addrs []string, keys, conns, pipeline int, d time.Duration) (hot, other float64) {
	var nHot, nOther, nErr atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < conns; i++ {
		addr := addrs[i%len(addrs)]
		isHot := (i/len(addrs))%2 == 0
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.Dial("tcp", addr)
			if err != nil {
				nErr.Add(1)
				return
			}
			defer c.Close()
			rd := bufio.NewReaderSize(c, 64<<10)
			rng := rand.New(rand.NewSource(int64(i)))
			var req []byte
			if isHot {
				for j := 0; j < pipeline; j++ {
					req = appendGet(req, hotKey)
				}
			}
			n := &nOther
			if isHot {
				n = &nHot
			}
			for {
				select {
				case <-stop:
					return
				default:
				}
				if !isHot {
					req = req[:0]
					for j := 0; j < pipeline; j++ {
						req = appendGet(req, benchload.Key(rng.Intn(keys)))
					}
				}
				if _, err := c.Write(req); err != nil {
					nErr.Add(1)
					return
				}
				for j := 0; j < pipeline; j++ {
					if err := readBulk(rd); err != nil {
						nErr.Add(1)
						return
					}
				}
				n.Add(int64(pipeline))
			}
		}()
	}
	start := time.Now()
	time.Sleep(d)
	h, o := nHot.Load(), nOther.Load()
	el := time.Since(start)
	close(stop)
	wg.Wait()
	if n := nErr.Load(); n > 0 {
		fmt.Fprintf(os.Stderr, "%d connections failed\n", n)
	}
	return float64(h) / el.Seconds(), float64(o) / el.Seconds()
}

func appendGet(b []byte, key string) []byte {
	b = append(b, "*2\r\n$3\r\nGET\r\n$"...)
	b = strconv.AppendInt(b, int64(len(key)), 10)
	b = append(b, "\r\n"...)
	b = append(b, key...)
	return append(b, "\r\n"...)
}

// readBulk reads one bulk-string reply (or nil); anything else is an
// error.
func readBulk(rd *bufio.Reader) error {
	line, err := rd.ReadSlice('\n')
	if err != nil {
		return err
	}
	if len(line) < 4 || line[0] != '$' {
		return fmt.Errorf("reply %q", line)
	}
	n, err := strconv.Atoi(string(line[1 : len(line)-2]))
	if err != nil {
		return err
	}
	if n < 0 {
		return nil
	}
	_, err = rd.Discard(n + 2)
	return err
}

func cacheStats(addr string) string {
	cl := redis.NewClient(&redis.Options{Addr: addr})
	defer cl.Close()
	info, err := cl.Info(context.Background(), "stats").Result()
	if err != nil {
		return err.Error()
	}
	var out []string
	for _, line := range strings.Split(info, "\r\n") {
		if strings.HasPrefix(line, "hot_cache_") {
			out = append(out, line)
		}
	}
	return strings.Join(out, " ")
}

// parseProcs reads -pids; the driver itself is added last.
func parseProcs(s string) []proccpu.Proc {
	if s == "" {
		return nil
	}
	return append(proccpu.Parse(s), proccpu.Proc{Name: "driver (the load)", PID: os.Getpid()})
}

// printCPU prints the cores each process used during the measured time,
// by side (the mean over rounds): whether a side was bound by the CPU of
// the machine, and by whose.
func printCPU(procs []proccpu.Proc, bySide map[string]map[string]float64) {
	fmt.Println()
	fmt.Println("| process | cores, cache off | cores, cache on |")
	fmt.Println("|---|---:|---:|")
	var off, on float64
	for _, p := range procs {
		fmt.Printf("| %s | %.2f | %.2f |\n", p.Name, bySide["cache off"][p.Name], bySide["cache on"][p.Name])
		off += bySide["cache off"][p.Name]
		on += bySide["cache on"][p.Name]
	}
	fmt.Printf("| all | %.2f | %.2f |\n", off, on)
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

func split(s string) []string {
	var out []string
	for _, a := range strings.Split(s, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

func fail(f string, a ...any) {
	fmt.Fprintf(os.Stderr, "hotkey: "+f+"\n", a...)
	os.Exit(1)
}

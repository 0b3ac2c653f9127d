// Command heap is the driver of bench/heap.sh (make bench's step 8): it
// measures what issue 16's heap aim names, "10 million keys in one
// dataserver with GET p99 under load no worse than with 100 thousand".
//
// Two clusters of one dataserver each run side by side: --small keys
// (16-byte keys, 32-byte values) are loaded through the first one's proxy
// and --large keys through the second's. Then one paced steady load (half
// GET, half SET) alternates between them in --slice slices for twice
// --window, so each gets --window of load, and noise from the rest of the
// machine (these machines are shared) falls on both alike; measured one
// after the other, a neighbour's burst decided the ratio (0.33x and 5x in
// two runs an hour apart). One collection cycle is forced in each
// dataserver a third into its share, in one of its own slices. Beside each
// count it reports the GETs' latency (from each request's scheduled time),
// the dataserver's heap per key, the GC cycles it ended and the CPU it
// used (from its /metrics), where in the run the slow GETs sit, and at the
// end the ratio of the two GET p99s beside the aim.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/tairkv/tair/bench/internal/benchload"
)

// side is one of the two clusters: its proxy, its dataserver's HTTP
// address and its key count.
type side struct {
	proxy, http string
	keys        int
}

func main() {
	proxySmall := flag.String("proxy", "127.0.0.1:6379", "proxy of the cluster loaded with --small keys")
	httpSmall := flag.String("dataserver-http", "", "HTTP address (/metrics) of that cluster's dataserver")
	proxyLarge := flag.String("proxy-large", "", "proxy of the cluster loaded with --large keys")
	httpLarge := flag.String("dataserver-http-large", "", "HTTP address of that cluster's dataserver")
	small := flag.Int("small", 100000, "keys of the first cluster")
	large := flag.Int("large", 10000000, "keys of the second cluster")
	clients := flag.Int("clients", 20, "client connections of the steady load, per cluster")
	rate := flag.Int("rate", 4000, "steady load while a cluster's slice runs, requests per second (half GET, half SET)")
	window := flag.Duration("window", 15*time.Second, "each cluster's share of the load")
	slice := flag.Duration("slice", time.Second, "how long the load stays on one cluster before it goes to the other")
	profile := flag.String("profile", "", "file for a CPU profile of the large count's dataserver during the run (empty: none)")
	label := flag.String("label", "tair", "what the two addresses run, for the aim's line (redis-server: an anchor, with --dataserver-http none)")
	flag.Parse()
	if *proxyLarge == "" || *httpSmall == "" || *httpLarge == "" {
		fail("--proxy-large, --dataserver-http and --dataserver-http-large are needed")
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	sides := [2]side{{*proxySmall, *httpSmall, *small}, {*proxyLarge, *httpLarge, *large}}

	var base, before, after [2]map[string]float64
	var took [2]time.Duration
	for i, sd := range sides {
		base[i] = metrics(sd.http)
		start := time.Now()
		if err := benchload.Load(ctx, sd.proxy, 0, sd.keys, 30); err != nil {
			fail("load: %v", err)
		}
		took[i] = time.Since(start)
	}
	time.Sleep(2 * time.Second) // the loads' garbage collected, as in steady state
	for i, sd := range sides {
		before[i] = metrics(sd.http)
	}
	total := 2 * *window
	var prof sync.WaitGroup
	if *profile != "" {
		prof.Add(1)
		go func() {
			defer prof.Done()
			cpuProfile(sides[1].http, *profile, total)
		}()
	}
	// One collection cycle in each dataserver, a third into its share and
	// in the middle of one of its slices: at this request rate the 10M-key
	// heap would not reach its next cycle for many minutes, so without it
	// the run would show the cost of a cycle at one count and not the
	// other.
	var gcTook [2]time.Duration
	var gcs sync.WaitGroup
	third := int(*window / *slice / 3)
	for i, sd := range sides {
		at := time.Duration(2*third+i)**slice + *slice/2
		gcs.Add(1)
		time.AfterFunc(at, func() { defer gcs.Done(); gcTook[i] = forceGC(sd.http) })
	}
	res := interleaved(sides, *clients, *rate, *slice, total)
	gcs.Wait()
	prof.Wait()
	for i, sd := range sides {
		after[i] = metrics(sd.http)
	}

	if *httpSmall != "none" {
		fmt.Printf("dataservers before the load: heap in use %.1f and %.1f MB\n\n", base[0]["go_memstats_heap_inuse_bytes"]/1e6, base[1]["go_memstats_heap_inuse_bytes"]/1e6)
	}
	fmt.Println("| keys | load time | GET p50 ms | GET p99 ms | GET p99.9 ms | GET max ms | GETs/s in its slices | errors | heap in use (B/key) | GC cycles ended in the run | dataserver CPU in the run | the forced cycle took |")
	fmt.Println("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	var p99 [2]time.Duration
	for i, sd := range sides {
		st := benchload.Summarize(res[i].gets, *window)
		p99[i] = st.P99
		heap := after[i]["go_memstats_heap_inuse_bytes"]
		fmt.Printf("| %d | %.1f s | %.3f | %.3f | %.3f | %.3f | %.0f | %d | %.0f MB (%.0f) | %.0f | %.1f s | %.2f s |\n",
			sd.keys, took[i].Seconds(), benchload.Ms(st.P50), benchload.Ms(st.P99), benchload.Ms(st.P999), benchload.Ms(st.Max),
			st.Rate, res[i].errs, heap/1e6, (heap-base[i]["go_memstats_heap_inuse_bytes"])/float64(sd.keys),
			after[i]["go_gc_duration_seconds_count"]-before[i]["go_gc_duration_seconds_count"],
			after[i]["process_cpu_seconds_total"]-before[i]["process_cpu_seconds_total"], gcTook[i].Seconds())
	}
	fmt.Println()
	fmt.Printf("GETs slower than %v in each of a count's slices, in order (its cycle is forced in slice %d):\n\n", slowGet, third)
	for i, sd := range sides {
		fmt.Printf("- %d keys: %v\n", sd.keys, res[i].slow)
	}
	if *profile != "" {
		fmt.Printf("\nCPU profile of the %d-key dataserver during the run: %s\n", *large, *profile)
	}
	r := float64(p99[1]) / float64(p99[0])
	verdict := "met"
	if r > 1 {
		verdict = "**missed**"
	}
	fmt.Println()
	fmt.Println("| aim | bound | measured | |")
	fmt.Println("|---|---|---|---|")
	fmt.Printf("| %s: GET p99 with %d keys / with %d keys (interleaved) | at most 1.0x | %.2f (%.3f / %.3f ms) | %s |\n",
		*label, *large, *small, r, benchload.Ms(p99[1]), benchload.Ms(p99[0]), verdict)
}

// slowGet is the latency above which a GET counts in the per-slice view
// of the tail (where it sits: around the forced cycle, or spread evenly).
const slowGet = 5 * time.Millisecond

// result is one cluster's share of the interleaved load.
type result struct {
	gets []time.Duration // GET latencies from their scheduled times
	slow []int           // GETs slower than slowGet per slice of the cluster
	errs int             // failed requests (GET or SET)
}

// interleaved runs the paced load for total: slice k (from 0) goes to
// sides[k%2], at rate requests a second over clients connections per
// cluster, each connection alternating GET and SET of random keys of
// its cluster (benchload.SteadyGated). A request is scheduled only inside
// its cluster's slices; one still running when the slice ends finishes
// late and counts late.
func interleaved(sides [2]side, clients, rate int, slice, total time.Duration) [2]result {
	var out [2]result
	var mu sync.Mutex
	for i := range out {
		out[i].slow = make([]int, int(total/slice+1)/2)
	}
	t0 := time.Now().Add(100 * time.Millisecond)
	stop := make(chan struct{})
	time.AfterFunc(time.Until(t0.Add(total)), func() { close(stop) })
	var wg sync.WaitGroup
	for i, sd := range sides {
		// Outside this cluster's slices: on to the start of its next one.
		gate := func(next time.Time, jitter time.Duration) time.Time {
			if next.Before(t0) {
				next = t0.Add(jitter)
			}
			if k := int(next.Sub(t0) / slice); k%2 != i {
				next = t0.Add(time.Duration(k+1)*slice + jitter)
			}
			return next
		}
		for c := 0; c < clients; c++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				calls := 0
				benchload.SteadyGated(sd.proxy, i*clients+c, sd.keys, float64(rate)/float64(clients), stop, gate,
					func(_ int, lt, _ time.Duration, err error) {
						calls++
						sched := time.Now().Add(-lt)
						mu.Lock()
						defer mu.Unlock()
						if err != nil {
							out[i].errs++
						}
						if benchload.IsGet(calls) {
							out[i].gets = append(out[i].gets, lt)
							if k := int(sched.Sub(t0)/slice) / 2; lt > slowGet && k >= 0 && k < len(out[i].slow) {
								out[i].slow[k]++
							}
						}
					})
			}()
		}
	}
	wg.Wait()
	return out
}

// forceGC makes the dataserver run one whole collection cycle (the
// runtime.GC that a heap profile with gc=1 runs first) and returns how
// long it took, the profile's writing included.
func forceGC(addr string) time.Duration {
	if addr == "none" {
		return 0
	}
	start := time.Now()
	resp, err := http.Get("http://" + addr + "/debug/pprof/heap?gc=1")
	if err != nil {
		fmt.Fprintf(os.Stderr, "heap: forcing a collection: %v\n", err)
		return 0
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return time.Since(start)
}

// cpuProfile saves a CPU profile of the dataserver of up to d (whole
// seconds) to file.
func cpuProfile(addr, file string, d time.Duration) {
	resp, err := http.Get(fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", addr, max(1, int(d.Seconds()))))
	if err != nil {
		fmt.Fprintf(os.Stderr, "heap: profile: %v\n", err)
		return
	}
	defer resp.Body.Close()
	f, err := os.Create(file)
	if err != nil {
		fmt.Fprintf(os.Stderr, "heap: profile: %v\n", err)
		return
	}
	defer f.Close()
	if _, err := io.Copy(f, resp.Body); err != nil {
		fmt.Fprintf(os.Stderr, "heap: profile: %v\n", err)
	}
}

// metrics reads the unlabelled samples of a /metrics page.
func metrics(addr string) map[string]float64 {
	out := map[string]float64{}
	if addr == "none" { // a redis-server anchor: no Go metrics
		return out
	}
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		fail("metrics: %v", err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || strings.Contains(line, "{") {
			continue
		}
		if name, v, ok := strings.Cut(line, " "); ok {
			if f, err := strconv.ParseFloat(v, 64); err == nil {
				out[name] = f
			}
		}
	}
	return out
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "heap: "+format+"\n", args...)
	os.Exit(1)
}

// Command heap is the driver of bench/heap.sh (make bench's step 8): it
// measures what issue 16's heap aim names, "10 million keys in one
// dataserver with GET p99 under load no worse than with 100 thousand". It
// loads --small keys (16-byte keys, 32-byte values) through the proxy,
// runs a paced steady load (half GET, half SET) for --window and takes
// the GETs' latency, then loads up to --large keys and runs the same load
// again. Beside each window it reports the dataserver's heap per key, the
// GC cycles it ended and the CPU it used (from its /metrics: at the same
// request rate, the difference is mostly the GC's marking of every key;
// one cycle is forced in each window), and at the end the ratio of the two GET p99s beside the aim.
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

func main() {
	proxy := flag.String("proxy", "127.0.0.1:6379", "proxy address")
	dsHTTP := flag.String("dataserver-http", "", "the dataserver's HTTP address (/metrics)")
	small := flag.Int("small", 100000, "keys of the first window")
	large := flag.Int("large", 10000000, "keys of the second window")
	clients := flag.Int("clients", 20, "client connections of the steady load")
	rate := flag.Int("rate", 4000, "steady load, requests per second in all (half GET, half SET)")
	window := flag.Duration("window", 15*time.Second, "how long each window is measured")
	profile := flag.String("profile", "", "file for a CPU profile of the dataserver taken during the large window (empty: none)")
	flag.Parse()
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()

	base := metrics(*dsHTTP)
	fmt.Printf("dataserver before the load: heap in use %.1f MB\n\n", base["go_memstats_heap_inuse_bytes"]/1e6)
	fmt.Println("| keys | load time | GET p50 ms | GET p99 ms | GET p99.9 ms | GET max ms | GETs/s | errors | heap in use (B/key) | GC cycles ended in the window | dataserver CPU in the window | the forced cycle took |")
	fmt.Println("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	var p99 [2]time.Duration
	loaded := 0
	for w, n := range []int{*small, *large} {
		start := time.Now()
		if err := benchload.Load(ctx, *proxy, loaded, n, 30); err != nil {
			fail("load: %v", err)
		}
		took := time.Since(start)
		loaded = n
		time.Sleep(2 * time.Second) // the load's garbage collected, as in steady state
		before := metrics(*dsHTTP)
		var prof sync.WaitGroup
		if w == 1 && *profile != "" {
			prof.Add(1)
			go func() {
				defer prof.Done()
				cpuProfile(*dsHTTP, *profile, *window)
			}()
		}
		// One collection cycle in every window, a third of the way in: at
		// this request rate the 10M-key heap would not reach its next
		// cycle for many minutes, so without it the window would show
		// the cost of a cycle at one count and not the other.
		gcDone := make(chan time.Duration, 1)
		time.AfterFunc(*window/3, func() { gcDone <- forceGC(*dsHTTP) })
		st, errs := steady(*proxy, n, *clients, *rate, *window)
		gcTook := <-gcDone
		after := metrics(*dsHTTP)
		prof.Wait()
		heap := after["go_memstats_heap_inuse_bytes"]
		p99[w] = st.P99
		fmt.Printf("| %d | %.1f s | %.3f | %.3f | %.3f | %.3f | %.0f | %d | %.0f MB (%.0f) | %.0f | %.1f s | %.2f s |\n",
			n, took.Seconds(), benchload.Ms(st.P50), benchload.Ms(st.P99), benchload.Ms(st.P999), benchload.Ms(st.Max),
			st.Rate, errs, heap/1e6, (heap-base["go_memstats_heap_inuse_bytes"])/float64(n),
			after["go_gc_duration_seconds_count"]-before["go_gc_duration_seconds_count"],
			after["process_cpu_seconds_total"]-before["process_cpu_seconds_total"], gcTook.Seconds())
	}
	r := float64(p99[1]) / float64(p99[0])
	verdict := "met"
	if r > 1 {
		verdict = "**missed**"
	}
	fmt.Println()
	fmt.Println("| aim | bound | measured | |")
	fmt.Println("|---|---|---|---|")
	fmt.Printf("| GET p99 with %d keys / with %d keys | at most 1.0x | %.2f (%.3f / %.3f ms) | %s |\n",
		*large, *small, r, benchload.Ms(p99[1]), benchload.Ms(p99[0]), verdict)
}

// steady runs the paced load on n keys for d and returns the GETs'
// latencies (from their scheduled times) and the errors of all requests.
func steady(proxy string, n, clients, rate int, d time.Duration) (benchload.Stats, int) {
	stop := make(chan struct{})
	var mu sync.Mutex
	var gets []time.Duration
	errs := 0
	var wg sync.WaitGroup
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			calls := 0
			benchload.Steady(proxy, c, n, float64(rate)/float64(clients), stop, func(_ int, lt, _ time.Duration, err error) {
				calls++
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					errs++
				}
				if benchload.IsGet(calls) {
					gets = append(gets, lt)
				}
			})
		}()
	}
	time.Sleep(d)
	close(stop)
	wg.Wait()
	return benchload.Summarize(gets, d), errs
}

// forceGC makes the dataserver run one whole collection cycle (the
// runtime.GC that a heap profile with gc=1 runs first) and returns how
// long it took, the profile's writing included.
func forceGC(addr string) time.Duration {
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

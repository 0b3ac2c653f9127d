package benchload

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/tairkv/tair/internal/wire"
)

// Stats summarizes the latencies of a stretch of the steady load.
type Stats struct {
	N                   int
	Rate                float64 // requests a second
	P50, P99, P999, Max time.Duration
}

// Summarize sorts d (the latencies of el) and summarizes them.
func Summarize(d []time.Duration, el time.Duration) Stats {
	slices.Sort(d)
	s := Stats{N: len(d), Rate: float64(len(d)) / el.Seconds()}
	if len(d) > 0 {
		s.P50, s.P99, s.P999, s.Max = d[len(d)/2], d[len(d)*99/100], d[len(d)*999/1000], d[len(d)-1]
	}
	return s
}

func (s Stats) String() string {
	return fmt.Sprintf("%d requests, %.0f/s, p50 %.3f ms, p99 %.3f ms, p99.9 %.3f ms, max %.3f ms",
		s.N, s.Rate, Ms(s.P50), Ms(s.P99), Ms(s.P999), Ms(s.Max))
}

// Ms is d in milliseconds.
func Ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// NodeKeys is the key copies each node reported in its last heartbeat
// (every copy it holds, all areas).
func NodeKeys(ctx context.Context, cs *wire.Client) (map[string]int64, error) {
	c, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var st map[string]map[uint16]wire.AreaStats
	if err := cs.Get(c, "/v1/stats", &st); err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for node, areas := range st {
		for _, a := range areas {
			out[node] += a.Keys
		}
	}
	return out, nil
}

// Package testcluster is the integration-test harness. New starts a whole
// cluster in the test's process (configservers, dataservers, proxies on
// free loopback ports) and tears it down with t.Cleanup; Procs starts the
// same roles as real child processes of the `tair` binary, for fault tests
// that kill -9, SIGSTOP and restart them.
package testcluster

import (
	"context"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tairkv/tair/cluster"
	"github.com/tairkv/tair/internal/route"
)

// Options are cluster.Options; Verbose sends component logs to the test log.
type Options struct {
	cluster.Options
	Verbose bool
}

// Cluster is an in-process cluster owned by one test.
type Cluster struct {
	*cluster.Cluster
	t testing.TB
}

// New starts a cluster and registers its teardown.
func New(t testing.TB, o Options) *Cluster {
	t.Helper()
	if o.Dir == "" {
		o.Dir = t.TempDir()
	}
	if o.Verbose || os.Getenv("TAIR_TEST_VERBOSE") != "" {
		o.Log = slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	c, err := cluster.Start(o.Options)
	if err != nil {
		t.Fatalf("testcluster: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return &Cluster{Cluster: c, t: t}
}

// Client returns a go-redis client of proxy i, closed at cleanup.
func (c *Cluster) Client(i int) *redis.Client {
	cl := redis.NewClient(&redis.Options{Addr: c.Proxies[i].Addr(), MaxRetries: -1})
	c.t.Cleanup(func() { _ = cl.Close() })
	return cl
}

// Table returns the configserver's current table.
func (c *Cluster) Table() *route.Table {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	t, err := c.Cluster.Table(ctx)
	if err != nil {
		c.t.Fatalf("testcluster: table: %v", err)
	}
	return t
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}

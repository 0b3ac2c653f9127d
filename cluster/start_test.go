package cluster

import (
	"testing"

	"github.com/redis/go-redis/v9"
)

// startWithClient starts a cluster for one test and a go-redis client of
// its first proxy (no retries, RESP protocol given: 0 is go-redis's
// default), both closed when the test ends.
func startWithClient(t *testing.T, o Options, protocol int) (*Cluster, *redis.Client) {
	t.Helper()
	c, err := Start(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	p := redis.NewClient(&redis.Options{Addr: c.Proxies[0].Addr(), MaxRetries: -1, Protocol: protocol})
	t.Cleanup(func() { p.Close() })
	return c, p
}

// Package benchload is the client side both bench drivers (bench/migration
// and bench/recovery) put on the proxy: the keys and values they load, the
// bulk load, the steady paced GET/SET load whose latency they measure, and
// the summary of those latencies.
package benchload

import (
	"context"
	"fmt"
	"math/rand"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Key is loaded key i: 16 bytes.
func Key(i int) string { return fmt.Sprintf("k:%014d", i) }

// Value is key i's value of generation gen (0: the load's): 32 bytes.
func Value(i int, gen int) string { return fmt.Sprintf("v%09d-%021d", i, gen) }

// Load SETs keys from..to-1 with pipelines of 1000 on 8 connections. A
// pipeline that fails is sent again (SET is idempotent), a second apart,
// until it has been tried tries times.
func Load(ctx context.Context, addr string, from, to, tries int) error {
	cl := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 8})
	defer cl.Close()
	var next atomic.Int64
	next.Store(int64(from))
	errc := make(chan error, 8)
	for g := 0; g < 8; g++ {
		go func() {
			for {
				i := int(next.Add(1000)) - 1000
				if i >= to {
					errc <- nil
					return
				}
				var err error
				for try := 0; try < tries; try++ {
					if try > 0 {
						time.Sleep(time.Second)
					}
					pipe := cl.Pipeline()
					for j := i; j < min(to, i+1000); j++ {
						pipe.Set(ctx, Key(j), Value(j, 0), 0)
					}
					if _, err = pipe.Exec(ctx); err == nil || ctx.Err() != nil {
						break
					}
				}
				if err != nil {
					errc <- err
					return
				}
			}
		}()
	}
	for g := 0; g < 8; g++ {
		if err := <-errc; err != nil {
			return err
		}
	}
	return nil
}

// IsGet reports whether a client's n-th request of Steady (from 1) is
// a GET: they alternate, GET first.
func IsGet(n int) bool { return n%2 == 1 }

// Steady sends paced GETs and SETs of random keys of 0..n-1 on one
// connection (client id, perSec requests a second) until stop closes,
// and hands done each request's key, latency (from its scheduled time),
// service latency (from when it was sent) and error.
func Steady(addr string, id, n int, perSec float64, stop <-chan struct{}, done func(i int, lt, svc time.Duration, err error)) {
	SteadyGated(addr, id, n, perSec, stop, nil, done)
}

// SteadyGated is Steady whose requests go only when gate lets them: a
// request scheduled at next goes at gate(next, jitter) instead (next, or
// a later time when next falls where the caller sends nothing), its
// latency counted from then, and the schedule goes on from there. jitter
// is a random offset below the request interval, for a gate that moves
// many clients to the same time to spread them. A nil gate lets every
// request go when scheduled.
func SteadyGated(addr string, id, n int, perSec float64, stop <-chan struct{}, gate func(next time.Time, jitter time.Duration) time.Time, done func(i int, lt, svc time.Duration, err error)) {
	cl := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 1, MaxRetries: -1, ReadTimeout: 10 * time.Second})
	defer cl.Close()
	rng := rand.New(rand.NewSource(int64(id)))
	interval := time.Duration(float64(time.Second) / perSec)
	next := time.Now().Add(time.Duration(rng.Int63n(int64(interval))))
	for gen := 1; ; gen++ {
		if gate != nil {
			next = gate(next, time.Duration(rng.Int63n(int64(interval))))
		}
		if d := time.Until(next); d > 0 {
			select {
			case <-stop:
				return
			case <-time.After(d):
			}
		} else {
			select {
			case <-stop:
				return
			default:
			}
		}
		// Latency counts from the scheduled time, so a stall is not
		// hidden by the requests it held back (coordinated omission).
		sched := next
		next = next.Add(interval)
		i := rng.Intn(n)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		sent := time.Now()
		var err error
		if !IsGet(gen) {
			err = cl.Set(ctx, Key(i), Value(i, gen), 0).Err()
		} else {
			err = cl.Get(ctx, Key(i)).Err()
		}
		cancel()
		done(i, time.Since(sched), time.Since(sent), err)
	}
}

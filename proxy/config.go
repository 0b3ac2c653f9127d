package proxy

import (
	"errors"
	"fmt"
	"time"

	"github.com/tairkv/tair/internal/defaults"
)

// Config is a proxy's configuration. Zero values take the defaults of
// DefaultConfig (Adjust).
type Config struct {
	// Listen is the RESP address ("127.0.0.1:6379"; ":0" picks a port).
	Listen string
	// HTTP serves /metrics, /healthz and /status ("" = no HTTP server).
	HTTP string
	// ConfigServers are the configserver addresses (host:port). Empty:
	// the proxy waits for SetTable (tests).
	ConfigServers []string
	// Advertise is the address clients reach this proxy at, as CLUSTER
	// SLOTS/NODES show it ("" = the local address of each client's
	// connection).
	Advertise string
	// Peers are the other proxies' advertised addresses: CLUSTER
	// SLOTS/SHARDS/NODES share the 16384 slots among the live ones
	// (probed with PING every second).
	Peers []string
	// RequirePass is the password of the "default" user ("" = none).
	RequirePass string
	// Users maps further user names to passwords (AUTH user pass).
	Users map[string]string
	// MaxClients bounds client connections (default 10000).
	MaxClients int
	// MaxKeySize and MaxValueSize are the dataservers' limits (SPEC's
	// 1024 and 1 MiB by default). The proxy checks them only for writes
	// it splits over buckets (MSET, DEL, UNLINK), so that such a write
	// with one bad key is refused whole rather than applied in part.
	MaxKeySize   int
	MaxValueSize int
	// ReadFromSlave sends ReadOnly commands to any copy of their bucket
	// (TAIR.XR); slaves may lag the master by in-flight writes.
	ReadFromSlave bool
	// HotCacheTTL, when positive, serves GETs of hot keys (hotkey.Detector)
	// from a proxy-local cache whose entries live at most that long:
	// writes through this proxy invalidate at once, and any other change
	// of a cached key (a write through another proxy, an expiry, an
	// eviction, a move) is pushed by the key's master (hotpush.go); the
	// TTL is the backstop. 0 = off.
	HotCacheTTL time.Duration
	// HotCacheKeys and HotCacheBytes bound the cache (default 1024 keys,
	// 64 MiB).
	HotCacheKeys  int
	HotCacheBytes int
	// IdleTimeout closes a client idle that long (0 = never).
	IdleTimeout time.Duration
	// MaxBulkLen is the largest bulk string a client may send (default
	// 512 MiB, Redis's proto-max-bulk-len).
	MaxBulkLen int64
	// MaxMultiBulkLen is the largest argument count (default 1<<20).
	MaxMultiBulkLen int64
	// MaxInlineLen is the longest inline command line (default 64 KiB).
	MaxInlineLen int64
	// MaxOutputBuffer bounds a client's pending output in bytes (default
	// 256 MiB): the proxy stops reading a client whose replies are not
	// being read, and closes it once its pending output is over this
	// limit for longer than WriteTimeout.
	MaxOutputBuffer int64
	// WriteTimeout closes a client whose pending output stays over
	// MaxOutputBuffer for that long (default 30 s).
	WriteTimeout time.Duration
	// RetryBudget bounds the time spent retrying one command (NOTMASTER,
	// TRYAGAIN, lost connections; default 5 s: the configserver's failure
	// detection and promotion take about 2 s, and a configserver that
	// loses and regains its etcd lease meanwhile adds up to 2 s more) ...
	RetryBudget time.Duration
	// ... and RetryAttempts the attempts (default 30).
	RetryAttempts int
	// RequestTimeout fails a request a dataserver does not answer in
	// that long (default 4 s: longer than a write's longest legitimate
	// wait, replication timeout plus lease; shorter than common client
	// timeouts, so a paused dataserver costs the client a -TIMEOUT reply,
	// not its connection); the backend connection is reset.
	RequestTimeout time.Duration
	// DialTimeout bounds connecting to a dataserver (default 1 s).
	DialTimeout time.Duration
	// BackendConns is the number of pipelined connections per
	// dataserver (default 2).
	BackendConns int
	// EventLoops is the number of event loops serving clients (default
	// GOMAXPROCS; processes that run other roles too share the cores).
	EventLoops int
	// MaxPipeline is the largest batch of client commands handled at
	// once (default 512); more wait in the client's buffer.
	MaxPipeline int
	// StartTimeout is how long Start waits for a first table (default
	// 30 s).
	StartTimeout time.Duration
	// TablePoll is the long-poll wait of table refreshes (default 10 s).
	TablePoll time.Duration
	// SlowlogSlowerThan logs commands slower than this (default 10 ms;
	// negative disables); SlowlogMaxLen bounds the log (default 128).
	SlowlogSlowerThan time.Duration
	SlowlogMaxLen     int
	// PubSubHardLimit, PubSubSoftLimit and PubSubSoftSeconds are Redis's
	// client-output-buffer-limit pubsub (32 MiB, 8 MiB, 60 s): a
	// subscriber whose pending output is over the hard limit, or over the
	// soft limit for longer than PubSubSoftSeconds, is disconnected.
	// Negative: no such limit.
	PubSubHardLimit   int64
	PubSubSoftLimit   int64
	PubSubSoftSeconds time.Duration
	// PubSubPeerWait bounds how long PUBLISH and PUBSUB wait for the
	// other proxies' answers (default 100 ms); a proxy that has not
	// answered by then counts 0, and is not waited for again until it
	// has answered what it was sent.
	PubSubPeerWait time.Duration
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{
		Listen:            "127.0.0.1:6379",
		HTTP:              "127.0.0.1:8379",
		MaxClients:        10000,
		MaxKeySize:        1024,
		MaxValueSize:      1 << 20,
		MaxBulkLen:        512 << 20,
		MaxMultiBulkLen:   1 << 20,
		MaxInlineLen:      64 << 10,
		MaxOutputBuffer:   256 << 20,
		WriteTimeout:      30 * time.Second,
		RetryBudget:       5 * time.Second,
		RetryAttempts:     30,
		RequestTimeout:    4 * time.Second,
		DialTimeout:       time.Second,
		BackendConns:      2,
		MaxPipeline:       512,
		StartTimeout:      30 * time.Second,
		TablePoll:         10 * time.Second,
		SlowlogSlowerThan: 10 * time.Millisecond,
		SlowlogMaxLen:     128,
		HotCacheKeys:      1024,
		HotCacheBytes:     64 << 20,
		PubSubHardLimit:   32 << 20,
		PubSubSoftLimit:   8 << 20,
		PubSubSoftSeconds: 60 * time.Second,
		PubSubPeerWait:    100 * time.Millisecond,
	}
}

// Adjust fills zero values with the defaults. Most settings take them
// for negative values too; the slowlog threshold and the pub/sub limits
// keep a negative value, which turns them off.
func (c *Config) Adjust() {
	d := DefaultConfig()
	defaults.NotPositive(&c.MaxClients, d.MaxClients)
	defaults.NotPositive(&c.MaxKeySize, d.MaxKeySize)
	defaults.NotPositive(&c.MaxValueSize, d.MaxValueSize)
	defaults.NotPositive(&c.MaxBulkLen, d.MaxBulkLen)
	defaults.NotPositive(&c.MaxMultiBulkLen, d.MaxMultiBulkLen)
	defaults.NotPositive(&c.MaxInlineLen, d.MaxInlineLen)
	defaults.NotPositive(&c.MaxOutputBuffer, d.MaxOutputBuffer)
	defaults.NotPositive(&c.WriteTimeout, d.WriteTimeout)
	defaults.NotPositive(&c.RetryBudget, d.RetryBudget)
	defaults.NotPositive(&c.RetryAttempts, d.RetryAttempts)
	defaults.NotPositive(&c.RequestTimeout, d.RequestTimeout)
	defaults.NotPositive(&c.DialTimeout, d.DialTimeout)
	defaults.NotPositive(&c.BackendConns, d.BackendConns)
	defaults.NotPositive(&c.MaxPipeline, d.MaxPipeline)
	defaults.NotPositive(&c.StartTimeout, d.StartTimeout)
	defaults.NotPositive(&c.TablePoll, d.TablePoll)
	defaults.Unset(&c.SlowlogSlowerThan, d.SlowlogSlowerThan)
	defaults.NotPositive(&c.SlowlogMaxLen, d.SlowlogMaxLen)
	defaults.NotPositive(&c.HotCacheKeys, d.HotCacheKeys)
	defaults.NotPositive(&c.HotCacheBytes, d.HotCacheBytes)
	defaults.Unset(&c.PubSubHardLimit, d.PubSubHardLimit)
	defaults.Unset(&c.PubSubSoftLimit, d.PubSubSoftLimit)
	defaults.NotPositive(&c.PubSubSoftSeconds, d.PubSubSoftSeconds)
	defaults.NotPositive(&c.PubSubPeerWait, d.PubSubPeerWait)
}

// Validate checks the configuration.
func (c *Config) Validate() error {
	if c.Listen == "" {
		return errors.New("proxy: listen address is empty")
	}
	if c.BackendConns > 64 {
		return fmt.Errorf("proxy: backend-conns %d is over 64", c.BackendConns)
	}
	for u := range c.Users {
		if u == "" {
			return errors.New("proxy: user with an empty name")
		}
	}
	return nil
}

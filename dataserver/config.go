package dataserver

import (
	"fmt"
	"time"

	"github.com/tairkv/tair/engines"
	"github.com/tairkv/tair/internal/defaults"
)

// Replication modes (Config.ReplicationMode).
const (
	// ReplicationStrict fails a write with TIMEOUT when a slave has not
	// applied it within ReplicationTimeout.
	ReplicationStrict = "strict"
	// ReplicationDegraded acknowledges the write anyway, reports the slave
	// in the heartbeat's UnreachableSlaves and stops waiting for it until it
	// has caught up again.
	ReplicationDegraded = "degraded"
)

// Config configures one dataserver. Zero fields take DefaultConfig's values
// (Adjust).
type Config struct {
	// Listen is the RESP address; the bound address ("127.0.0.1:0" picks a
	// port) is the node's identity in the bucket table.
	Listen string
	// HTTP is the address of /metrics, /healthz and /status ("" = none).
	HTTP string
	// ConfigServers are the configservers' API addresses.
	ConfigServers []string
	// Engine is the storage engine's registered name (default "rdb").
	Engine string
	// Dir is the data directory of persistent engines.
	Dir string
	// Sync is the durability policy of persistent engines.
	Sync engines.SyncPolicy
	// MemoryLimit bounds an in-memory engine's bytes (0 = none).
	MemoryLimit int64
	// Now is the storage engine's clock, which decides what has expired
	// (nil: time.Now; tests set a skewed one).
	Now func() time.Time
	// Zone and Rack label the node for position-safe tables.
	Zone, Rack string

	// HeartbeatInterval is the period of heartbeats (default 500ms).
	HeartbeatInterval time.Duration
	// KickSpacing is the least time between two heartbeats that a kick
	// sends (kickSpacing in heartbeat.go; default 100ms).
	KickSpacing time.Duration
	// LeaseTimeout: the node acknowledges requests as master only while
	// its last successful heartbeat was sent less than this long ago. It
	// must be shorter than the configserver's down detection (4 heartbeat
	// intervals). Default 1.5s.
	LeaseTimeout time.Duration
	// StallTimeout: a command of one connection, or a bucket's lock, that
	// makes no progress for this long makes the node report itself
	// unhealthy (watchdog.go). Default 10 heartbeat intervals, and at
	// least 4 replication timeouts (a command may wait 3 of them for a
	// forwarded request).
	StallTimeout time.Duration
	// BusyReplyThreshold: a script running longer makes the requests
	// for its bucket answer BUSY (Redis's busy-reply-threshold; default
	// 5s; script.go).
	BusyReplyThreshold time.Duration

	// ReplicationMode is "strict" or "degraded" (default).
	ReplicationMode string
	// ReplicationTimeout is how long a write waits for its slaves
	// (default 1s).
	ReplicationTimeout time.Duration
	// ReplicationBacklog is the most bytes kept for one unreachable slave
	// before it is given up (it then needs a rebuild). Default 256 MiB.
	ReplicationBacklog int64

	// ForwardGrace is how long requests for a bucket that moved away are
	// forwarded to its new master; the local copy is deleted after it.
	// Default 5s.
	ForwardGrace time.Duration
	// MigrateBatchMax is the ceiling of the adaptive migration batch
	// (records per message, default 2048).
	MigrateBatchMax int
	// MigrateBytesPerSec caps each move's copy rate (0 = no cap).
	MigrateBytesPerSec int64
	// MigrateMinBytesPerSec is the floor of the node's adaptive copy
	// rate (all its outgoing moves together; pace.go): while its clients'
	// mean latency is above twice MigrateLatencyTarget the rate halves
	// down to it, below the target it grows up to 16 times it. Default
	// 16 MiB/s; negative: no pacing.
	MigrateMinBytesPerSec int64
	// MigrateLatencyTarget is the mean client latency (from reading a
	// batch of proxy requests to writing its replies) under which
	// migrations speed up; above twice it they back off (default 2ms).
	MigrateLatencyTarget time.Duration
	// MigrateParallel is how many buckets this node moves at once
	// (default 32; the configserver limits the moves it schedules too).
	MigrateParallel int
	// EventLoops is the number of event loops serving connections
	// (default GOMAXPROCS; processes that run other roles too share the
	// cores).
	EventLoops int

	// MaxKeySize and MaxValueSize are SPEC's limits (1024, 1 MiB).
	MaxKeySize   int
	MaxValueSize int
	// ReadFromSlave lets TAIR.XR reads be served from a slave copy
	// (default true).
	ReadFromSlave bool
	// TrackingMaxKeys caps the keys this node tracks for proxies'
	// hot-key caches (default 65536); past it, registrations are dropped
	// by pushing their invalidation (tracking.go).
	TrackingMaxKeys int
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{
		Listen:                "127.0.0.1:5191",
		Engine:                "rdb",
		Sync:                  engines.SyncGroup,
		HeartbeatInterval:     500 * time.Millisecond,
		KickSpacing:           kickSpacing,
		LeaseTimeout:          1500 * time.Millisecond,
		ReplicationMode:       ReplicationDegraded,
		ReplicationTimeout:    time.Second,
		ReplicationBacklog:    256 << 20,
		ForwardGrace:          5 * time.Second,
		MigrateBatchMax:       2048,
		MigrateParallel:       32,
		MigrateMinBytesPerSec: 16 << 20,
		MigrateLatencyTarget:  2 * time.Millisecond,
		MaxKeySize:            1024,
		MaxValueSize:          1 << 20,
		ReadFromSlave:         true,
		TrackingMaxKeys:       65536,
	}
}

// Adjust fills zero fields with defaults (durations, counts and sizes
// of zero or less too); the lease and the stall timeout follow the
// heartbeat and replication timings when not given.
func (c *Config) Adjust() {
	d := DefaultConfig()
	defaults.Unset(&c.Listen, d.Listen)
	defaults.Unset(&c.Engine, d.Engine)
	defaults.Unset(&c.Sync, d.Sync)
	defaults.NotPositive(&c.HeartbeatInterval, d.HeartbeatInterval)
	defaults.NotPositive(&c.KickSpacing, d.KickSpacing)
	defaults.NotPositive(&c.LeaseTimeout, 3*c.HeartbeatInterval)
	defaults.Unset(&c.ReplicationMode, d.ReplicationMode)
	defaults.NotPositive(&c.ReplicationTimeout, d.ReplicationTimeout)
	defaults.NotPositive(&c.BusyReplyThreshold, 5*time.Second)
	defaults.NotPositive(&c.StallTimeout, max(10*c.HeartbeatInterval, 4*c.ReplicationTimeout))
	defaults.NotPositive(&c.ReplicationBacklog, d.ReplicationBacklog)
	defaults.NotPositive(&c.ForwardGrace, d.ForwardGrace)
	defaults.NotPositive(&c.MigrateBatchMax, d.MigrateBatchMax)
	defaults.Unset(&c.MigrateMinBytesPerSec, d.MigrateMinBytesPerSec)
	defaults.NotPositive(&c.MigrateLatencyTarget, d.MigrateLatencyTarget)
	defaults.NotPositive(&c.MigrateParallel, d.MigrateParallel)
	defaults.NotPositive(&c.MaxKeySize, d.MaxKeySize)
	defaults.NotPositive(&c.TrackingMaxKeys, d.TrackingMaxKeys)
	defaults.NotPositive(&c.MaxValueSize, d.MaxValueSize)
}

// Validate checks the config.
func (c *Config) Validate() error {
	switch c.ReplicationMode {
	case ReplicationStrict, ReplicationDegraded:
	default:
		return fmt.Errorf("dataserver: replication mode %q is neither strict nor degraded", c.ReplicationMode)
	}
	if len(c.ConfigServers) == 0 {
		return fmt.Errorf("dataserver: no configserver address")
	}
	if c.LeaseTimeout >= 4*c.HeartbeatInterval {
		return fmt.Errorf("dataserver: lease timeout %v must be shorter than 4 heartbeat intervals (%v)",
			c.LeaseTimeout, 4*c.HeartbeatInterval)
	}
	return nil
}

package configserver

import (
	"errors"
	"fmt"
	"time"

	"github.com/tairkv/tair/configserver/schedule"
	"github.com/tairkv/tair/internal/defaults"
	"github.com/tairkv/tair/internal/route"
)

// Config configures a configserver. Zero values are replaced by the
// defaults of DefaultConfig when the server is created.
type Config struct {
	// Name identifies this configserver in the election; its Listen
	// address when empty.
	Name string
	// Listen is the address of the cluster API (heartbeats, table long
	// poll, admin); "127.0.0.1:0" picks a free port.
	Listen string
	// HTTP is the address of /metrics, /healthz and /status.
	HTTP string
	// Etcd lists external etcd client endpoints (host:port). Empty: run an
	// embedded single-node etcd in EtcdDir.
	Etcd []string
	// EtcdDir is the embedded etcd's data directory; a temporary directory
	// (removed by Close) when empty.
	EtcdDir string
	// Copies is the number of copies of each bucket (master + slaves).
	// Default 2.
	Copies int
	// Buckets is Q, fixed for the cluster's life. Default 1023. A cluster
	// found in etcd keeps its own Q and copy count.
	Buckets uint32
	// HeartbeatInterval is how often dataservers report. Default 500ms.
	HeartbeatInterval time.Duration
	// DownAfter is the number of missed heartbeat intervals after which a
	// dataserver is down. Default 4.
	DownAfter int
	// Settle is how long the first table waits after the last dataserver
	// joined, so that a cluster starting together gets one table. Default 1s.
	Settle time.Duration
	// Strategy is "balance" (default) or "position-safe".
	Strategy string
	// BuildDiffRatio bounds how unequal zones may be for a position-safe
	// table (Tair's _build_diff_ratio). Default 0.6.
	BuildDiffRatio float64
	// MovesPerNode caps the rebalance moves running with the same source
	// node. Default 8: a move's own cost (its table version, the freeze,
	// the Done heartbeat) is tens of milliseconds whatever its size, so one
	// at a time moved 28k small keys/s and eight 139k (bench/RESULTS.md);
	// each copy still paces itself by its clients' latency.
	MovesPerNode int
	// RecoveryMovesPerNode caps the recovery moves (restoring a bucket's
	// copy count) running with the same source node, and with the same
	// destination. Default 8.
	RecoveryMovesPerNode int
	// MaxMoves caps the moves running in the whole cluster. Default 64.
	MaxMoves int
	// MoveStall is how long a running move may go unmentioned in its
	// source's heartbeats before it is restarted (the source restarted or
	// never saw it). Default 10s.
	MoveStall time.Duration
	// HandoffWindow is how long a down dataserver stays in the rows it
	// serves as a slave (marked behind its masters, which keep its missed
	// writes in their replication backlog and replay them when it comes
	// back) before its copies are rebuilt elsewhere. Rows it mastered get
	// a caught-up slave as master at once. Default 30s; negative turns
	// handoff off (a down node leaves every row at once).
	HandoffWindow time.Duration
	// LeaseTTL is the election lease; a standby takes over within about
	// this long after the leader dies. Whole seconds, default 2s.
	LeaseTTL time.Duration
	// EtcdPrefix is the key prefix of this cluster's state. Default "/tair".
	EtcdPrefix string
	// InvalidPeers are the proxies (host:port) of the peer clusters that
	// TAIR.INVALID reaches: the leader is the invalid server, queueing
	// each invalidation in etcd per peer until that peer has applied it.
	InvalidPeers []string
	// InvalidPeerAuth is what the invalid server AUTHs with on the peers'
	// proxies: "password" or "user:password" ("" = no AUTH).
	InvalidPeerAuth string
	// AdminToken, when set, is the admin credential every operator action
	// (POST /v1/admin) must carry (see auth.go); AdminTokenFile names a
	// file holding it instead.
	AdminToken     string
	AdminTokenFile string
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{
		Listen:               "127.0.0.1:5198",
		HTTP:                 "127.0.0.1:8198",
		Copies:               2,
		Buckets:              route.DefaultBuckets,
		HeartbeatInterval:    500 * time.Millisecond,
		DownAfter:            4,
		Settle:               time.Second,
		Strategy:             string(schedule.Balance),
		BuildDiffRatio:       schedule.DefaultDiffRatio,
		MovesPerNode:         8,
		RecoveryMovesPerNode: 8,
		MaxMoves:             64,
		MoveStall:            10 * time.Second,
		HandoffWindow:        30 * time.Second,
		LeaseTTL:             2 * time.Second,
		EtcdPrefix:           "/tair",
	}
}

// adjust fills zero values with the defaults.
func (c *Config) adjust() {
	d := DefaultConfig()
	defaults.Unset(&c.Copies, d.Copies)
	defaults.Unset(&c.Buckets, d.Buckets)
	defaults.Unset(&c.HeartbeatInterval, d.HeartbeatInterval)
	defaults.Unset(&c.DownAfter, d.DownAfter)
	defaults.Unset(&c.Settle, d.Settle)
	defaults.Unset(&c.Strategy, d.Strategy)
	defaults.Unset(&c.BuildDiffRatio, d.BuildDiffRatio)
	defaults.Unset(&c.MovesPerNode, d.MovesPerNode)
	defaults.Unset(&c.RecoveryMovesPerNode, d.RecoveryMovesPerNode)
	defaults.Unset(&c.MaxMoves, d.MaxMoves)
	defaults.Unset(&c.HandoffWindow, d.HandoffWindow)
	defaults.Unset(&c.MoveStall, d.MoveStall)
	defaults.Unset(&c.LeaseTTL, d.LeaseTTL)
	defaults.Unset(&c.EtcdPrefix, d.EtcdPrefix)
}

// Validate reports a config the server cannot run with.
func (c *Config) Validate() error {
	var errList []error
	if c.Listen == "" {
		errList = append(errList, errors.New("configserver: listen address is empty"))
	}
	if c.Copies < 1 {
		errList = append(errList, fmt.Errorf("configserver: copies %d < 1", c.Copies))
	}
	if c.Buckets < 1 {
		errList = append(errList, fmt.Errorf("configserver: buckets %d < 1", c.Buckets))
	}
	switch schedule.Strategy(c.Strategy) {
	case schedule.Balance, schedule.PositionSafe:
	default:
		errList = append(errList, fmt.Errorf("configserver: unknown strategy %q (balance or position-safe)", c.Strategy))
	}
	if c.LeaseTTL < time.Second {
		errList = append(errList, fmt.Errorf("configserver: lease TTL %v < 1s", c.LeaseTTL))
	}
	if c.DownAfter < 1 || c.HeartbeatInterval <= 0 {
		errList = append(errList, fmt.Errorf("configserver: heartbeat interval %v x %d does not detect failures", c.HeartbeatInterval, c.DownAfter))
	}
	return errors.Join(errList...)
}

// downAfter is how long a silent dataserver stays alive.
func (c *Config) downAfter() time.Duration {
	return c.HeartbeatInterval * time.Duration(c.DownAfter)
}

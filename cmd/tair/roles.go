package main

import (
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/viper"

	"github.com/tairkv/tair/configserver"
	"github.com/tairkv/tair/dataserver"
	"github.com/tairkv/tair/engines"
	"github.com/tairkv/tair/proxy"
)

// role is what each of configserver, dataserver and proxy offers.
type role interface {
	Start() error
	Addr() string
	HTTPAddr() string
	Close() error
}

// roleCmd builds the command that runs one role until SIGINT/SIGTERM.
func roleCmd(use, short string, flags func(*cobra.Command), build func(*viper.Viper, *slog.Logger) (role, error)) *cobra.Command {
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v, err := settings(cmd)
			if err != nil {
				return err
			}
			log := newLogger(v, use)
			r, err := build(v, log)
			if err != nil {
				return err
			}
			if err := r.Start(); err != nil {
				return err // the role's errors already name it
			}
			log.Info(use+" serving", "listen", r.Addr(), "http", r.HTTPAddr())
			return runUntilSignal(log, r)
		},
	}
	addConfigFlag(cmd)
	flags(cmd)
	return cmd
}

func configserverFlags(cmd *cobra.Command) {
	d := configserver.DefaultConfig()
	f := cmd.Flags()
	f.String("listen", "127.0.0.1:5198", "address of the cluster API (heartbeats, table)")
	f.String("http", "127.0.0.1:8198", "address of /metrics, /healthz and /status")
	f.StringSlice("etcd", nil, "external etcd endpoints host:port,...; empty embeds a single-node etcd")
	f.String("etcd-dir", "", "data directory of the embedded etcd (a temporary one when empty)")
	f.Int("copies", d.Copies, "copies of each bucket (master + slaves)")
	f.Int("buckets", int(d.Buckets), "number of buckets Q, fixed for the cluster's life")
	f.String("strategy", d.Strategy, "table strategy: balance or position-safe")
	f.String("name", "", "this configserver's name in the election (default: its listen address)")
	f.Duration("heartbeat-interval", d.HeartbeatInterval, "interval dataservers are expected to heartbeat at")
	f.Int("down-after", d.DownAfter, "missed heartbeat intervals after which a dataserver is down")
	f.Float64("build-diff-ratio", d.BuildDiffRatio, "position-safe: refuse to build when zones differ too much in size, that is when (largest zone - smallest zone) / largest zone, in dataservers, exceeds this ratio (Tair's _build_diff_ratio)")
	f.Int("moves-per-node", d.MovesPerNode, "concurrent rebalance moves per source dataserver")
	f.Int("recovery-moves-per-node", d.RecoveryMovesPerNode, "concurrent recovery moves (restoring a bucket's copy count) per source and per destination dataserver")
	f.Int("max-moves", d.MaxMoves, "concurrent bucket moves in the whole cluster")
	f.Duration("handoff-window", d.HandoffWindow, "how long a down dataserver keeps its slave copies (caught up from its masters' backlog when it returns) before they are rebuilt elsewhere; negative: rebuild at once")
	f.StringSlice("invalid-peers", nil, "proxies host:port,... of the peer clusters TAIR.INVALID also deletes in (queued in etcd while a peer is down)")
	f.String("invalid-peer-auth", "", "AUTH for the peer clusters' proxies: password or user:password")
	f.String("admin-token", "", "admin credential that operator actions (tair ctl's and the console's) must carry; empty: none needed")
	f.String("admin-token-file", "", "file holding the admin credential (its first line), instead of --admin-token")
}

func configserverConfig(v *viper.Viper) configserver.Config {
	c := configserver.DefaultConfig()
	c.Listen = v.GetString("listen")
	c.HTTP = v.GetString("http")
	c.Etcd = splitList(v.GetStringSlice("etcd"))
	c.EtcdDir = v.GetString("etcd-dir")
	c.Copies = v.GetInt("copies")
	c.Buckets = uint32(v.GetInt("buckets"))
	c.Strategy = v.GetString("strategy")
	if n := v.GetString("name"); n != "" {
		c.Name = n
	}
	c.HeartbeatInterval = v.GetDuration("heartbeat-interval")
	c.DownAfter = v.GetInt("down-after")
	c.BuildDiffRatio = v.GetFloat64("build-diff-ratio")
	c.MovesPerNode = v.GetInt("moves-per-node")
	c.RecoveryMovesPerNode = v.GetInt("recovery-moves-per-node")
	c.MaxMoves = v.GetInt("max-moves")
	c.HandoffWindow = v.GetDuration("handoff-window")
	c.InvalidPeers = splitList(v.GetStringSlice("invalid-peers"))
	c.InvalidPeerAuth = v.GetString("invalid-peer-auth")
	c.AdminToken = v.GetString("admin-token")
	c.AdminTokenFile = v.GetString("admin-token-file")
	return c
}

func configserverCmd() *cobra.Command {
	return roleCmd("configserver", "run the control plane: bucket table, heartbeats, migrations", configserverFlags, func(v *viper.Viper, log *slog.Logger) (role, error) {
		return configserver.New(configserverConfig(v), log)
	})
}

func dataserverFlags(cmd *cobra.Command) {
	d := dataserver.DefaultConfig()
	f := cmd.Flags()
	f.Int("event-loops", 0, "event loops serving connections (0 = GOMAXPROCS; the process keeps one P more than its loops)")
	f.String("listen", "127.0.0.1:5191", "RESP address; also this node's identity in the table")
	f.String("http", "127.0.0.1:8191", "address of /metrics, /healthz and /status")
	f.StringSlice("configserver", []string{"127.0.0.1:5198"}, "configserver addresses host:port,...")
	f.String("engine", d.Engine, fmt.Sprintf("storage engine: one of %v", engines.Names()))
	f.String("dir", "", "data directory (persistent engines)")
	f.String("sync", string(d.Sync), "durability of persistent engines: always, group or none")
	f.String("zone", "", "zone label for position-safe tables")
	f.String("zone-file", "", "a file holding the zone label, read at start when --zone is not set (on Kubernetes an init container writes the node's topology.kubernetes.io/zone there)")
	f.String("rack", "", "rack label for position-safe tables")
	f.String("replication", d.ReplicationMode, "when a slave is unreachable: degraded (carry on) or strict (fail writes)")
	f.Duration("replication-timeout", d.ReplicationTimeout, "how long a slave may stay unreachable before degraded/strict applies")
	f.Int64("replication-backlog", d.ReplicationBacklog, "bytes of writes kept for one unreachable slave (the handoff backlog) before it is given up and copied in full on return")
	f.Duration("lease", d.LeaseTimeout, "master lease: no write is acknowledged this long after the last configserver contact")
	f.Duration("heartbeat-interval", d.HeartbeatInterval, "heartbeat interval")
	f.Duration("stall-timeout", 0, "a command on an event loop or a bucket lock without progress this long makes the node report itself unhealthy, and the configserver moves its buckets away (0: 10 heartbeat intervals, at least 4 replication timeouts)")
	f.Duration("busy-reply-threshold", 0, "a Lua script running longer makes the requests for its bucket answer BUSY (0: 5s; SCRIPT KILL stops it)")
	f.Int64("memory-limit", d.MemoryLimit, "bytes an in-memory engine may hold (0 = no limit)")
	f.Int64("migrate-bytes-per-sec", d.MigrateBytesPerSec, "cap of each bucket move's copy rate (0: none)")
	f.Int64("migrate-min-bytes-per-sec", d.MigrateMinBytesPerSec, "floor of this node's adaptive copy rate, all its moves together (it halves down to this while clients are slow, grows up to 16 times it while they are fast); negative: no pacing")
	f.Duration("migrate-latency-target", d.MigrateLatencyTarget, "mean client latency under which migrations speed up (above twice it they back off)")
	f.Int("migrate-parallel", d.MigrateParallel, "bucket moves this node runs at once")
	f.Int("max-key-size", d.MaxKeySize, "largest key in bytes")
	f.Int("max-value-size", d.MaxValueSize, "largest value in bytes")
	f.Int("tracking-max-keys", d.TrackingMaxKeys, "most keys tracked for proxies' hot-key caches (past it, registrations are dropped by pushing their invalidation)")
}

func dataserverConfig(v *viper.Viper) dataserver.Config {
	c := dataserver.DefaultConfig()
	c.Listen = v.GetString("listen")
	c.HTTP = v.GetString("http")
	c.EventLoops = v.GetInt("event-loops")
	c.ConfigServers = splitList(v.GetStringSlice("configserver"))
	c.Engine = v.GetString("engine")
	c.Dir = v.GetString("dir")
	c.Sync = engines.SyncPolicy(v.GetString("sync"))
	c.Zone = v.GetString("zone")
	c.Rack = v.GetString("rack")
	c.ReplicationMode = v.GetString("replication")
	c.ReplicationTimeout = v.GetDuration("replication-timeout")
	c.ReplicationBacklog = v.GetInt64("replication-backlog")
	c.LeaseTimeout = v.GetDuration("lease")
	c.HeartbeatInterval = v.GetDuration("heartbeat-interval")
	c.StallTimeout = v.GetDuration("stall-timeout")
	c.BusyReplyThreshold = v.GetDuration("busy-reply-threshold")
	c.MemoryLimit = v.GetInt64("memory-limit")
	c.MigrateBytesPerSec = v.GetInt64("migrate-bytes-per-sec")
	c.MigrateMinBytesPerSec = v.GetInt64("migrate-min-bytes-per-sec")
	c.MigrateLatencyTarget = v.GetDuration("migrate-latency-target")
	c.MigrateParallel = v.GetInt("migrate-parallel")
	c.MaxKeySize = v.GetInt("max-key-size")
	c.MaxValueSize = v.GetInt("max-value-size")
	c.TrackingMaxKeys = v.GetInt("tracking-max-keys")
	return c
}

func dataserverCmd() *cobra.Command {
	return roleCmd("dataserver", "run one storage node", dataserverFlags, func(v *viper.Viper, log *slog.Logger) (role, error) {
		c := dataserverConfig(v)
		if zf := v.GetString("zone-file"); zf != "" && c.Zone == "" {
			b, err := os.ReadFile(zf)
			if err != nil {
				return nil, fmt.Errorf("dataserver: --zone-file: %w", err)
			}
			c.Zone = strings.TrimSpace(string(b))
		}
		return dataserver.New(c, log)
	})
}

func proxyFlags(cmd *cobra.Command) {
	d := proxy.DefaultConfig()
	f := cmd.Flags()
	f.String("listen", "127.0.0.1:6379", "RESP address clients connect to")
	f.String("http", "127.0.0.1:8379", "address of /metrics, /healthz and /status")
	f.StringSlice("configserver", []string{"127.0.0.1:5198"}, "configserver addresses host:port,...")
	f.String("requirepass", "", "password clients must AUTH with")
	f.Bool("read-from-slave", false, "send reads to slaves too (they may lag the master by in-flight writes)")
	f.StringToString("users", nil, "ACL-style users name=password,... (AUTH name password)")
	f.StringSlice("peers", nil, "the other proxies, host:port,... (CLUSTER SLOTS/NODES name them)")
	f.String("advertise", "", "address clients should use for this proxy (default: --listen)")
	f.Int("max-clients", d.MaxClients, "most client connections at once")
	f.Int("max-key-size", d.MaxKeySize, "largest key in bytes, as the dataservers' (an MSET/DEL over several buckets with a longer key is refused whole)")
	f.Int("max-value-size", d.MaxValueSize, "largest value in bytes, as the dataservers' (checked for MSET over several buckets)")
	f.Duration("idle-timeout", d.IdleTimeout, "close clients idle this long (0 = never)")
	f.Int64("max-bulk-len", d.MaxBulkLen, "largest bulk string a client may send (proto-max-bulk-len)")
	f.Int64("max-output-buffer", d.MaxOutputBuffer, "unread reply bytes a client may hold before it is cut off")
	f.Duration("retry-budget", d.RetryBudget, "how long the proxy retries NOTMASTER/TRYAGAIN/lost connections for one request")
	f.Duration("request-timeout", d.RequestTimeout, "how long the proxy waits for a dataserver's reply before it answers -TIMEOUT")
	f.Int("backend-conns", d.BackendConns, "pipelined connections per dataserver")
	f.Int("event-loops", 0, "event loops serving clients (0 = GOMAXPROCS; the process keeps one P more than its loops)")
	f.Duration("hot-cache-ttl", 0, "serve GETs of hot keys from a proxy-local cache whose entries live at most this long; a key's master pushes its invalidation when it changes, so the TTL is a backstop; 0 = off")
	f.Int("hot-cache-keys", d.HotCacheKeys, "most keys in the hot-key cache")
	f.Int("hot-cache-bytes", d.HotCacheBytes, "most bytes in the hot-key cache")
	f.Int64("pubsub-hard-limit", d.PubSubHardLimit, "cut a pub/sub subscriber with more unsent bytes than this (client-output-buffer-limit pubsub; negative = none)")
	f.Int64("pubsub-soft-limit", d.PubSubSoftLimit, "cut a pub/sub subscriber over this many unsent bytes for --pubsub-soft-seconds (negative = none)")
	f.Duration("pubsub-soft-seconds", d.PubSubSoftSeconds, "how long a subscriber may stay over --pubsub-soft-limit")
	f.Duration("pubsub-peer-wait", d.PubSubPeerWait, "how long PUBLISH and PUBSUB wait for the other proxies' answers")
}

func proxyConfig(v *viper.Viper) proxy.Config {
	c := proxy.DefaultConfig()
	c.Listen = v.GetString("listen")
	c.HTTP = v.GetString("http")
	c.ConfigServers = splitList(v.GetStringSlice("configserver"))
	c.RequirePass = v.GetString("requirepass")
	c.ReadFromSlave = v.GetBool("read-from-slave")
	if u := v.GetStringMapString("users"); len(u) > 0 {
		c.Users = u
	}
	c.Peers = splitList(v.GetStringSlice("peers"))
	c.Advertise = v.GetString("advertise")
	c.MaxClients = v.GetInt("max-clients")
	c.MaxKeySize = v.GetInt("max-key-size")
	c.MaxValueSize = v.GetInt("max-value-size")
	c.IdleTimeout = v.GetDuration("idle-timeout")
	c.MaxBulkLen = v.GetInt64("max-bulk-len")
	c.MaxOutputBuffer = v.GetInt64("max-output-buffer")
	c.RetryBudget = v.GetDuration("retry-budget")
	c.RequestTimeout = v.GetDuration("request-timeout")
	c.BackendConns = v.GetInt("backend-conns")
	c.EventLoops = v.GetInt("event-loops")
	c.HotCacheTTL = v.GetDuration("hot-cache-ttl")
	c.HotCacheKeys = v.GetInt("hot-cache-keys")
	c.HotCacheBytes = v.GetInt("hot-cache-bytes")
	c.PubSubHardLimit = v.GetInt64("pubsub-hard-limit")
	c.PubSubSoftLimit = v.GetInt64("pubsub-soft-limit")
	c.PubSubSoftSeconds = v.GetDuration("pubsub-soft-seconds")
	c.PubSubPeerWait = v.GetDuration("pubsub-peer-wait")
	return c
}

func proxyCmd() *cobra.Command {
	return roleCmd("proxy", "run one stateless RESP proxy", proxyFlags, func(v *viper.Viper, log *slog.Logger) (role, error) {
		return proxy.New(proxyConfig(v), log)
	})
}

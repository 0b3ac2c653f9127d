// Package wire holds the messages between dataservers, proxies and the
// configserver, and the HTTP/JSON client that carries them. The configserver
// serves these paths on its --listen address:
//
//	POST /v1/heartbeat        Heartbeat -> HeartbeatReply        (leader only)
//	GET  /v1/table?after=V&wait=MS                               (any configserver)
//	     200 + Table when the table's version is above V; 304 when the wait
//	     ran out first (long poll, so proxies learn a new table at once)
//	GET  /v1/nodes            []NodeStatus
//	GET  /v1/migrations       MigrationStatus
//	GET  /v1/areas            map[area]AreaConfig
//	GET  /v1/hooks            HooksStatus
//	POST /v1/admin            AdminRequest -> AdminReply         (leader only)
//	     401 + AuthError without the admin credential, when the
//	     configserver has one (Client.SetAdminToken)
//	POST /v1/proxies          ProxyBeat -> ProxyList             (leader only)
//	GET  /v1/hotkeys          HotKeysStatus: the proxies' hot keys merged (leader only)
//
// A standby configserver answers leader-only calls with 421 and a
// NotLeader body naming the leader, so clients move on.
package wire

import (
	"strings"

	"github.com/tairkv/tair/internal/route"
)

// Heartbeat is what a dataserver reports every interval.
type Heartbeat struct {
	// Addr is the dataserver's RESP address, its identity in the table.
	Addr string `json:"addr"`
	// HTTP is its metrics/status address.
	HTTP string `json:"http,omitempty"`
	Zone string `json:"zone,omitempty"`
	Rack string `json:"rack,omitempty"`
	// Incarnation changes each time the process starts; with Persistent
	// false a new incarnation means the node lost its data.
	Incarnation int64  `json:"incarnation"`
	Persistent  bool   `json:"persistent"`
	Engine      string `json:"engine,omitempty"`
	// Seq numbers one incarnation's heartbeats in the order they were
	// built. Up to three are in flight at once and may arrive out of
	// order: a configserver keeps the newest it received, never one
	// built before it (a stale one could say a slave is reachable after
	// a newer one said it is not).
	Seq uint64 `json:"seq,omitempty"`
	// TableVersion is the version the dataserver is serving with.
	TableVersion route.Version `json:"table_version"`
	// Deltas: a newer table may come as changes since TableVersion
	// (HeartbeatReply.TableDelta).
	Deltas bool `json:"deltas,omitempty"`
	// Migrations reports the moves this node is the source of.
	Migrations []MigrationProgress `json:"migrations,omitempty"`
	// UnreachableSlaves lists slaves the node could not replicate to
	// within its timeout (degraded mode).
	UnreachableSlaves []string `json:"unreachable_slaves,omitempty"`
	// UnreachableEpochs numbers, per slave in UnreachableSlaves, the
	// episode of unreachability being reported (it grows with every new
	// episode, across restarts); the configserver records it in the
	// table with the slave's behind mark (route.Table.BehindEpoch).
	UnreachableEpochs map[string]uint64 `json:"unreachable_epochs,omitempty"`
	// CopyingSlaves lists slaves a full copy of a bucket is on its way to
	// (a resync, a replaced stream), not yet acknowledged whole, and
	// Diverged the buckets this node holds as a slave whose copy waits
	// for one: such a copy may be partial or differ from its master's,
	// so the configserver keeps the slave behind its master (never
	// promoted in its place) until both lists leave it out.
	CopyingSlaves []string         `json:"copying_slaves,omitempty"`
	Diverged      []route.BucketID `json:"diverged,omitempty"`
	// InSyncSlaves lists the slaves (of the buckets this node masters in
	// the table of TableVersion) that, when the heartbeat was built, had
	// acknowledged every write this node acknowledged without them
	// (those it had marked behind), with their stream reachable, no full
	// copy in flight, never given up; the writes in flight then were
	// acknowledged, or will be, only once they apply them. It is the
	// master's positive word that a slave has every write it
	// acknowledged so far, which the configserver needs before it takes
	// a slave marked behind for caught up (the absence of a slave from
	// UnreachableSlaves says nothing when the heartbeat was built on a
	// table that did not make it this node's slave). InSyncReported
	// says the node sends the list (configservers fall back to the
	// older rule for dataservers that do not).
	InSyncSlaves   []string `json:"in_sync_slaves,omitempty"`
	InSyncReported bool     `json:"in_sync_reported,omitempty"`
	// MasterBuckets and SlaveBuckets count the bucket copies the node
	// holds as master and as slave in the table it serves with.
	MasterBuckets int `json:"master_buckets"`
	SlaveBuckets  int `json:"slave_buckets"`
	// Health is "ok"; "degraded" while a slave is unreachable (writes
	// go on without it once the table marks it behind); "lease-lapsed"
	// while the node's master lease has run out (it acknowledges no
	// write as a master); "unhealthy" while Unhealthy is set.
	Health string `json:"health,omitempty"`
	// Unhealthy, when set, says why the node does not serve although it
	// heartbeats (an event loop or a bucket lock without progress for the
	// stall timeout). The configserver takes such a heartbeat for a
	// missed one: the node counts as down and its buckets fail over.
	Unhealthy string `json:"unhealthy,omitempty"`
	// Stats are per-area counters.
	Stats map[uint16]AreaStats `json:"stats,omitempty"`
	// Load is requests per second over the last interval.
	Load float64 `json:"load"`
	// DrainRequested is set by `tair ctl node drain` through the configserver;
	// dataservers leave it false.
	DrainRequested bool `json:"drain_requested,omitempty"`
	// Resources are the node's memory and disk (see nodes.go).
	Resources *NodeResources `json:"resources,omitempty"`
}

// MigrationProgress is one move as the source dataserver sees it.
type MigrationProgress struct {
	Bucket   route.BucketID `json:"bucket"`
	To       string         `json:"to"`
	KeysSent int64          `json:"keys_sent"`
	Done     bool           `json:"done"`
	Failed   string         `json:"failed,omitempty"`
}

// AreaStats are per-area counters, summed over a node's buckets.
type AreaStats struct {
	Keys      int64 `json:"keys"`
	Bytes     int64 `json:"bytes"`
	Gets      int64 `json:"gets"`
	Puts      int64 `json:"puts"`
	Hits      int64 `json:"hits"`
	Misses    int64 `json:"misses"`
	Evictions int64 `json:"evictions"`
}

// AreaConfig is the tenant configuration of one area, applied by every
// dataserver without a restart.
type AreaConfig struct {
	QuotaBytes int64 `json:"quota_bytes,omitempty"`
	OpsLimit   int64 `json:"ops_limit,omitempty"`
	BytesLimit int64 `json:"bytes_limit,omitempty"`
	ReadOnly   bool  `json:"read_only,omitempty"`
}

// HeartbeatReply carries what the dataserver must apply.
type HeartbeatReply struct {
	// Table is set when the configserver's table is newer than the
	// heartbeat's TableVersion.
	Table *route.Table `json:"table,omitempty"`
	// TableDelta is that table as changes since the heartbeat's
	// TableVersion, instead of Table, when the heartbeat takes Deltas
	// and the configserver still keeps that version.
	TableDelta *route.Delta `json:"table_delta,omitempty"`
	// Areas is the full area configuration (sent every time; small).
	Areas map[uint16]AreaConfig `json:"areas,omitempty"`
	// Hooks names the dataserver's request hooks switched on, in the
	// order they run (see KnownHooks). nil: the configserver never set
	// them, so DefaultHooks apply; an empty list switches every hook off.
	Hooks *[]string `json:"hooks,omitempty"`
	// MigrateBytesPerSec caps each move's copy rate on every dataserver
	// (0: no cap), over the node's own --migrate-bytes-per-sec. nil: the
	// operator never set it (or reset it), so each node's own applies.
	MigrateBytesPerSec *int64 `json:"migrate_bytes_per_sec,omitempty"`
}

// KnownHooks are the dataserver's built-in request hooks:
//
//	stats  count commands per area, kind (read/write) and result (ok/error)
//	quota  apply the areas' byte quotas (AreaConfig.QuotaBytes) and refuse
//	       writes to an area over its quota (persistent engines)
//	audit  log every write (area, command, key, result, peer)
var KnownHooks = []string{"stats", "quota", "audit"}

// DefaultHooks are the hooks on while the configserver never set any.
var DefaultHooks = []string{"stats", "quota"}

// HookList shows a hook list: its names, comma-separated, or "none".
func HookList(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ",")
}

// HooksStatus is the body of GET /v1/hooks.
type HooksStatus struct {
	// Enabled are the hooks switched on, in order.
	Enabled []string `json:"enabled"`
	// Set is false while the hooks were never set (Enabled is then
	// DefaultHooks).
	Set   bool     `json:"set"`
	Known []string `json:"known"`
}

// NotLeader is the body of a 421 reply from a standby configserver.
type NotLeader struct {
	Leader string `json:"leader"`
}

// NodeStatus is one dataserver as the configserver sees it.
type NodeStatus struct {
	Addr string `json:"addr"`
	// HTTP is the node's metrics/status address, as its heartbeat gave
	// it (tair ctl backup reads the data there).
	HTTP          string        `json:"http,omitempty"`
	Engine        string        `json:"engine,omitempty"`
	Zone          string        `json:"zone,omitempty"`
	Rack          string        `json:"rack,omitempty"`
	Alive         bool          `json:"alive"`
	Draining      bool          `json:"draining,omitempty"`
	LastHeartbeat int64         `json:"last_heartbeat_ms"`
	TableVersion  route.Version `json:"table_version"`
	Masters       int           `json:"masters"`
	Slaves        int           `json:"slaves"`
	Load          float64       `json:"load"`
	// Health and the bucket copies the node reports it holds (its last
	// heartbeat), beside Masters and Slaves from the configserver's table.
	// Health is "down" for a node not alive, unless it reports itself
	// "unhealthy" (it heartbeats but does not serve).
	Health      string `json:"health,omitempty"`
	HeldMasters int    `json:"held_masters"`
	HeldSlaves  int    `json:"held_slaves"`
	// Resources: memory and disk from the node's last heartbeat.
	Resources *NodeResources `json:"resources,omitempty"`
}

// MigrationStatus is the configserver's view of the migration plan.
type MigrationStatus struct {
	Paused bool `json:"paused"`
	// Rate is the cluster-wide cap of each move's copy rate in bytes a
	// second (0: none); nil: each dataserver's own applies.
	Rate      *int64              `json:"rate,omitempty"`
	Pending   []route.Move        `json:"pending"`
	Running   []MigrationProgress `json:"running"`
	Completed int                 `json:"completed"`
	Total     int                 `json:"total"`
	// UnderReplicated counts the buckets with fewer caught-up copies on
	// live nodes than the copy count; UnderReplicatedSeconds is how long
	// the longest-waiting one has been so; Unavailable counts those with
	// no caught-up live copy at all; LastRestoreSeconds is how long
	// the last episode took until the count was whole again (0: none).
	UnderReplicated        int     `json:"under_replicated"`
	Unavailable            int     `json:"unavailable"`
	UnderReplicatedSeconds float64 `json:"under_replicated_seconds"`
	LastRestoreSeconds     float64 `json:"last_restore_seconds"`
}

// AdminRequest is a control command for the leader.
//
// Op is one of: "node-add", "node-remove", "node-drain", "rebalance",
// "migrations-pause", "migrations-resume", "migrations-cancel",
// "area-set" (Area + AreaConfig), "hooks-set" (Hooks: the whole list,
// empty = none), "hooks-on" and "hooks-off" (Hooks: names to switch on,
// appended, or off).
type AdminRequest struct {
	Op     string     `json:"op"`
	Node   string     `json:"node,omitempty"`
	Area   uint16     `json:"area,omitempty"`
	Config AreaConfig `json:"config,omitempty"`
	Hooks  []string   `json:"hooks,omitempty"`
	// Rate is migrations-rate's cap in bytes a second (0: none); nil
	// gives each dataserver its own --migrate-bytes-per-sec again.
	Rate *int64 `json:"rate,omitempty"`
}

// ProxyBeat is a proxy's periodic hello to the leading configserver: the
// address clients reach it at.
type ProxyBeat struct {
	Addr string `json:"addr"`
	// HotKeys are the proxy's hot keys of its last window (hotkeys.go).
	HotKeys []HotKey `json:"hot_keys,omitempty"`
}

// ProxyList answers a ProxyBeat with every proxy heard from recently
// (the sender included), sorted.
type ProxyList struct {
	Proxies []string `json:"proxies"`
}

// InvalidRequest asks the leading configserver to queue TAIR.INVALID of
// Keys in Area for every peer cluster (its --invalid-peers).
type InvalidRequest struct {
	Area uint16   `json:"area"`
	Keys [][]byte `json:"keys"`
}

// InvalidReply says for how many peer clusters the keys were queued
// (durably, in etcd).
type InvalidReply struct {
	Peers int `json:"peers"`
}

// AdminReply answers an AdminRequest.
type AdminReply struct {
	OK      bool   `json:"ok"`
	Message string `json:"message,omitempty"`
}

// Status is the body of GET /status on every process's HTTP address.
type Status struct {
	Kind         string           `json:"kind"`
	Role         string           `json:"role,omitempty"`
	Addr         string           `json:"addr"`
	TableVersion route.Version    `json:"table_version"`
	Masters      []route.BucketID `json:"masters,omitempty"`
	Slaves       []route.BucketID `json:"slaves,omitempty"`
	Leader       string           `json:"leader,omitempty"`
	// EtcdEndpoints are a configserver's etcd client URLs (host:port), so
	// standbys can be pointed at an embedded etcd.
	EtcdEndpoints []string `json:"etcd_endpoints,omitempty"`
}

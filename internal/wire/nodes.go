package wire

// NodeResources is what a dataserver reports of its memory and disk in
// each heartbeat (Heartbeat.Resources), and what the configserver serves
// of each node's last report (NodeStatus.Resources).
type NodeResources struct {
	// EngineBytes are the bytes the engine accounts (every area, every
	// copy the node holds: what quotas and --memory-limit compare with);
	// MemoryLimit is --memory-limit (0: none).
	EngineBytes int64 `json:"engine_bytes"`
	MemoryLimit int64 `json:"memory_limit,omitempty"`
	// RSSBytes is the process's resident memory.
	RSSBytes int64 `json:"rss_bytes"`
	// For a persistent engine: its data directory, the bytes its files
	// take on disk, and the free (available to the process) and total
	// bytes of the filesystem holding it.
	DataDir        string `json:"data_dir,omitempty"`
	DiskUsedBytes  int64  `json:"disk_used_bytes,omitempty"`
	DiskFreeBytes  int64  `json:"disk_free_bytes,omitempty"`
	DiskTotalBytes int64  `json:"disk_total_bytes,omitempty"`
}

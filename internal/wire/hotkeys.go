package wire

// HotKey is one key a proxy saw hot in its last full window (its
// hotkey.Detector), sent in its ProxyBeat.
type HotKey struct {
	Area uint16 `json:"area"`
	// Key is the key's bytes as a JSON string (a key that is not UTF-8
	// shows with replacement characters).
	Key string `json:"key"`
	// Rate is requests per second; Share the key's fraction of the
	// proxy's requests.
	Rate  float64 `json:"rate"`
	Share float64 `json:"share"`
}

// ClusterHotKey is a hot key merged over the proxies: Rate sums the rates
// of the proxies that reported it within the proxies' TTL, Proxies holds
// each one's rate.
type ClusterHotKey struct {
	Area    uint16             `json:"area"`
	Key     string             `json:"key"`
	Rate    float64            `json:"rate"`
	Proxies map[string]float64 `json:"proxies"`
}

// HotKeysStatus is the body of GET /v1/hotkeys: the cluster's hot keys,
// hottest first, and the proxies whose reports they merge.
type HotKeysStatus struct {
	Keys    []ClusterHotKey `json:"keys"`
	Proxies []string        `json:"proxies"`
}

package proxy

import "github.com/tairkv/tair/internal/wire"

// maxBeatHotKeys caps the hot keys a beat carries: the hottest.
const maxBeatHotKeys = 32

// beatHotKeys are this proxy's hot keys of its last window (TAIR.HOTKEYS's
// list, every area), for its beat to the leading configserver, which
// merges them over the proxies (GET /v1/hotkeys).
func (s *Server) beatHotKeys() []wire.HotKey {
	hot := s.hot.Hot()
	if len(hot) > maxBeatHotKeys {
		hot = hot[:maxBeatHotKeys]
	}
	out := make([]wire.HotKey, 0, len(hot))
	for _, h := range hot {
		out = append(out, wire.HotKey{Area: h.Area, Key: h.Key.Key, Rate: h.Rate, Share: h.Share})
	}
	return out
}

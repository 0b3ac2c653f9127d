package proxy

import (
	"context"
	"fmt"
	"time"

	"github.com/tairkv/tair/internal/wire"
)

// invalidQueueTimeout bounds the wait for the configserver to queue a
// TAIR.INVALID for the peer clusters.
const invalidQueueTimeout = 3 * time.Second

// cmdTairInvalid is TAIR.INVALID key [key ...]: the leading configserver
// (the invalid server) first queues the keys, durably, for every peer
// cluster, then the keys are deleted here and the reply counts them. When
// the queueing fails nothing is deleted and the client gets the error, so
// a success always means every peer will apply it. A proxy without
// configservers (a static table) deletes here only.
func cmdTairInvalid(ss *session, r *request) {
	if c := ss.srv.r.client; c != nil {
		ctx, cancel := context.WithTimeout(ss.srv.ctx, invalidQueueTimeout)
		req := &wire.InvalidRequest{Area: uint16(ss.area), Keys: make([][]byte, 0, len(r.args)-1)}
		for _, k := range r.args[1:] {
			req.Keys = append(req.Keys, append([]byte(nil), k...))
		}
		_, err := c.Invalid(ctx, req)
		cancel()
		if err != nil {
			r.setErr(clusterDown(fmt.Errorf("the invalid server did not queue the keys for the peer clusters: %w", err)))
			return
		}
	}
	ss.keyBuf = r.spec.AppendKeyIndexes(ss.keyBuf[:0], r.args)
	ss.route(r, ss.keyBuf)
}

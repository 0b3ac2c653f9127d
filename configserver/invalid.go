package configserver

// The invalid server (Tair's invalserver): TAIR.INVALID deletes keys in
// this cluster and, through the leading configserver, in every peer
// cluster. The proxy asks the leader to queue the keys before it deletes
// them here; the leader writes one queue entry per peer into etcd (so the
// queue survives restarts and leader changes) and one sender per peer
// delivers the entries in order to a proxy of that cluster as
// TAIR.INVALIDLOCAL (which deletes without forwarding again, so two
// clusters that name each other do not loop), deleting each entry once
// the peer has answered it.

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tairkv/tair/internal/wire"
	"github.com/tairkv/tair/resp"
)

// invalidSeq orders queue entries written in the same nanosecond.
var invalidSeq atomic.Uint64

func (s *store) invalidPrefix(peer string) string {
	return s.prefix + "/invalid/" + url.PathEscape(peer) + "/"
}

func (s *Server) handleInvalid(w http.ResponseWriter, r *http.Request) {
	var req wire.InvalidRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Keys) == 0 {
		http.Error(w, fmt.Sprintf("bad invalid request: %v", err), http.StatusBadRequest)
		return
	}
	peers := s.cfg.InvalidPeers
	if len(peers) > 0 {
		entry, _ := json.Marshal(req)
		id := fmt.Sprintf("%020d-%08d", time.Now().UnixNano(), invalidSeq.Add(1)%1e8)
		ops := make([]clientv3.Op, 0, len(peers))
		for _, p := range peers {
			ops = append(ops, clientv3.OpPut(s.store.invalidPrefix(p)+id, string(entry)))
		}
		if _, err := s.cli.Txn(r.Context()).Then(ops...).Commit(); err != nil {
			http.Error(w, "queueing the invalidation: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		s.metrics.invalidQueued.Add(float64(len(peers)))
		for _, k := range s.invalidKicks {
			select {
			case k <- struct{}{}:
			default:
			}
		}
	}
	writeJSON(w, http.StatusOK, wire.InvalidReply{Peers: len(peers)})
}

// runInvalidSenders delivers the queued invalidations while this
// configserver leads (ctx ends with the leadership).
func (s *Server) runInvalidSenders(ctx context.Context) {
	for i, peer := range s.cfg.InvalidPeers {
		go s.invalidSender(ctx, peer, s.invalidKicks[i])
	}
}

// invalidSender sends peer's queue in order: an entry leaves the queue
// only after the peer answered it; a peer that cannot be reached is tried
// again every second, so entries wait (in etcd) as long as it is down.
func (s *Server) invalidSender(ctx context.Context, peer string, kick <-chan struct{}) {
	prefix := s.store.invalidPrefix(peer)
	var conn net.Conn
	var rd *resp.ReplyReader
	defer func() {
		if conn != nil {
			_ = conn.Close()
		}
	}()
	var lastErr string
	for ctx.Err() == nil {
		res, err := s.cli.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByKey, clientv3.SortAscend), clientv3.WithLimit(64))
		if err == nil && len(res.Kvs) > 0 {
			s.metrics.invalidPending.WithLabelValues(peer).Set(float64(res.Count))
			for _, kv := range res.Kvs {
				if conn == nil {
					if conn, rd, err = dialPeer(peer, s.cfg.InvalidPeerAuth); err != nil {
						break
					}
				}
				if err = sendInvalid(conn, rd, kv.Value); err != nil {
					_ = conn.Close()
					conn = nil
					break
				}
				if _, err = s.cli.Delete(ctx, string(kv.Key)); err != nil {
					break
				}
				s.metrics.invalidSent.WithLabelValues(peer).Inc()
			}
			if err == nil {
				lastErr = ""
				continue // more may wait
			}
		} else if err == nil {
			s.metrics.invalidPending.WithLabelValues(peer).Set(0)
		}
		if err != nil && err.Error() != lastErr && ctx.Err() == nil {
			lastErr = err.Error()
			s.log.Warn("invalidation not delivered to peer cluster; kept queued", "peer", peer, "err", err)
		}
		wait := time.Second
		if err == nil {
			wait = 5 * time.Second // idle: a kick comes with new entries
		}
		select {
		case <-ctx.Done():
		case <-kick:
		case <-time.After(wait):
		}
	}
}

// dialPeer connects to a peer's proxy, sending AUTH when auth
// ("password" or "user:password") is set.
func dialPeer(peer, auth string) (net.Conn, *resp.ReplyReader, error) {
	conn, err := net.DialTimeout("tcp", peer, 2*time.Second)
	if err != nil {
		return nil, nil, err
	}
	rd := resp.NewReplyReader(conn, 0, resp.Limits{})
	if auth != "" {
		args := [][]byte{[]byte("AUTH")}
		if user, pass, ok := strings.Cut(auth, ":"); ok {
			args = append(args, []byte(user), []byte(pass))
		} else {
			args = append(args, []byte(auth))
		}
		if err := roundTrip(conn, rd, resp.AppendCommand(nil, args...), 1); err != nil {
			_ = conn.Close()
			return nil, nil, err
		}
	}
	return conn, rd, nil
}

// sendInvalid applies one queue entry on a peer's proxy: SELECT its area,
// then TAIR.INVALIDLOCAL with its keys; a reply error is an error (the
// entry stays queued).
func sendInvalid(conn net.Conn, rd *resp.ReplyReader, entry []byte) error {
	var req wire.InvalidRequest
	if err := json.Unmarshal(entry, &req); err != nil || len(req.Keys) == 0 {
		return nil // unreadable: nothing to deliver, drop it
	}
	var buf []byte
	buf = resp.AppendCommand(buf, []byte("SELECT"), strconv.AppendUint(nil, uint64(req.Area), 10))
	args := append([][]byte{[]byte("TAIR.INVALIDLOCAL")}, req.Keys...)
	buf = resp.AppendCommand(buf, args...)
	return roundTrip(conn, rd, buf, 2)
}

// roundTrip writes cmds (n pipelined commands) to a peer's proxy and reads
// their n replies; an error reply is an error.
func roundTrip(conn net.Conn, rd *resp.ReplyReader, cmds []byte, n int) error {
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := conn.Write(cmds); err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		raw, err := rd.ReadReply()
		if err != nil {
			return err
		}
		if len(raw) > 0 && raw[0] == '-' {
			return fmt.Errorf("peer replied %q", raw)
		}
	}
	return nil
}

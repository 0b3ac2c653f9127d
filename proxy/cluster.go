package proxy

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/tairkv/tair/internal/route"
	"github.com/tairkv/tair/internal/wire"
	"github.com/tairkv/tair/resp"
)

// CLUSTER for cluster-aware clients: the live proxies (peersLoop) share
// the 16384 slots between them, and KeySlot is Redis Cluster's slot of a
// key.

// CLUSTER: the live proxies own every slot between them (contiguous
// ranges in address order), so cluster-aware clients spread their load
// over the proxies; any proxy serves any key, so views that differ for a
// moment cost nothing (no MOVED is ever sent).
func cmdCluster(ss *session, r *request) {
	s := ss.srv
	nodes := s.clusterNodes(ss)
	switch strings.ToLower(string(r.args[1])) {
	case "slots":
		b := resp.AppendArray(r.reply[:0], len(nodes))
		for _, n := range nodes {
			b = resp.AppendArray(b, 3)
			b = resp.AppendInt(b, int64(n.from))
			b = resp.AppendInt(b, int64(n.to))
			b = resp.AppendArray(b, 4)
			b = resp.AppendBulkString(b, n.host)
			b = resp.AppendInt(b, int64(n.port))
			b = resp.AppendBulkString(b, n.id)
			b = resp.AppendMap(b, 0, r.proto)
		}
		r.raw(b)
	case "shards":
		b := resp.AppendArray(r.reply[:0], len(nodes))
		for _, n := range nodes {
			b = resp.AppendMap(b, 2, r.proto)
			b = resp.AppendBulkString(b, "slots")
			b = resp.AppendArray(b, 2)
			b = resp.AppendInt(b, int64(n.from))
			b = resp.AppendInt(b, int64(n.to))
			b = resp.AppendBulkString(b, "nodes")
			b = resp.AppendArray(b, 1)
			b = resp.AppendMap(b, 7, r.proto)
			b = resp.AppendBulkString(b, "id")
			b = resp.AppendBulkString(b, n.id)
			b = resp.AppendBulkString(b, "port")
			b = resp.AppendInt(b, int64(n.port))
			b = resp.AppendBulkString(b, "ip")
			b = resp.AppendBulkString(b, n.host)
			b = resp.AppendBulkString(b, "endpoint")
			b = resp.AppendBulkString(b, n.host)
			b = resp.AppendBulkString(b, "role")
			b = resp.AppendBulkString(b, "master")
			b = resp.AppendBulkString(b, "replication-offset")
			b = resp.AppendInt(b, 0)
			b = resp.AppendBulkString(b, "health")
			b = resp.AppendBulkString(b, "online")
		}
		r.raw(b)
	case "nodes":
		var sb strings.Builder
		for _, n := range nodes {
			flags := "master"
			if n.self {
				flags = "myself,master"
			}
			fmt.Fprintf(&sb, "%s %s:%d@%d %s - 0 0 1 connected %d-%d\n", n.id, n.host, n.port, n.port+10000, flags, n.from, n.to)
		}
		r.reply = resp.AppendVerbatim(r.reply[:0], sb.String(), r.proto)
		r.local = true
	case "info":
		state := "ok"
		if s.r.load() == nil {
			state = "fail"
		}
		info := fmt.Sprintf("cluster_enabled:1\r\ncluster_state:%s\r\ncluster_slots_assigned:16384\r\ncluster_slots_ok:16384\r\ncluster_slots_pfail:0\r\ncluster_slots_fail:0\r\ncluster_known_nodes:%d\r\ncluster_size:%d\r\ncluster_current_epoch:1\r\ncluster_my_epoch:1\r\ncluster_stats_messages_sent:0\r\ncluster_stats_messages_received:0\r\ntotal_cluster_links_buffer_limit_exceeded:0\r\n",
			state, len(nodes), len(nodes))
		r.reply = resp.AppendVerbatim(r.reply[:0], info, r.proto)
		r.local = true
	case "keyslot":
		if len(r.args) != 3 {
			r.setError("ERR wrong number of arguments for 'cluster|keyslot' command")
			return
		}
		r.integer(int64(KeySlot(r.args[2])))
	case "myid", "myshardid":
		for _, n := range nodes {
			if n.self {
				r.bulkString(n.id)
				return
			}
		}
		r.bulkString(s.id)
	case "countkeysinslot", "getkeysinslot":
		r.setError("ERR slots are not used to place keys in this cluster (keys live in buckets)")
	case "help":
		r.raw(helpReply("CLUSTER", []string{"INFO", "KEYSLOT <key>", "MYID", "NODES", "SHARDS", "SLOTS"}))
	default:
		r.setError("ERR unknown subcommand '" + quotedArg(r.args[1]) + "'. Try CLUSTER HELP.")
	}
}

// clusterNode is one proxy as CLUSTER commands show it.
type clusterNode struct {
	id       string
	host     string
	port     int
	from, to int
	self     bool
}

// clusterNodes lists this proxy and its live peers in address order,
// each with its share of the slots.
func (s *Server) clusterNodes(ss *session) []clusterNode {
	self := s.cfg.Advertise
	if self == "" {
		self = ss.laddr
	}
	addrs := []string{self}
	if live := s.livePeers.Load(); live != nil {
		for _, a := range *live {
			if a != self {
				addrs = append(addrs, a)
			}
		}
	}
	sort.Strings(addrs)
	out := make([]clusterNode, len(addrs))
	for i, a := range addrs {
		host, port := splitHostPort(a)
		id := s.id
		if len(addrs) > 1 || s.cfg.Advertise != "" {
			id = nodeID(a)
		}
		out[i] = clusterNode{id: id, host: host, port: port, self: a == self,
			from: i * 16384 / len(addrs), to: (i+1)*16384/len(addrs) - 1}
	}
	return out
}

// nodeID is a proxy's cluster node ID: derived from its address, so
// every proxy names its peers alike.
func nodeID(addr string) string {
	h := sha1.Sum([]byte(addr))
	return hex.EncodeToString(h[:])
}

// peersLoop keeps the list of live peer proxies every second: the
// configured ones (--peers) that answer PING, and the ones the leading
// configserver has heard from (each proxy registers there with the
// address clients reach it at), so that proxies started with only
// --configserver name each other too.
func (s *Server) peersLoop() {
	defer s.wg.Done()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	self := s.advertisedAddr()
	for {
		seen := map[string]bool{}
		var live []string
		add := func(a string) {
			if a != self && !seen[a] {
				seen[a] = true
				live = append(live, a)
			}
		}
		for _, p := range s.cfg.Peers {
			if pingPeer(p) {
				add(p)
			}
		}
		if c := s.r.client; c != nil {
			ctx, cancel := context.WithTimeout(s.ctx, time.Second)
			list, err := c.ProxyBeat(ctx, &wire.ProxyBeat{Addr: self, HotKeys: s.beatHotKeys()})
			cancel()
			if err == nil {
				for _, p := range list.Proxies {
					add(p)
				}
			} else if old := s.livePeers.Load(); old != nil {
				// Configserver unreachable: keep the peers it named last.
				for _, p := range *old {
					add(p)
				}
			}
		}
		sort.Strings(live)
		s.livePeers.Store(&live)
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		}
	}
}

// advertisedAddr is the address this proxy registers under: --advertise,
// else its listen address.
func (s *Server) advertisedAddr() string {
	if s.cfg.Advertise != "" {
		return s.cfg.Advertise
	}
	return s.Addr()
}

func pingPeer(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, 300*time.Millisecond)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(300 * time.Millisecond))
	if _, err := c.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
		return false
	}
	buf := make([]byte, 64)
	n, err := c.Read(buf)
	// +PONG, or -NOAUTH from a peer that wants a password: alive.
	return err == nil && n > 0 && (buf[0] == '+' || buf[0] == '-')
}

// advertised is the host and port clients reach this proxy at: the local
// address of the client's connection.
func (ss *session) advertised() (string, int) {
	host, p := splitHostPort(ss.laddr)
	return host, p
}

func splitHostPort(a string) (string, int) {
	i := strings.LastIndexByte(a, ':')
	if i < 0 {
		return a, 0
	}
	p, _ := strconv.Atoi(a[i+1:])
	return strings.Trim(a[:i], "[]"), p
}

// KeySlot is Redis Cluster's slot of key: CRC16 of its hash tag mod 16384.
func KeySlot(key []byte) uint16 {
	return crc16(route.HashTag(key)) & 16383
}

var crcTable = func() [256]uint16 {
	var t [256]uint16
	for i := 0; i < 256; i++ {
		c := uint16(i) << 8
		for j := 0; j < 8; j++ {
			if c&0x8000 != 0 {
				c = c<<1 ^ 0x1021
			} else {
				c <<= 1
			}
		}
		t[i] = c
	}
	return t
}()

// crc16 is CRC16-CCITT (XMODEM), as Redis Cluster uses.
func crc16(b []byte) uint16 {
	var crc uint16
	for _, c := range b {
		crc = crc<<8 ^ crcTable[byte(crc>>8)^c]
	}
	return crc
}

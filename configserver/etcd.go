package configserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// embeddedEtcd is a single-node etcd run inside the configserver.
type embeddedEtcd struct {
	etcd    *embed.Etcd
	client  string // host:port of the client listener
	tempDir string
	// closing demotes etcd's shutdown noise to debug.
	closing atomic.Bool
}

// portsFile keeps the embedded etcd's ports in its data directory, so a
// restart on the same directory comes back on the same URLs (the member's
// peer URL is part of its stored identity).
const portsFile = "tair-ports.json"

type etcdPorts struct {
	Client int `json:"client"`
	Peer   int `json:"peer"`
}

// startEmbeddedEtcd starts etcd in dir (a temp dir when empty) on loopback
// ports picked here: etcd's peer listener cannot be given port 0.
func startEmbeddedEtcd(dir string, log *slog.Logger) (*embeddedEtcd, error) {
	e := &embeddedEtcd{}
	if dir == "" {
		d, err := os.MkdirTemp("", "tair-etcd-")
		if err != nil {
			return nil, err
		}
		dir, e.tempDir = d, d
	}
	// etcd wants its data private (and warns otherwise).
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("configserver: etcd dir: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, fmt.Errorf("configserver: etcd dir: %w", err)
	}
	ports, err := choosePorts(dir)
	if err != nil {
		return nil, err
	}
	cfg := embed.NewConfig()
	cfg.Name = "tair"
	cfg.Dir = dir
	clientURL := url.URL{Scheme: "http", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(ports.Client))}
	peerURL := url.URL{Scheme: "http", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(ports.Peer))}
	cfg.ListenClientUrls = []url.URL{clientURL}
	cfg.AdvertiseClientUrls = []url.URL{clientURL}
	cfg.ListenPeerUrls = []url.URL{peerURL}
	cfg.AdvertisePeerUrls = []url.URL{peerURL}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.LogLevel = "warn"
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(newZapLogger(log, &e.closing))
	// Keep the history small: the table key is rewritten on every change.
	cfg.AutoCompactionMode = embed.CompactorModeRevision
	cfg.AutoCompactionRetention = "1000"
	etcd, err := embed.StartEtcd(cfg)
	if err != nil {
		e.cleanup()
		return nil, fmt.Errorf("configserver: start embedded etcd: %w", err)
	}
	select {
	case <-etcd.Server.ReadyNotify():
	case err := <-etcd.Err():
		etcd.Close()
		e.cleanup()
		return nil, fmt.Errorf("configserver: embedded etcd: %w", err)
	case <-time.After(30 * time.Second):
		etcd.Server.Stop()
		etcd.Close()
		e.cleanup()
		return nil, errors.New("configserver: embedded etcd not ready after 30s")
	}
	e.etcd = etcd
	e.client = clientURL.Host
	log.Info("embedded etcd ready", "dir", dir, "client", e.client, "peer", peerURL.Host)
	return e, nil
}

func choosePorts(dir string) (etcdPorts, error) {
	path := filepath.Join(dir, portsFile)
	var p etcdPorts
	if data, err := os.ReadFile(path); err == nil && json.Unmarshal(data, &p) == nil && p.Client > 0 && p.Peer > 0 {
		if portFree(p.Client) && portFree(p.Peer) {
			return p, nil
		}
	}
	var err error
	if p.Client, err = freePort(); err != nil {
		return p, err
	}
	for {
		if p.Peer, err = freePort(); err != nil {
			return p, err
		}
		if p.Peer != p.Client {
			break
		}
	}
	data, _ := json.Marshal(p)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return p, fmt.Errorf("configserver: %w", err)
	}
	return p, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("configserver: pick a port for etcd: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func portFree(port int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return false
	}
	l.Close()
	return true
}

func (e *embeddedEtcd) close() {
	e.closing.Store(true)
	if e.etcd != nil {
		e.etcd.Close()
	}
	e.cleanup()
}

func (e *embeddedEtcd) cleanup() {
	if e.tempDir != "" {
		os.RemoveAll(e.tempDir)
	}
}

// newEtcdClient connects to endpoints; log gets the client's warnings.
func newEtcdClient(endpoints []string, log *zap.Logger) (*clientv3.Client, error) {
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   endpoints,
		DialTimeout: 5 * time.Second,
		Logger:      log,
		// Detect a dead etcd connection quickly, so a cut-off leader's
		// session ends within its TTL.
		DialKeepAliveTime:    time.Second,
		DialKeepAliveTimeout: time.Second,
	})
	if err != nil {
		return nil, fmt.Errorf("configserver: etcd client: %w", err)
	}
	return cli, nil
}

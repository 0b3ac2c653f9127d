package proxy

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tairkv/tair/internal/glob"

	"github.com/redis/go-redis/v9"
	"github.com/tidwall/redcon"

	"github.com/tairkv/tair/internal/envelope"
	"github.com/tairkv/tair/internal/route"
	"github.com/tairkv/tair/resp"
)

// fakeDS is a tiny dataserver: it understands the TAIR.X envelope over a
// map, checks bucket mastership against its own table, and can be told
// to answer NOTMASTER or TRYAGAIN a number of times.
type fakeDS struct {
	t     testing.TB
	addr  string
	srv   *redcon.Server
	done  chan struct{} // closed when srv has stopped and closed its connections
	table atomic.Pointer[route.Table]

	mu         sync.Mutex
	data       map[string][]byte // area "\x00" key -> value
	vers       map[string]int64  // area "\x00" key -> version (TAIR.KEYVER)
	slaveReads atomic.Int64
	lists      map[string][][]byte // area "\x00" key -> list

	notMaster atomic.Int32 // answer NOTMASTER this many more times
	lapsed    atomic.Int32 // answer NOTMASTER for a lapsed lease this many more times
	behind    atomic.Int32 // answer NOTMASTER from an older table this many more times
	tryAgain  atomic.Int32 // answer TRYAGAIN this many more times
	calls     atomic.Int64
	envelopes atomic.Int64
	lastProto atomic.Int32
	noTouch   atomic.Int64 // envelopes flagged NO-TOUCH
	delay     atomic.Int64 // ns before each batch
	hangUp    atomic.Int32 // close the connection unanswered on this many more requests

	trackMu    sync.Mutex
	trackConns []redcon.Conn // hot-key cache links (TAIR.TRACKING)
	// beforeReply, when set, runs after a command was handled and
	// before its reply is written.
	beforeReply atomic.Pointer[func(args [][]byte)]
}

// push writes raw bytes (pushes) on every hot-key cache link of f.
func (f *fakeDS) push(b []byte) int {
	f.trackMu.Lock()
	defer f.trackMu.Unlock()
	for _, c := range f.trackConns {
		_, _ = c.NetConn().Write(b)
	}
	return len(f.trackConns)
}

// dropTracking closes the hot-key cache links the proxy keeps to f.
func (f *fakeDS) dropTracking() int {
	f.trackMu.Lock()
	defer f.trackMu.Unlock()
	n := len(f.trackConns)
	for _, c := range f.trackConns {
		_ = c.NetConn().Close() // redcon's Close flushes its writer: not from here
	}
	f.trackConns = nil
	return n
}

func newFakeDS(t testing.TB) *fakeDS {
	f := &fakeDS{t: t, data: map[string][]byte{}, lists: map[string][][]byte{}, vers: map[string]int64{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f.addr = ln.Addr().String()
	newFakeOn(t, f, ln)
	return f
}

// newFakeOn serves f on ln (a restart on the same address).
func newFakeOn(t testing.TB, f *fakeDS, ln net.Listener) *redcon.Server {
	srv := redcon.NewServerNetwork("tcp", f.addr, f.serve, nil, nil)
	done := make(chan struct{})
	f.srv, f.done = srv, done
	go func() { _ = srv.Serve(ln); close(done) }()
	t.Cleanup(func() { _ = srv.Close() })
	return srv
}

// stop shuts f down as a dead dataserver: redcon's Close only stops the
// listener and closes open connections later, from the accept loop, so
// stop waits for that before returning.
func (f *fakeDS) stop() {
	_ = f.srv.Close()
	<-f.done
}

func (f *fakeDS) serve(conn redcon.Conn, cmd redcon.Command) {
	if d := f.delay.Load(); d > 0 {
		time.Sleep(time.Duration(d))
	}
	cmds := append([]redcon.Command{cmd}, conn.ReadPipeline()...)
	if f.hangUp.Load() > 0 && f.hangUp.Add(-1) >= 0 {
		// As a killed dataserver: the request arrived, no reply ever will.
		_ = conn.Close()
		return
	}
	for _, c := range cmds {
		if strings.EqualFold(string(c.Args[0]), "TAIR.TRACKING") {
			f.trackMu.Lock()
			f.trackConns = append(f.trackConns, conn)
			f.trackMu.Unlock()
		}
		out := f.handle(c.Args)
		if h := f.beforeReply.Load(); h != nil {
			(*h)(c.Args)
		}
		conn.WriteRaw(out)
	}
}

func (f *fakeDS) key(area string, k []byte) string { return area + "\x00" + string(k) }

func (f *fakeDS) handle(args [][]byte) []byte {
	if strings.EqualFold(string(args[0]), "TAIR.TRACKING") {
		return resp.AppendOK(nil) // a hot-key cache's link; it never pushes
	}
	f.calls.Add(1)
	area, proto := "0", 2
	name := strings.ToUpper(string(args[0]))
	slaveOK := name == "TAIR.XR"
	if _, ok := envelope.KindOf(args[0]); ok {
		h, cmd, err := envelope.Parse(args)
		if err != nil {
			return resp.AppendError(nil, err.Error())
		}
		f.envelopes.Add(1)
		area, proto = strconv.Itoa(int(h.Area)), h.Proto
		f.lastProto.Store(int32(proto))
		if h.NoTouch {
			f.noTouch.Add(1)
		}
		args = cmd
		name = strings.ToUpper(string(args[0]))
	}
	t := f.table.Load()
	// Ownership, for keyed commands.
	var keys []int
	switch name {
	case "GET", "SET", "INCR", "LPUSH", "RPUSH", "LPOP", "BLPOP", "TAIR.KEYVER":
		keys = []int{1}
	case "MGET", "DEL", "EXISTS", "UNLINK":
		for i := 1; i < len(args); i++ {
			keys = append(keys, i)
		}
	case "MSET":
		for i := 1; i < len(args); i += 2 {
			keys = append(keys, i)
		}
	}
	if len(keys) > 0 && t != nil {
		b := t.Bucket(args[keys[0]])
		if n := f.notMaster.Load(); n > 0 && f.notMaster.CompareAndSwap(n, n-1) {
			return resp.AppendErr(nil, envelope.NotMasterOf(b, t.Version).Err())
		}
		if n := f.behind.Load(); n > 0 && f.behind.CompareAndSwap(n, n-1) {
			return resp.AppendErr(nil, envelope.NotMasterOf(b, t.Version-1).Err())
		}
		if n := f.lapsed.Load(); n > 0 && f.lapsed.CompareAndSwap(n, n-1) {
			lapsed := envelope.NotMasterOf(b, t.Version)
			lapsed.LeaseLapsed = true
			return resp.AppendErr(nil, lapsed.Err())
		}
		if n := f.tryAgain.Load(); n > 0 && f.tryAgain.CompareAndSwap(n, n-1) {
			return resp.AppendErr(nil, envelope.TryAgainOf(b).Err())
		}
		for _, k := range keys {
			if slaveOK && t.IsSlave(t.Bucket(args[k]), f.addr) {
				f.slaveReads.Add(1)
				continue
			}
			if !t.IsMaster(t.Bucket(args[k]), f.addr) {
				return resp.AppendErr(nil, envelope.NotMasterOf(t.Bucket(args[k]), t.Version).Err())
			}
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	switch name {
	case "PING":
		return resp.AppendStatus(nil, "PONG")
	case "GET":
		v, ok := f.data[f.key(area, args[1])]
		if !ok {
			return resp.AppendNull(nil, proto)
		}
		return resp.AppendBulk(nil, v)
	case "SET":
		f.data[f.key(area, args[1])] = append([]byte(nil), args[2]...)
		f.vers[f.key(area, args[1])]++
		return resp.AppendOK(nil)
	case "TAIR.KEYVER":
		out := resp.AppendArray(nil, len(args)-1)
		for _, k := range args[1:] {
			out = resp.AppendInt(out, f.vers[f.key(area, k)])
		}
		return out
	case "INCR":
		n, _ := strconv.ParseInt(string(f.data[f.key(area, args[1])]), 10, 64)
		n++
		f.data[f.key(area, args[1])] = strconv.AppendInt(nil, n, 10)
		f.vers[f.key(area, args[1])]++
		return resp.AppendInt(nil, n)
	case "MGET":
		out := resp.AppendArray(nil, len(args)-1)
		for _, k := range args[1:] {
			if v, ok := f.data[f.key(area, k)]; ok {
				out = resp.AppendBulk(out, v)
			} else {
				out = resp.AppendNull(out, proto)
			}
		}
		return out
	case "MSET":
		for i := 1; i+1 < len(args); i += 2 {
			f.data[f.key(area, args[i])] = append([]byte(nil), args[i+1]...)
		}
		return resp.AppendOK(nil)
	case "DEL", "UNLINK", "EXISTS":
		n := 0
		for _, k := range args[1:] {
			if _, ok := f.data[f.key(area, k)]; ok {
				n++
				if name != "EXISTS" {
					delete(f.data, f.key(area, k))
				}
			}
		}
		return resp.AppendInt(nil, int64(n))
	case "RPUSH":
		k := f.key(area, args[1])
		for _, v := range args[2:] {
			f.lists[k] = append(f.lists[k], append([]byte(nil), v...))
		}
		return resp.AppendInt(nil, int64(len(f.lists[k])))
	case "BLPOP":
		for _, kk := range args[1 : len(args)-1] {
			k := f.key(area, kk)
			if l := f.lists[k]; len(l) > 0 {
				f.lists[k] = l[1:]
				out := resp.AppendArray(nil, 2)
				out = resp.AppendBulk(out, kk)
				return resp.AppendBulk(out, l[0])
			}
		}
		return appendNullArray(nil, proto)
	case "DBSIZE":
		n := 0
		for k := range f.data {
			a, kk, _ := strings.Cut(k, "\x00")
			if a == area && t.IsMaster(t.Bucket([]byte(kk)), f.addr) {
				n++
			}
		}
		return resp.AppendInt(nil, int64(n))
	case "FLUSHDB":
		for k := range f.data {
			if a, _, _ := strings.Cut(k, "\x00"); a == area {
				delete(f.data, k)
			}
		}
		return resp.AppendOK(nil)
	case "SCANBUCKET":
		b, _ := strconv.Atoi(string(args[1]))
		if !t.IsMaster(route.BucketID(b), f.addr) {
			return resp.AppendErr(nil, envelope.NotMasterOf(route.BucketID(b), t.Version).Err())
		}
		var match []byte
		for i := 3; i+1 < len(args); i += 2 {
			if strings.EqualFold(string(args[i]), "match") {
				match = args[i+1]
			}
		}
		var ks []string
		for k := range f.data {
			a, kk, _ := strings.Cut(k, "\x00")
			if a == area && t.Bucket([]byte(kk)) == route.BucketID(b) && (match == nil || glob.Match(match, []byte(kk), false)) {
				ks = append(ks, kk)
			}
		}
		sort.Strings(ks)
		out := resp.AppendArray(nil, 2)
		out = resp.AppendBulkString(out, "0")
		out = resp.AppendArray(out, len(ks))
		for _, k := range ks {
			out = resp.AppendBulkString(out, k)
		}
		return out
	case "MULTIEXEC":
		n, _ := strconv.Atoi(string(args[1]))
		i := 2
		for c := 0; c < n; c++ {
			argc, _ := strconv.Atoi(string(args[i]))
			i += 1 + argc
		}
		if i < len(args) && string(args[i]) == "WATCH" {
			m, _ := strconv.Atoi(string(args[i+1]))
			for j := 0; j < m; j++ {
				v, _ := strconv.ParseInt(string(args[i+2+2*j+1]), 10, 64)
				if f.vers[f.key(area, args[i+2+2*j])] != v {
					return appendNullArray(nil, proto)
				}
			}
		}
		i = 2
		out := resp.AppendArray(nil, n)
		f.mu.Unlock()
		for c := 0; c < n; c++ {
			argc, _ := strconv.Atoi(string(args[i]))
			a, _ := strconv.Atoi(area)
			h := envelope.Header{Kind: envelope.Master, Area: uint16(a), Proto: proto}
			out = append(out, f.handle(envelope.Args(h, args[i+1:i+1+argc]))...)
			i += 1 + argc
		}
		f.mu.Lock()
		return out
	}
	return resp.AppendError(nil, "ERR unknown command '"+strings.ToLower(name)+"'")
}

// fakeConfigServer serves /v1/table like a configserver (long poll).
type fakeConfigServer struct {
	srv   *httptest.Server
	table atomic.Pointer[route.Table]
	hits  atomic.Int64
}

func newFakeConfigServer(t testing.TB) *fakeConfigServer {
	cs := &fakeConfigServer{}
	cs.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cs.hits.Add(1)
		after, _ := strconv.ParseUint(r.URL.Query().Get("after"), 10, 64)
		wait, _ := strconv.Atoi(r.URL.Query().Get("wait"))
		deadline := time.Now().Add(time.Duration(wait) * time.Millisecond)
		for {
			tb := cs.table.Load()
			if tb != nil && tb.Version > route.Version(after) {
				_ = json.NewEncoder(w).Encode(tb)
				return
			}
			if time.Now().After(deadline) {
				w.WriteHeader(http.StatusNotModified)
				return
			}
			select {
			case <-r.Context().Done():
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}))
	t.Cleanup(cs.srv.Close)
	return cs
}

func (cs *fakeConfigServer) addr() string { return strings.TrimPrefix(cs.srv.URL, "http://") }

// makeTable gives bucket b to master nodes[b % n], slave nodes[(b+1) % n].
func makeTable(version route.Version, buckets uint32, addrs ...string) *route.Table {
	t := &route.Table{Version: version, Buckets: buckets, Copies: 2, Serving: make([][]string, buckets)}
	for b := range t.Serving {
		row := []string{addrs[b%len(addrs)]}
		if len(addrs) > 1 {
			row = append(row, addrs[(b+1)%len(addrs)])
		}
		t.Serving[b] = row
	}
	return t
}

// env is a proxy in front of n fake dataservers.
type env struct {
	t     testing.TB
	fakes []*fakeDS
	table *route.Table
	p     *Server
	cs    *fakeConfigServer
}

type envOpt func(*Config)

func newEnv(t testing.TB, n int, withCS bool, opts ...envOpt) *env {
	t.Helper()
	e := &env{t: t}
	var addrs []string
	for i := 0; i < n; i++ {
		f := newFakeDS(t)
		e.fakes = append(e.fakes, f)
		addrs = append(addrs, f.addr)
	}
	e.table = makeTable(5, 64, addrs...)
	for _, f := range e.fakes {
		f.table.Store(e.table)
	}
	cfg := DefaultConfig()
	cfg.Listen, cfg.HTTP = "127.0.0.1:0", "127.0.0.1:0"
	if withCS {
		e.cs = newFakeConfigServer(t)
		e.cs.table.Store(e.table)
		cfg.ConfigServers = []string{e.cs.addr()}
	}
	for _, o := range opts {
		o(&cfg)
	}
	p, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !withCS {
		if err := p.SetTable(e.table); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	e.p = p
	return e
}

func (e *env) client(opts ...func(*redis.Options)) *redis.Client {
	o := &redis.Options{Addr: e.p.Addr(), MaxRetries: -1, Protocol: 2}
	for _, f := range opts {
		f(o)
	}
	c := redis.NewClient(o)
	e.t.Cleanup(func() { _ = c.Close() })
	return c
}

// rawConn is a raw RESP connection for byte-exact checks.
type rawConn struct {
	t testing.TB
	c net.Conn
	r *resp.ReplyReader
}

func (e *env) raw() *rawConn {
	c, err := net.Dial("tcp", e.p.Addr())
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = c.Close() })
	return &rawConn{t: e.t, c: c, r: resp.NewReplyReader(c, 0, resp.Limits{})}
}

// nonReader connects a client that reads its replies slowly if at all
// (a small receive buffer fills at once), for the output limits' tests.
func (e *env) nonReader() net.Conn {
	c, err := net.Dial("tcp", e.p.Addr())
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = c.Close() })
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetReadBuffer(4096)
	}
	return c
}

func (rc *rawConn) send(args ...string) {
	b := make([][]byte, len(args))
	for i, a := range args {
		b[i] = []byte(a)
	}
	if _, err := rc.c.Write(resp.AppendCommand(nil, b...)); err != nil {
		rc.t.Fatal(err)
	}
}

func (rc *rawConn) read() string {
	rc.t.Helper()
	_ = rc.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	raw, err := rc.r.ReadReply()
	if err != nil {
		rc.t.Fatalf("read reply: %v", err)
	}
	return string(raw)
}

func (rc *rawConn) do(args ...string) string {
	rc.t.Helper()
	rc.send(args...)
	return rc.read()
}

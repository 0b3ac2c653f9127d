package proxy

import (
	"bytes"
	"net"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/tairkv/tair/resp"
)

// Pub/sub between proxies: each proxy keeps one persistent, pipelined
// connection (peerLink) to every live peer (Server.livePeers: --peers
// and the configserver's proxy list) and sends it TAIR.PUBFWD requests:
// PUBLISH and SPUBLISH to deliver to the peer's subscribers, and the
// PUBSUB queries. The link authenticates as the proxy's own clients do.
// One link per ordered pair of proxies, written in the order requests
// were queued and served by one session on the peer, is a FIFO: the
// messages of one publishing connection reach every subscriber in the
// order published.
//
// A publisher waits for the peers' answers (their receiver counts) at
// most Config.PubSubPeerWait (100 ms); a peer that has not answered by then is counted 0 and
// marked lagging, and later requests are still sent to it but not waited
// for until it has answered everything it was sent, or answers a request
// within the bound again. A link that is down
// answers at once (counted 0, the message lost: at most once, as Redis).

const (
	// peerTimeout resets a link whose oldest request is unanswered that
	// long (a paused or wedged peer).
	peerTimeout = 5 * time.Second
	// peerMaxPending bounds the bytes queued or in flight on a link
	// (one request of any size is let through alone); past it messages
	// to that peer are dropped.
	peerMaxPending = 64 << 20
)

// peerSet is the links to the live peers.
type peerSet struct {
	mu     sync.Mutex
	links  map[string]*peerLink
	seen   *[]string // the livePeers list the links were matched to
	closed bool
	wg     sync.WaitGroup
}

// current returns the links to the live peers, opening and closing links
// as the list of live peers changes.
func (p *peerSet) current(s *Server) []*peerLink {
	live := s.livePeers.Load()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || live == nil {
		return nil
	}
	if live != p.seen {
		p.seen = live
		want := map[string]bool{}
		for _, a := range *live {
			want[a] = true
		}
		for a, l := range p.links {
			if !want[a] {
				l.close()
				delete(p.links, a)
			}
		}
		if p.links == nil {
			p.links = map[string]*peerLink{}
		}
		for a := range want {
			if p.links[a] == nil {
				l := &peerLink{s: s, addr: a, wake: make(chan struct{}, 1), done: make(chan struct{})}
				p.links[a] = l
				p.wg.Add(1)
				go l.run(&p.wg)
			}
		}
	}
	out := make([]*peerLink, 0, len(p.links))
	for _, l := range p.links {
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].addr < out[j].addr })
	return out
}

// close stops every link (Server.Close).
func (p *peerSet) close() {
	p.mu.Lock()
	p.closed = true
	for _, l := range p.links {
		l.close()
	}
	p.links = nil
	p.mu.Unlock()
	p.wg.Wait()
}

// peerWaits are the answers a request to every peer awaits.
type peerWaits struct {
	deadline time.Time
	chans    []chan []byte
	links    []*peerLink
}

// broadcast sends TAIR.PUBFWD args... to every live peer.
func (p *peerSet) broadcast(s *Server, args [][]byte) *peerWaits {
	links := p.current(s)
	if len(links) == 0 {
		return nil
	}
	cmd := resp.AppendCommand(nil, append([][]byte{[]byte("TAIR.PUBFWD")}, args...)...)
	w := &peerWaits{deadline: time.Now().Add(s.cfg.PubSubPeerWait)}
	for _, l := range links {
		if ch := l.send(cmd); ch != nil {
			w.chans = append(w.chans, ch)
			w.links = append(w.links, l)
		}
	}
	return w
}

// collect returns the answers that came within PubSubPeerWait (raw replies);
// the peers that did not answer are marked lagging.
func (w *peerWaits) collect() [][]byte {
	if w == nil || len(w.chans) == 0 {
		return nil
	}
	out := make([][]byte, 0, len(w.chans))
	timer := time.NewTimer(time.Until(w.deadline))
	defer timer.Stop()
	expired := false
	for i, ch := range w.chans {
		if !expired {
			select {
			case rep := <-ch:
				if rep != nil {
					out = append(out, rep)
				}
				continue
			case <-timer.C:
				expired = true
			}
		}
		select {
		case rep := <-ch:
			if rep != nil {
				out = append(out, rep)
			}
		default:
			w.links[i].lag()
		}
	}
	return out
}

// peerReq is one request on a link; ch (buffered) gets its raw reply, or
// nil when the link failed.
type peerReq struct {
	cmd  []byte
	ch   chan []byte
	at   time.Time
	auth bool
}

const (
	linkConnecting = iota
	linkUp
	linkDown // the last dial failed: requests are answered at once
)

// peerLink is the connection to one peer proxy: a goroutine that dials,
// writes what is queued (run, writeLoop) and one that reads the replies
// in order (readLoop).
type peerLink struct {
	s    *Server
	addr string
	wake chan struct{}
	done chan struct{} // closed by close

	mu      sync.Mutex
	queue   []peerReq // to write
	flight  []peerReq // written, awaiting replies in order
	pending int       // bytes of queue and flight
	state   int
	lagging bool
	closed  bool
	conn    net.Conn
}

// send queues cmd; the channel gets the reply, or nil when the link is
// down, full or lagging (not waited for).
func (l *peerLink) send(cmd []byte) chan []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed || l.state == linkDown || l.pending > 0 && l.pending+len(cmd) > peerMaxPending {
		return nil
	}
	ch := make(chan []byte, 1)
	l.queue = append(l.queue, peerReq{cmd: cmd, ch: ch, at: time.Now()})
	l.pending += len(cmd)
	select {
	case l.wake <- struct{}{}:
	default:
	}
	if l.lagging {
		return nil
	}
	return ch
}

// lag marks the link lagging: a request went unanswered for PubSubPeerWait.
func (l *peerLink) lag() {
	l.mu.Lock()
	l.lagging = true
	l.mu.Unlock()
}

func (l *peerLink) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	l.closed = true
	close(l.done)
	if l.conn != nil {
		_ = l.conn.Close()
	}
}

// failLocked answers every queued and in-flight request nil.
func (l *peerLink) failLocked() {
	for _, q := range [][]peerReq{l.queue, l.flight} {
		for _, r := range q {
			if r.ch != nil {
				r.ch <- nil
			}
		}
	}
	l.queue, l.flight, l.pending, l.lagging = nil, nil, 0, false
}

func (l *peerLink) run(wg *sync.WaitGroup) {
	defer wg.Done()
	backoff := 50 * time.Millisecond
	for {
		l.mu.Lock()
		closed := l.closed
		l.mu.Unlock()
		if closed {
			break
		}
		c, err := net.DialTimeout("tcp", l.addr, l.s.cfg.DialTimeout)
		if err != nil {
			l.mu.Lock()
			l.state = linkDown
			l.failLocked()
			l.mu.Unlock()
			select {
			case <-l.done:
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, time.Second)
			continue
		}
		backoff = 50 * time.Millisecond
		l.serve(c)
	}
	l.mu.Lock()
	l.failLocked()
	l.mu.Unlock()
}

// serve runs one connection until it fails or the link closes; what it
// had not answered is answered nil (lost).
func (l *peerLink) serve(c net.Conn) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		_ = c.Close()
		return
	}
	l.conn = c
	l.state = linkUp
	if auth := l.authCommand(); auth != nil {
		l.queue = append([]peerReq{{cmd: auth, at: time.Now(), auth: true}}, l.queue...)
		l.pending += len(auth)
	}
	l.mu.Unlock()
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		l.readLoop(c)
	}()
	l.writeLoop(c, readerDone)
	_ = c.Close()
	<-readerDone
	l.mu.Lock()
	l.conn = nil
	l.state = linkConnecting
	l.failLocked()
	l.mu.Unlock()
}

// authCommand is AUTH as this proxy's clients would send it, or nil when
// no password is set.
func (l *peerLink) authCommand() []byte {
	s := l.s
	if pass := s.dyn.password(); pass != "" {
		return resp.AppendCommand(nil, []byte("AUTH"), []byte(pass))
	}
	if len(s.cfg.Users) == 0 {
		return nil
	}
	users := make([]string, 0, len(s.cfg.Users))
	for u := range s.cfg.Users {
		users = append(users, u)
	}
	sort.Strings(users)
	return resp.AppendCommand(nil, []byte("AUTH"), []byte(users[0]), []byte(s.cfg.Users[users[0]]))
}

func (l *peerLink) writeLoop(c net.Conn, readerDone chan struct{}) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var buf []byte
	for {
		l.mu.Lock()
		batch := l.queue
		l.queue = nil
		l.flight = append(l.flight, batch...)
		stale := len(l.flight) > 0 && time.Since(l.flight[0].at) > peerTimeout
		l.mu.Unlock()
		if stale {
			l.s.log.Info("pub/sub peer does not answer: reconnecting", "peer", l.addr)
			return
		}
		if len(batch) > 0 {
			buf = buf[:0]
			for _, r := range batch {
				buf = append(buf, r.cmd...)
			}
			_ = c.SetWriteDeadline(time.Now().Add(peerTimeout))
			if _, err := c.Write(buf); err != nil {
				return
			}
			if cap(buf) > 1<<20 {
				buf = nil
			}
			continue
		}
		select {
		case <-l.wake:
		case <-tick.C:
		case <-l.done:
			return
		case <-readerDone:
			return
		}
	}
}

func (l *peerLink) readLoop(c net.Conn) {
	rd := resp.NewReplyReader(c, 0, resp.Limits{})
	for {
		raw, err := rd.ReadReply()
		if err != nil {
			_ = c.Close()
			return
		}
		l.mu.Lock()
		if len(l.flight) == 0 {
			l.mu.Unlock()
			_ = c.Close()
			return
		}
		r := l.flight[0]
		l.flight[0] = peerReq{}
		l.flight = l.flight[1:]
		l.pending -= len(r.cmd)
		if len(l.flight) == 0 && len(l.queue) == 0 || time.Since(r.at) < l.s.cfg.PubSubPeerWait {
			// Caught up, or answering within the bound again (under
			// steady traffic the link may never be empty).
			l.lagging = false
		}
		l.mu.Unlock()
		switch {
		case r.auth:
			if len(raw) > 0 && raw[0] == '-' {
				l.s.log.Warn("pub/sub peer refused this proxy's password", "peer", l.addr, "reply", string(bytes.TrimSpace(raw)))
			}
		case r.ch != nil:
			r.ch <- bytes.Clone(raw)
		}
	}
}

// replyInt reads an integer reply.
func replyInt(raw []byte) (int64, bool) {
	if len(raw) < 4 || raw[0] != ':' {
		return 0, false
	}
	v, err := strconv.ParseInt(string(raw[1:len(raw)-2]), 10, 64)
	return v, err == nil
}

// replyElems splits a flat array reply into its elements (raw); nil when
// raw is not an array of simple elements.
func replyElems(raw []byte) [][]byte {
	line := func(b []byte) ([]byte, []byte, bool) {
		i := bytes.Index(b, []byte("\r\n"))
		if i < 0 {
			return nil, nil, false
		}
		return b[:i], b[i+2:], true
	}
	if len(raw) == 0 || raw[0] != '*' {
		return nil
	}
	hdr, rest, ok := line(raw[1:])
	if !ok {
		return nil
	}
	n, err := strconv.Atoi(string(hdr))
	if err != nil || n < 0 || n > len(rest) {
		return nil
	}
	out := make([][]byte, 0, n)
	for i := 0; i < n; i++ {
		if len(rest) == 0 {
			return nil
		}
		switch rest[0] {
		case ':':
			v, r2, ok := line(rest)
			if !ok {
				return nil
			}
			out = append(out, v)
			rest = r2
		case '$':
			h, r2, ok := line(rest[1:])
			if !ok {
				return nil
			}
			l, err := strconv.Atoi(string(h))
			if err != nil || l < 0 || len(r2) < l+2 {
				return nil
			}
			out = append(out, r2[:l])
			rest = r2[l+2:]
		default:
			return nil
		}
	}
	return out
}

// replyStrings reads an array of bulk strings.
func replyStrings(raw []byte) []string {
	el := replyElems(raw)
	out := make([]string, len(el))
	for i, e := range el {
		out[i] = string(e)
	}
	return out
}

// replyInts reads an array of integers (nil when it is not one).
func replyInts(raw []byte) []int64 {
	el := replyElems(raw)
	out := make([]int64, 0, len(el))
	for _, e := range el {
		if len(e) == 0 || e[0] != ':' {
			return nil
		}
		v, err := strconv.ParseInt(string(e[1:]), 10, 64)
		if err != nil {
			return nil
		}
		out = append(out, v)
	}
	return out
}

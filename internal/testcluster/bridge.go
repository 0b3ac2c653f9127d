package testcluster

import (
	"fmt"
	"net"
	"sort"
	"sync"
	"testing"
	"time"
)

// Bridge relays the links between roles that a harness can redirect:
// the configserver addresses a dataserver or proxy is given (it finds the
// dataservers by the addresses in the table, which are their own). Each
// link, one role's connections to another's listener, is a TCP listener of
// its own in the test process that forwards to the target, and a fault
// acts on it: Cut holds its bytes (a partition: connections stay open and
// nothing crosses until Heal, when what was held goes through), Delay
// holds each chunk for a while (latency, not a rate limit), and Down
// closes its connections and refuses new ones, as a dead target does
// (dataservers tell a configserver that refuses connections from one
// that does not answer), until Up.
type Bridge struct {
	t  testing.TB
	mu sync.Mutex
	// links by [from, to] node name.
	links map[[2]string]*Link
}

// NewBridge returns an empty bridge whose links close at cleanup.
func NewBridge(t testing.TB) *Bridge {
	b := &Bridge{t: t, links: map[[2]string]*Link{}}
	t.Cleanup(b.Close)
	return b
}

// Link returns the link from one node to another, listening on a free
// loopback port and forwarding to target; the same link (and address) for
// the same pair thereafter, whatever target says.
func (b *Bridge) Link(from, to, target string) *Link {
	b.t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	if l := b.links[[2]string{from, to}]; l != nil {
		return l
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.t.Fatalf("bridge: %v", err)
	}
	l := &Link{From: from, To: to, target: target, addr: ln.Addr().String(),
		ln: ln, gate: closedGate(), conns: map[*relay]struct{}{}}
	l.wg.Add(1)
	go l.accept(ln)
	b.links[[2]string{from, to}] = l
	return l
}

// Find returns the link between a and b, either way (nil when none).
func (b *Bridge) Find(a, c string) *Link {
	b.mu.Lock()
	defer b.mu.Unlock()
	if l := b.links[[2]string{a, c}]; l != nil {
		return l
	}
	return b.links[[2]string{c, a}]
}

// Of returns every link from or to node, in a stable order.
func (b *Bridge) Of(node string) []*Link {
	return b.filter(func(l *Link) bool { return l.From == node || l.To == node })
}

// All returns every link.
func (b *Bridge) All() []*Link { return b.filter(func(*Link) bool { return true }) }

// From returns every link from node; To every link to it.
func (b *Bridge) From(node string) []*Link {
	return b.filter(func(l *Link) bool { return l.From == node })
}
func (b *Bridge) To(node string) []*Link { return b.filter(func(l *Link) bool { return l.To == node }) }

func (b *Bridge) filter(keep func(*Link) bool) []*Link {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []*Link
	for _, l := range b.links {
		if keep(l) {
			out = append(out, l)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].addr < out[j].addr })
	return out
}

// Close stops every link and waits for its goroutines.
func (b *Bridge) Close() {
	b.mu.Lock()
	links := make([]*Link, 0, len(b.links))
	for _, l := range b.links {
		links = append(links, l)
	}
	b.mu.Unlock()
	for _, l := range links {
		l.close()
	}
}

// Link is one relayed link (see Bridge).
type Link struct {
	From, To string
	target   string
	addr     string
	wg       sync.WaitGroup

	mu     sync.Mutex
	ln     net.Listener // nil while down
	gate   chan struct{}
	delay  time.Duration
	conns  map[*relay]struct{}
	closed bool
}

// Addr is where the From node is told the To node listens.
func (l *Link) Addr() string { return l.addr }

func (l *Link) String() string { return fmt.Sprintf("%s->%s (%s->%s)", l.From, l.To, l.addr, l.target) }

// closedGate is the gate of a link that passes bytes.
func closedGate() chan struct{} {
	g := make(chan struct{})
	close(g)
	return g
}

// Cut holds every byte crossing the link, either way, from now until
// Heal; connections stay open and new ones are accepted (and reach the
// target, which hears nothing from them), as in a partition.
func (l *Link) Cut() {
	l.mu.Lock()
	defer l.mu.Unlock()
	select {
	case <-l.gate:
		l.gate = make(chan struct{})
	default: // already cut
	}
}

// Delay holds each chunk crossing the link for d before passing it on
// (0: none).
func (l *Link) Delay(d time.Duration) {
	l.mu.Lock()
	l.delay = d
	l.mu.Unlock()
}

// Heal ends a Cut (what was held goes through) and a Delay.
func (l *Link) Heal() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.delay = 0
	select {
	case <-l.gate:
	default:
		close(l.gate)
	}
}

// Down closes the link's connections and its listener: connecting to
// it is refused, as to a dead process, until Up.
func (l *Link) Down() {
	l.mu.Lock()
	ln := l.ln
	l.ln = nil
	conns := l.takeConns()
	l.mu.Unlock()
	if ln != nil {
		_ = ln.Close()
	}
	for _, r := range conns {
		r.close()
	}
}

// Reset closes the link's connections (both ends see them end, as when
// the process at one end dies) and keeps accepting new ones.
func (l *Link) Reset() {
	l.mu.Lock()
	conns := l.takeConns()
	l.mu.Unlock()
	for _, r := range conns {
		r.close()
	}
}

func (l *Link) takeConns() []*relay {
	out := make([]*relay, 0, len(l.conns))
	for r := range l.conns {
		out = append(out, r)
	}
	clear(l.conns)
	return out
}

// Up listens again on the link's address after Down.
func (l *Link) Up() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ln != nil || l.closed {
		return nil
	}
	var ln net.Listener
	var err error
	// The port was ours a moment ago; another socket may hold it for a
	// while (a connection of the old listener in TIME_WAIT does not:
	// Go listens with SO_REUSEADDR).
	for try := 0; try < 50; try++ {
		if ln, err = net.Listen("tcp", l.addr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		return fmt.Errorf("bridge: link %s up: %w", l, err)
	}
	l.ln = ln
	l.wg.Add(1)
	go l.accept(ln)
	return nil
}

func (l *Link) close() {
	l.mu.Lock()
	l.closed = true
	ln := l.ln
	l.ln = nil
	conns := l.takeConns()
	select {
	case <-l.gate:
	default:
		close(l.gate)
	}
	l.mu.Unlock()
	if ln != nil {
		_ = ln.Close()
	}
	for _, r := range conns {
		r.close()
	}
	l.wg.Wait()
}

func (l *Link) accept(ln net.Listener) {
	defer l.wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		up, err := net.DialTimeout("tcp", l.target, 2*time.Second)
		if err != nil {
			// The target is not there: the connection ends at once
			// (Down makes a link refuse instead).
			_ = c.Close()
			continue
		}
		r := &relay{l: l, a: c, b: up, done: make(chan struct{})}
		l.mu.Lock()
		if l.closed || l.ln != ln {
			l.mu.Unlock()
			_ = c.Close()
			_ = up.Close()
			return
		}
		l.conns[r] = struct{}{}
		l.mu.Unlock()
		l.wg.Add(4)
		go r.pump(c, up)
		go r.pump(up, c)
	}
}

// relay is one connection through a link: a, from the From node; b, to
// the target.
type relay struct {
	l    *Link
	a, b net.Conn
	once sync.Once
	done chan struct{}
}

func (r *relay) close() {
	r.once.Do(func() {
		close(r.done)
		_ = r.a.Close()
		_ = r.b.Close()
		r.l.mu.Lock()
		delete(r.l.conns, r)
		r.l.mu.Unlock()
	})
}

type chunk struct {
	data []byte
	at   time.Time
}

// pump copies src to dst through a queue: a reader that takes the bytes
// as they come (up to 64 chunks ahead, then the sender waits, as on a
// full TCP window) and a writer that passes each on when the link's
// delay after its arrival has run out and the link is not cut.
func (r *relay) pump(src, dst net.Conn) {
	q := make(chan chunk, 64)
	go func() {
		defer r.l.wg.Done()
		defer close(q)
		for {
			buf := make([]byte, 32<<10)
			n, err := src.Read(buf)
			if n > 0 {
				select {
				case q <- chunk{buf[:n], time.Now()}:
				case <-r.done:
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	defer r.l.wg.Done()
	for c := range q {
		for {
			r.l.mu.Lock()
			gate, delay := r.l.gate, r.l.delay
			r.l.mu.Unlock()
			if wait := time.Until(c.at.Add(delay)); wait > 0 {
				select {
				case <-time.After(wait):
				case <-r.done:
					return
				}
			}
			select {
			case <-gate:
			case <-r.done:
				return
			}
			// Cut or delayed again meanwhile: look again.
			r.l.mu.Lock()
			same := r.l.gate == gate && r.l.delay <= delay
			r.l.mu.Unlock()
			if same {
				break
			}
		}
		if _, err := dst.Write(c.data); err != nil {
			break
		}
	}
	// One side ended (or failed): end the connection both ways, as the
	// harness's roles do not half-close.
	r.close()
	for range q { // let the reader finish
	}
}

// Package gnetx holds what the proxy and the dataserver share about
// running on github.com/panjf2000/gnet event loops.
package gnetx

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/panjf2000/gnet/v2"
	"golang.org/x/sys/unix"
)

// BoundAddr is the address eng's listener is bound to (a port 0
// resolved), or "" when it cannot tell.
func BoundAddr(eng gnet.Engine) string {
	fd, err := eng.Dup()
	if err != nil {
		return ""
	}
	defer unix.Close(fd) //nolint:errcheck
	return sockName(fd)
}

// LocalAddr is the local address of an accepted connection: the address
// the client reached. (gnet reports the listener's configured address,
// which says 0.0.0.0 or port 0 when the listener was bound so.)
func LocalAddr(c gnet.Conn) string {
	if a := sockName(c.Fd()); a != "" {
		return a
	}
	return c.LocalAddr().String()
}

func sockName(fd int) string {
	sa, err := unix.Getsockname(fd)
	if err != nil {
		return ""
	}
	switch in := sa.(type) {
	case *unix.SockaddrInet4:
		return net.JoinHostPort(net.IP(in.Addr[:]).String(), strconv.Itoa(in.Port))
	case *unix.SockaddrInet6:
		return net.JoinHostPort(net.IP(in.Addr[:]).String(), strconv.Itoa(in.Port))
	}
	return ""
}

// Logger sends gnet's log lines to slog (its informational lines at
// debug level: they repeat what the caller logs).
type Logger struct{ L *slog.Logger }

func (g Logger) Debugf(f string, a ...any) { g.L.Debug(fmt.Sprintf(f, a...), "component", "gnet") }
func (g Logger) Infof(f string, a ...any)  { g.L.Debug(fmt.Sprintf(f, a...), "component", "gnet") }
func (g Logger) Warnf(f string, a ...any)  { g.L.Warn(fmt.Sprintf(f, a...), "component", "gnet") }
func (g Logger) Errorf(f string, a ...any) { g.L.Error(fmt.Sprintf(f, a...), "component", "gnet") }
func (g Logger) Fatalf(f string, a ...any) { g.L.Error(fmt.Sprintf(f, a...), "component", "gnet") }

// Engine is a listener served by a gnet event handler.
type Engine struct {
	eng     gnet.Engine
	addr    string
	loops   int
	done    chan error
	stopped sync.Once
}

// bootHook tells Start that the engine is up.
type bootHook struct {
	gnet.EventHandler
	booted chan gnet.Engine
}

func (b *bootHook) OnBoot(eng gnet.Engine) gnet.Action {
	a := b.EventHandler.OnBoot(eng)
	b.booted <- eng
	return a
}

// Start serves listen (host:port, port 0 picks one) with h on loops
// event loops (0: Procs), level-triggered, TCP_NODELAY, with gnet's
// log lines going to log. It returns once the listener is bound.
func Start(h gnet.EventHandler, listen string, loops int, log *slog.Logger) (*Engine, error) {
	if loops <= 0 {
		loops = Procs()
	}
	// gnet reports a taken port as "setsockopt: bad file descriptor";
	// binding once first gives the user the real reason.
	probe, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, err
	}
	probe.Close()
	reserve(loops)
	hook := &bootHook{EventHandler: h, booted: make(chan gnet.Engine, 1)}
	e := &Engine{done: make(chan error, 1), loops: loops}
	go func() {
		e.done <- gnet.Run(hook, "tcp://"+listen,
			gnet.WithMulticore(true),
			gnet.WithNumEventLoop(loops),
			gnet.WithReuseAddr(true),
			gnet.WithTCPNoDelay(gnet.TCPNoDelay),
			gnet.WithTCPKeepAlive(time.Minute),
			gnet.WithLogger(Logger{L: log}),
		)
	}()
	select {
	case eng := <-hook.booted:
		e.eng = eng
		e.addr = BoundAddr(eng)
		if e.addr == "" {
			e.addr = listen
		}
		return e, nil
	case err := <-e.done:
		reserve(-loops)
		if err == nil {
			err = errors.New("event loops stopped at start")
		}
		return nil, fmt.Errorf("listen %s: %w", listen, err)
	}
}

// Addr is the bound address.
func (e *Engine) Addr() string { return e.addr }

// Stop closes every connection (OnClose runs for each) and stops the
// loops, waiting up to 5 s.
func (e *Engine) Stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	defer e.stopped.Do(func() { reserve(-e.loops) })
	if err := e.eng.Stop(ctx); err != nil {
		return err
	}
	select {
	case <-e.done:
	case <-ctx.Done():
	}
	return nil
}

// An event loop waits in epoll_wait as a plain system call, so Go's
// scheduler counts a waiting loop as a busy P. When every P is held by
// such a wait, the runtime's monitor takes each P back from a wait that
// lasts over 20 µs and hands it to another thread (runtime.retake: a P
// is left in a system call only while another P is idle), so nearly
// every wake-up of a loop at -P1 load went through a thread switch.
// reserve keeps one P more than the running loops, up to one more than
// GOMAXPROCS was: the spare P is idle almost always (it runs timers and
// the goroutines of the slow paths), and the loops' waits are left
// alone. `redis-benchmark -c 50 -P 1` through a proxy and a dataserver
// of one loop each: GOMAXPROCS=1 gave 0.72-1.0 of twemproxy's rate,
// 2 (one spare) 1.01-1.16, with fewer context switches per request.
var spare struct {
	sync.Mutex
	base  int // GOMAXPROCS before the first engine started
	loops int // event loops of the engines running
}

// Procs is GOMAXPROCS without the spare P: the Ps there are for event
// loops to share.
func Procs() int {
	spare.Lock()
	defer spare.Unlock()
	if spare.loops == 0 {
		return runtime.GOMAXPROCS(0)
	}
	return spare.base
}

func reserve(delta int) {
	spare.Lock()
	defer spare.Unlock()
	if spare.loops == 0 {
		spare.base = runtime.GOMAXPROCS(0)
	}
	spare.loops += delta
	want := spare.base
	if spare.loops >= spare.base {
		want = spare.base + 1
	}
	if runtime.GOMAXPROCS(0) != want {
		runtime.GOMAXPROCS(want)
	}
}

// Package gnetx holds what the proxy and the dataserver share about
// running on github.com/panjf2000/gnet event loops.
package gnetx

import (
	"fmt"
	"log/slog"
	"net"
	"strconv"

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

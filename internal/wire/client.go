package wire

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/tairkv/tair/internal/route"
)

// ErrNotModified is returned by Client.Table when no newer table came
// before the wait ran out.
var ErrNotModified = errors.New("wire: table not modified")

// ErrNoLeader is returned by leader-only calls when every configserver
// either refused the connection (not running) or answered that it is not
// the leader: no leader exists at that moment, so nobody can change the
// table. A timeout or any other failure is not ErrNoLeader.
var ErrNoLeader = errors.New("wire: no configserver leads")

// Client talks to a set of configservers, moving to the next address (or to
// the leader a standby names) when one fails. Safe for concurrent use.
type Client struct {
	http *http.Client

	mu    struct{ sync.Mutex }
	addrs []string
	cur   int

	adminToken string // see SetAdminToken
}

// NewClient returns a client for the given configserver addresses
// ("host:port", comma-separated lists are split).
func NewClient(addrs ...string) *Client {
	var list []string
	for _, a := range addrs {
		for _, p := range strings.Split(a, ",") {
			if p = strings.TrimSpace(p); p != "" {
				list = append(list, p)
			}
		}
	}
	return &Client{
		http:  &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4, IdleConnTimeout: 30 * time.Second}},
		addrs: list,
	}
}

// Addrs returns the configured addresses.
func (c *Client) Addrs() []string { return append([]string(nil), c.addrs...) }

func (c *Client) order() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, 0, len(c.addrs))
	for i := range c.addrs {
		out = append(out, c.addrs[(c.cur+i)%len(c.addrs)])
	}
	return out
}

func (c *Client) prefer(addr string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, a := range c.addrs {
		if a == addr {
			c.cur = i
			return
		}
	}
}

// Heartbeat sends hb to the leading configserver.
func (c *Client) Heartbeat(ctx context.Context, hb *Heartbeat) (*HeartbeatReply, error) {
	return postLeader[HeartbeatReply](ctx, c, "/v1/heartbeat", hb)
}

// Admin sends a control request to the leading configserver.
func (c *Client) Admin(ctx context.Context, req *AdminRequest) (*AdminReply, error) {
	return postLeader[AdminReply](ctx, c, "/v1/admin", req)
}

// ProxyBeat registers a proxy with the leading configserver and returns
// the live proxies.
func (c *Client) ProxyBeat(ctx context.Context, b *ProxyBeat) (*ProxyList, error) {
	return postLeader[ProxyList](ctx, c, "/v1/proxies", b)
}

// Invalid queues an invalidation for the peer clusters on the leading
// configserver.
func (c *Client) Invalid(ctx context.Context, req *InvalidRequest) (*InvalidReply, error) {
	return postLeader[InvalidReply](ctx, c, "/v1/invalid", req)
}

// postLeader POSTs in to path on the leading configserver and decodes its
// reply as R.
func postLeader[R any](ctx context.Context, c *Client, path string, in any) (*R, error) {
	var reply R
	if err := c.call(ctx, http.MethodPost, path, in, &reply, true); err != nil {
		return nil, err
	}
	return &reply, nil
}

// Get reads a JSON document (e.g. "/v1/nodes") from any configserver.
func (c *Client) Get(ctx context.Context, path string, out any) error {
	return c.call(ctx, http.MethodGet, path, nil, out, false)
}

// Table returns the table when its version is above after, waiting up to
// wait for one (long poll). It returns ErrNotModified when none came.
func (c *Client) Table(ctx context.Context, after route.Version, wait time.Duration) (*route.Table, error) {
	var t route.Table
	path := fmt.Sprintf("/v1/table?after=%d&wait=%d", after, wait.Milliseconds())
	if err := c.call(ctx, http.MethodGet, path, nil, &t, false); err != nil {
		return nil, err
	}
	return &t, nil
}

// call tries each configserver in turn; leaderOnly calls follow a
// standby's NotLeader answer.
func (c *Client) call(ctx context.Context, method, path string, in, out any, leaderOnly bool) error {
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return err
		}
	}
	var lastErr error
	// noLeader stays true while every answer so far was "connection
	// refused" or "not the leader".
	noLeader := leaderOnly
	tried := map[string]bool{}
	queue := c.order()
	for len(queue) > 0 {
		addr := queue[0]
		queue = queue[1:]
		if tried[addr] {
			continue
		}
		tried[addr] = true
		status, buf, err := c.do(ctx, method, "http://"+addr+path, body)
		var data []byte
		if buf != nil {
			data = buf.Bytes()
			// Decoding copies what it keeps: the buffer is reused.
			defer putBody(buf)
		}
		if err != nil {
			lastErr = err
			if !errors.Is(err, syscall.ECONNREFUSED) {
				noLeader = false
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			continue
		}
		if status != http.StatusMisdirectedRequest {
			noLeader = false
		}
		switch {
		case status == http.StatusOK:
			c.prefer(addr)
			if out == nil {
				return nil
			}
			if t, ok := out.(*route.Table); ok {
				// Its own decoder checks what it reads (and falls
				// back to encoding/json), without the scans ahead.
				return t.UnmarshalJSON(data)
			}
			return json.Unmarshal(data, out)
		case status == http.StatusNotModified:
			c.prefer(addr)
			return ErrNotModified
		case status == http.StatusMisdirectedRequest && leaderOnly:
			var nl NotLeader
			if json.Unmarshal(data, &nl) == nil && nl.Leader != "" && !tried[nl.Leader] {
				queue = append([]string{nl.Leader}, queue...)
			}
			lastErr = fmt.Errorf("wire: %s is not the leader", addr)
		case status == http.StatusUnauthorized:
			var ae AuthError
			if json.Unmarshal(data, &ae) != nil || ae.Error == "" {
				ae.Error = strings.TrimSpace(string(data))
			}
			return fmt.Errorf("%w by %s: %s", ErrUnauthorized, addr, ae.Error)
		default:
			lastErr = fmt.Errorf("wire: %s %s: %d %s", method, addr+path, status, strings.TrimSpace(string(data)))
			if status >= 400 && status < 500 && status != http.StatusMisdirectedRequest {
				return lastErr
			}
		}
	}
	if lastErr == nil {
		lastErr = errors.New("wire: no configserver address")
	} else if noLeader {
		lastErr = fmt.Errorf("%w: %v", ErrNoLeader, lastErr)
	}
	return lastErr
}

// bodies recycles response bodies: a table of a thousand rows is 80 KB,
// fetched at every version by every dataserver and proxy (read whole by
// io.ReadAll, it took a fifth of a second of allocations' growth on a
// dataserver during a recovery).
var bodies = sync.Pool{New: func() any { return new(bytes.Buffer) }}

func putBody(b *bytes.Buffer) {
	if b.Cap() <= 1<<20 {
		bodies.Put(b)
	}
}

// do sends the request; the reply's body comes in a buffer from bodies.
func (c *Client) do(ctx context.Context, method, url string, body []byte) (int, *bytes.Buffer, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.adminToken != "" {
		req.Header.Set("Authorization", "Bearer "+c.adminToken)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	buf := bodies.Get().(*bytes.Buffer)
	buf.Reset()
	if n := resp.ContentLength; n > 0 && n <= 64<<20 {
		buf.Grow(int(n))
	}
	_, err = buf.ReadFrom(io.LimitReader(resp.Body, 64<<20))
	return resp.StatusCode, buf, err
}

// LazyTable is a table as a configserver sent it, decoded only on demand:
// a dataserver often holds a version already (it learns each from both
// the table long poll and its heartbeats' replies), and decoding a table
// of a thousand rows costs about a millisecond, at every version.
type LazyTable struct{ raw []byte }

// UnmarshalJSON keeps a copy of the table's JSON.
func (l *LazyTable) UnmarshalJSON(b []byte) error {
	l.raw = append([]byte(nil), b...)
	return nil
}

var versionPrefix = []byte(`{"version":`)

// Version reads the table's version without decoding the rest (false:
// it could not be read).
func (l *LazyTable) Version() (route.Version, bool) {
	b := l.raw
	if bytes.HasPrefix(b, versionPrefix) {
		// route.Table's first field: the usual case, read in place.
		var v uint64
		i := len(versionPrefix)
		for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
			v = v*10 + uint64(b[i]-'0')
		}
		if i > len(versionPrefix) && i < len(b) && (b[i] == ',' || b[i] == '}') {
			return route.Version(v), true
		}
	}
	var t struct {
		Version route.Version `json:"version"`
	}
	if json.Unmarshal(b, &t) != nil {
		return 0, false
	}
	return t.Version, true
}

// Decode decodes the table.
func (l *LazyTable) Decode() (*route.Table, error) {
	var t route.Table
	if err := t.UnmarshalJSON(l.raw); err != nil {
		return nil, err
	}
	return &t, nil
}

// HeartbeatReplyLazy is a HeartbeatReply whose table is decoded on demand.
type HeartbeatReplyLazy struct {
	Table      *LazyTable            `json:"table,omitempty"`
	TableDelta *route.Delta          `json:"table_delta,omitempty"`
	Areas      map[uint16]AreaConfig `json:"areas,omitempty"`
	Hooks      *[]string             `json:"hooks,omitempty"`
	// MigrateBytesPerSec: HeartbeatReply's.
	MigrateBytesPerSec *int64 `json:"migrate_bytes_per_sec,omitempty"`
}

// HeartbeatLazy is Heartbeat with the reply's table left undecoded.
func (c *Client) HeartbeatLazy(ctx context.Context, hb *Heartbeat) (*HeartbeatReplyLazy, error) {
	return postLeader[HeartbeatReplyLazy](ctx, c, "/v1/heartbeat", hb)
}

// TableReply answers GET /v1/table with delta=1: the changes since the
// version the fetcher holds, or the table when the configserver does not
// keep that version.
type TableReply struct {
	Table *LazyTable   `json:"table,omitempty"`
	Delta *route.Delta `json:"delta,omitempty"`
}

// UnmarshalJSON decodes the reply; a bare table (what a configserver
// that predates deltas sends) is taken as the reply's table.
func (r *TableReply) UnmarshalJSON(b []byte) error {
	type plain TableReply
	if err := json.Unmarshal(b, (*plain)(r)); err != nil {
		return err
	}
	if r.Table == nil && r.Delta == nil {
		r.Table = &LazyTable{raw: append([]byte(nil), b...)}
	}
	return nil
}

// Resolve is the reply's table: the delta applied to have, or the table
// decoded. A table (or a delta's result) no newer than have is nil, not
// decoded.
func (r *TableReply) Resolve(have *route.Table) (*route.Table, error) {
	var cur route.Version
	if have != nil {
		cur = have.Version
	}
	switch {
	case r.Delta != nil && r.Delta.Version <= cur:
		return nil, nil
	case r.Delta != nil:
		return r.Delta.Apply(have)
	case r.Table == nil:
		return nil, errors.New("wire: a table reply without a table")
	}
	if v, ok := r.Table.Version(); ok && v <= cur {
		return nil, nil
	}
	return r.Table.Decode()
}

// TableSince returns the table when its version is above have's,
// waiting up to wait for one (long poll), fetched as the changes since
// have where the configserver can; ErrNotModified when none came. have
// may be nil (no table yet).
func (c *Client) TableSince(ctx context.Context, have *route.Table, wait time.Duration) (*TableReply, error) {
	var after route.Version
	if have != nil {
		after = have.Version
	}
	var r TableReply
	path := fmt.Sprintf("/v1/table?after=%d&wait=%d&delta=1", after, wait.Milliseconds())
	if err := c.call(ctx, http.MethodGet, path, nil, &r, false); err != nil {
		return nil, err
	}
	return &r, nil
}

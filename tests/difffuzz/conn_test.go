package difffuzz

import (
	"bufio"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/tairkv/tair/internal/testutil"
)

// conn is one raw RESP2 connection.
type conn struct {
	name string
	addr string
	c    net.Conn
	r    *bufio.Reader
}

func dial(name, addr string) (*conn, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	return &conn{name: name, addr: addr, c: c, r: bufio.NewReaderSize(c, 1<<16)}, nil
}

func (c *conn) close() { c.c.Close() }

// replyTimeout bounds one reply: longer is a hang.
const replyTimeout = 15 * time.Second

// do sends one command and reads its raw reply.
func (c *conn) do(args []string) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	_ = c.c.SetDeadline(time.Now().Add(replyTimeout))
	if _, err := c.c.Write([]byte(b.String())); err != nil {
		return "", fmt.Errorf("%s: write: %w", c.name, err)
	}
	s, err := testutil.ReadReply(c.r)
	if err != nil {
		return "", fmt.Errorf("%s: read: %w", c.name, err)
	}
	return s, nil
}

// node is a parsed RESP reply.
type node struct {
	kind byte   // '+', '-', ':', '$', '*', ',', '#', '_' ...
	s    string // the line or bulk; "" for null
	null bool
	kids []node
}

func parse(raw string) (node, string) {
	i := strings.Index(raw, "\r\n")
	if i < 0 {
		return node{kind: '?', s: raw}, ""
	}
	k, body, rest := raw[0], raw[1:i], raw[i+2:]
	switch k {
	case '$', '=', '!':
		n, _ := strconv.Atoi(body)
		if n < 0 {
			return node{kind: k, null: true}, rest
		}
		if n+2 > len(rest) {
			return node{kind: '?', s: raw}, ""
		}
		return node{kind: k, s: rest[:n]}, rest[n+2:]
	case '*', '~', '%', '>':
		n, _ := strconv.Atoi(body)
		if n < 0 {
			return node{kind: k, null: true}, rest
		}
		if k == '%' {
			n *= 2
		}
		out := node{kind: k}
		for j := 0; j < n; j++ {
			var c node
			c, rest = parse(rest)
			out.kids = append(out.kids, c)
		}
		return out, rest
	}
	return node{kind: k, s: body}, rest
}

func (n node) String() string {
	var b strings.Builder
	n.write(&b)
	return b.String()
}

func (n node) write(b *strings.Builder) {
	if n.null {
		b.WriteString("(nil)")
		return
	}
	switch n.kind {
	case '*', '~', '%', '>':
		b.WriteByte('[')
		for i, k := range n.kids {
			if i > 0 {
				b.WriteByte(' ')
			}
			k.write(b)
		}
		b.WriteByte(']')
	case '$':
		b.WriteString(strconv.Quote(n.s))
	case ':':
		b.WriteString("(int)" + n.s)
	case '-':
		b.WriteString("(err)" + n.s)
	default:
		b.WriteString("(" + string(n.kind) + ")" + strconv.Quote(n.s))
	}
}

func (n node) isErr() bool { return n.kind == '-' }

// errPrefix is the error's first word (ERR, WRONGTYPE, NOTSUPPORTED ...).
func (n node) errPrefix() string {
	if !n.isErr() {
		return ""
	}
	if i := strings.IndexByte(n.s, ' '); i >= 0 {
		return n.s[:i]
	}
	return n.s
}

// sorted returns n with its elements sorted (groups of size each, as
// pairs for HGETALL), duplicates dropped when dedup.
func (n node) sorted(size int, dedup bool) node {
	if n.null || n.kids == nil {
		return n
	}
	var groups []string
	var byKey = map[string][]node{}
	for i := 0; i+size <= len(n.kids); i += size {
		g := node{kind: '*', kids: n.kids[i : i+size]}
		k := g.String()
		if dedup {
			if _, ok := byKey[k]; ok {
				continue
			}
		}
		if _, ok := byKey[k]; !ok {
			byKey[k] = nil
		}
		byKey[k] = append(byKey[k], n.kids[i:i+size]...)
		groups = append(groups, k)
	}
	sort.Strings(groups)
	out := node{kind: n.kind, kids: []node{}}
	seen := map[string]int{}
	for _, k := range groups {
		j := seen[k]
		seen[k] = j + 1
		out.kids = append(out.kids, byKey[k][j*size:(j+1)*size]...)
	}
	return out
}

func sortStrings(s []string) { sort.Strings(s) }

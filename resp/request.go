package resp

import (
	"errors"
	"io"
)

// ProtocolError is a malformed or over-limit client request. Its text is
// what Redis replies before closing the connection, without "ERR ".
type ProtocolError struct{ Msg string }

func (e *ProtocolError) Error() string { return "Protocol error: " + e.Msg }

var (
	errInvalidBulkLen      = &ProtocolError{"invalid bulk length"}
	errInvalidMultiBulkLen = &ProtocolError{"invalid multibulk length"}
	errBigInline           = &ProtocolError{"too big inline request"}
	errBigMbulkCount       = &ProtocolError{"too big mbulk count string"}
	errBigBulkCount        = &ProtocolError{"too big bulk count string"}
	errUnbalancedQuotes    = &ProtocolError{"unbalanced quotes in request"}
)

// RequestLimits bound what a client may send. Zero fields take the
// defaults (Redis's).
type RequestLimits struct {
	MaxBulkLen      int64 // proto-max-bulk-len, default 512 MiB
	MaxMultiBulkLen int64 // arguments per command, default 1<<20
	MaxInlineLen    int64 // an inline command line, default 64 KiB
	// Unauthenticated clients get Redis's tighter limits: 10 arguments of
	// 16 KiB each at most.
	UnauthMultiBulkLen int64
	UnauthBulkLen      int64
}

// DefaultRequestLimits are the defaults.
var DefaultRequestLimits = RequestLimits{
	MaxBulkLen: 512 << 20, MaxMultiBulkLen: 1 << 20, MaxInlineLen: 64 << 10,
	UnauthMultiBulkLen: 10, UnauthBulkLen: 16 << 10,
}

func (l *RequestLimits) adjust() {
	d := DefaultRequestLimits
	if l.MaxBulkLen <= 0 {
		l.MaxBulkLen = d.MaxBulkLen
	}
	if l.MaxMultiBulkLen <= 0 {
		l.MaxMultiBulkLen = d.MaxMultiBulkLen
	}
	if l.MaxInlineLen <= 0 {
		l.MaxInlineLen = d.MaxInlineLen
	}
	if l.UnauthMultiBulkLen <= 0 {
		l.UnauthMultiBulkLen = d.UnauthMultiBulkLen
	}
	if l.UnauthBulkLen <= 0 {
		l.UnauthBulkLen = d.UnauthBulkLen
	}
}

// Command is one client request. Args point into the reader's buffer and
// stay valid until the next ReadBatch.
type Command struct {
	Args [][]byte
}

// RequestReader reads client requests (RESP multibulk or inline) with
// limits enforced before any memory is given to a request: a header
// announcing a 1 GiB bulk or ten million arguments is refused at once.
// A partly received command keeps its parse state, so a large command
// arriving in many reads is parsed once. Not safe for concurrent use.
type RequestReader struct {
	rd  io.Reader
	lim RequestLimits
	// Unauth applies the unauthenticated limits while set.
	Unauth bool

	buf  []byte
	r, w int

	// state of the command being parsed, offsets relative to r
	argc  int   // announced count; 0 = header not parsed yet
	pos   int   // parse position
	marks []int // start,end of each argument parsed so far
	need  int   // bytes needed (from r) before parsing again

	args [][]byte
	cmds []Command

	nread int64 // bytes read so far
}

// BytesRead is the count of bytes read from the connection so far.
func (r *RequestReader) BytesRead() int64 { return r.nread }

// NewRequestReader returns a reader of rd.
func NewRequestReader(rd io.Reader, lim RequestLimits) *RequestReader {
	lim.adjust()
	return &RequestReader{rd: rd, lim: lim, buf: make([]byte, 16<<10)}
}

// SetLimits replaces the limits (CONFIG SET proto-max-bulk-len).
func (r *RequestReader) SetLimits(lim RequestLimits) { lim.adjust(); r.lim = lim }

// Buffered reports how many received bytes are not yet returned.
func (r *RequestReader) Buffered() int { return r.w - r.r }

// BufferSize is the size of the reader's buffer (the query buffer).
func (r *RequestReader) BufferSize() int { return len(r.buf) }

// ReadBatch returns every complete command already received, at most
// max; when none is, it reads until at least one is. The commands and
// their arguments are valid until the next ReadBatch.
func (r *RequestReader) ReadBatch(max int) ([]Command, error) {
	r.cmds = r.cmds[:0]
	if r.r == r.w {
		r.r, r.w = 0, 0
		if len(r.buf) > 64<<10 {
			r.buf = make([]byte, 16<<10)
		}
	}
	for {
		cmds, err := r.Parse(max)
		if err != nil || len(cmds) > 0 {
			return cmds, err
		}
		if err := r.fill(); err != nil {
			return nil, err
		}
	}
}

// Feed appends bytes received by someone else (an event loop) for
// Parse. Commands returned before are invalid afterwards: the buffer
// may be compacted or replaced.
func (r *RequestReader) Feed(p []byte) {
	r.nread += int64(len(p))
	if r.r == r.w {
		r.r, r.w = 0, 0
		if len(r.buf) > 64<<10 && len(p) <= 16<<10 {
			r.buf = make([]byte, 16<<10)
		}
	}
	if len(r.buf)-r.w < len(p) {
		if r.r > 0 {
			r.w = copy(r.buf, r.buf[r.r:r.w])
			r.r = 0
		}
		if len(r.buf)-r.w < len(p) {
			nb := make([]byte, max(2*len(r.buf), r.w+len(p)))
			copy(nb, r.buf[:r.w])
			r.buf = nb
		}
	}
	r.w += copy(r.buf[r.w:], p)
}

// Parse returns the complete commands among the bytes fed so far, at
// most max, without reading; none means more bytes are needed. The
// commands are valid until the next Parse or Feed. A ProtocolError
// comes after the commands before the bad one.
func (r *RequestReader) Parse(max int) ([]Command, error) {
	r.cmds = r.cmds[:0]
	r.args = r.args[:0]
	for len(r.cmds) < max && r.w-r.r > 0 && r.w-r.r >= r.need {
		ok, err := r.parseOne()
		if err != nil {
			return r.cmds, err
		}
		if !ok {
			break
		}
	}
	return r.cmds, nil
}

// fill reads more bytes, compacting or growing the buffer first when it
// is full. It never grows beyond what has arrived plus one doubling.
func (r *RequestReader) fill() error {
	if r.w == len(r.buf) {
		if r.r > 0 && len(r.cmds) == 0 {
			copy(r.buf, r.buf[r.r:r.w])
			r.w -= r.r
			r.r = 0
		}
		if r.w == len(r.buf) {
			nb := make([]byte, 2*len(r.buf))
			copy(nb, r.buf[:r.w])
			r.buf = nb
		}
	}
	n, err := r.rd.Read(r.buf[r.w:])
	r.w += n
	r.nread += int64(n)
	if n > 0 {
		return nil
	}
	if err == nil {
		err = io.ErrNoProgress
	}
	return err
}

// parseOne parses the command at r.r; false means it is not complete yet.
func (r *RequestReader) parseOne() (bool, error) {
	b := r.buf[r.r:r.w]
	if r.argc == 0 {
		if b[0] != '*' {
			return r.parseInline(b)
		}
		eol := indexCRLF(b, 1)
		if eol < 0 {
			if len(b) > 64<<10 {
				return false, errBigMbulkCount
			}
			r.need = len(b) + 1
			return false, nil
		}
		n, ok := parseInt64(b[1:eol])
		max := r.lim.MaxMultiBulkLen
		if r.Unauth && r.lim.UnauthMultiBulkLen < max {
			max = r.lim.UnauthMultiBulkLen
		}
		if !ok || n > max || n > 1<<31-1 {
			return false, errInvalidMultiBulkLen
		}
		if n <= 0 {
			// Empty command: Redis skips it.
			r.r += eol + 2
			r.need = 0
			return true, nil
		}
		r.argc = int(n)
		r.pos = eol + 2
		r.marks = r.marks[:0]
	}
	maxBulk := r.lim.MaxBulkLen
	if r.Unauth && r.lim.UnauthBulkLen < maxBulk {
		maxBulk = r.lim.UnauthBulkLen
	}
	for len(r.marks) < 2*r.argc {
		p := r.pos
		if p >= len(b) {
			r.need = p + 1
			return false, nil
		}
		if b[p] != '$' {
			return false, &ProtocolError{"expected '$', got '" + printable(b[p]) + "'"}
		}
		eol := indexCRLF(b, p+1)
		if eol < 0 {
			if len(b)-p > 64<<10 {
				return false, errBigBulkCount
			}
			r.need = len(b) + 1
			return false, nil
		}
		l, ok := parseInt64(b[p+1 : eol])
		if !ok || l < 0 || l > maxBulk {
			return false, errInvalidBulkLen
		}
		end := eol + 2 + int(l)
		if end+2 > len(b) {
			r.need = end + 2
			return false, nil
		}
		if b[end] != '\r' || b[end+1] != '\n' {
			return false, errInvalidBulkLen
		}
		r.marks = append(r.marks, eol+2, end)
		r.pos = end + 2
	}
	start := len(r.args)
	for i := 0; i < len(r.marks); i += 2 {
		r.args = append(r.args, b[r.marks[i]:r.marks[i+1]:r.marks[i+1]])
	}
	r.cmds = append(r.cmds, Command{Args: r.args[start:len(r.args):len(r.args)]})
	r.r += r.pos
	r.argc, r.pos, r.need = 0, 0, 0
	return true, nil
}

func printable(c byte) string {
	if c >= 32 && c < 127 {
		return string(rune(c))
	}
	return "?"
}

// parseInline parses a telnet-style line, with Redis's quoting rules.
func (r *RequestReader) parseInline(b []byte) (bool, error) {
	nl := -1
	for i, c := range b {
		if c == '\n' {
			nl = i
			break
		}
	}
	if nl < 0 {
		if int64(len(b)) > r.lim.MaxInlineLen {
			return false, errBigInline
		}
		r.need = len(b) + 1
		return false, nil
	}
	if int64(nl) > r.lim.MaxInlineLen {
		return false, errBigInline
	}
	line := b[:nl]
	if len(line) > 0 && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	}
	args, err := SplitArgs(line)
	if err != nil {
		return false, errUnbalancedQuotes
	}
	r.r += nl + 1
	r.need = 0
	if len(args) == 0 {
		return true, nil // empty line: skipped
	}
	start := len(r.args)
	r.args = append(r.args, args...)
	r.cmds = append(r.cmds, Command{Args: r.args[start:len(r.args):len(r.args)]})
	return true, nil
}

// CopyArgs copies args into one block of bytes, reusing buf and heads
// when they are large enough, and returns both: heads[i] is the copy of
// args[i] (capped, so appending to one never overwrites the next).
func CopyArgs(buf []byte, heads [][]byte, args [][]byte) ([]byte, [][]byte) {
	n := 0
	for _, a := range args {
		n += len(a)
	}
	if cap(buf) < n {
		buf = make([]byte, 0, n)
	}
	buf, heads = buf[:0], heads[:0]
	for _, a := range args {
		start := len(buf)
		buf = append(buf, a...)
		heads = append(heads, buf[start:len(buf):len(buf)])
	}
	return buf, heads
}

// CloneArgs is a copy of args in memory of its own (one allocation for
// the bytes, one for the slice headers), for commands that outlive the
// reader's buffer.
func CloneArgs(args [][]byte) [][]byte {
	_, heads := CopyArgs(nil, make([][]byte, 0, len(args)), args)
	return heads
}

var errQuotes = errors.New("resp: unbalanced quotes")

// SplitArgs splits an inline command line like Redis's sdssplitargs:
// spaces separate arguments; "double quotes" take \n \r \t \b \a \\ \"
// and \xHH escapes; 'single quotes' take \' only. The arguments are
// fresh copies.
func SplitArgs(line []byte) ([][]byte, error) {
	var out [][]byte
	i := 0
	for {
		for i < len(line) && (line[i] == ' ' || line[i] == '\t' || line[i] == '\n' || line[i] == '\r' || line[i] == '\v' || line[i] == '\f') {
			i++
		}
		if i >= len(line) {
			return out, nil
		}
		var cur []byte
		inq, insq, done := false, false, false
		for !done {
			if inq {
				if i >= len(line) {
					return nil, errQuotes
				}
				c := line[i]
				if c == '\\' && i+3 < len(line) && line[i+1] == 'x' && isHex(line[i+2]) && isHex(line[i+3]) {
					cur = append(cur, hexVal(line[i+2])<<4|hexVal(line[i+3]))
					i += 3
				} else if c == '\\' && i+1 < len(line) {
					i++
					switch line[i] {
					case 'n':
						c = '\n'
					case 'r':
						c = '\r'
					case 't':
						c = '\t'
					case 'b':
						c = '\b'
					case 'a':
						c = '\a'
					default:
						c = line[i]
					}
					cur = append(cur, c)
				} else if c == '"' {
					if i+1 < len(line) && !isSpace(line[i+1]) {
						return nil, errQuotes
					}
					done = true
				} else {
					cur = append(cur, c)
				}
			} else if insq {
				if i >= len(line) {
					return nil, errQuotes
				}
				c := line[i]
				if c == '\\' && i+1 < len(line) && line[i+1] == '\'' {
					i++
					cur = append(cur, '\'')
				} else if c == '\'' {
					if i+1 < len(line) && !isSpace(line[i+1]) {
						return nil, errQuotes
					}
					done = true
				} else {
					cur = append(cur, c)
				}
			} else {
				if i >= len(line) {
					done = true
					break
				}
				switch c := line[i]; {
				case isSpace(c):
					done = true
				case c == '"': // anywhere in an argument, as sdssplitargs
					inq = true
				case c == '\'':
					insq = true
				default:
					cur = append(cur, c)
				}
			}
			if i < len(line) {
				i++
			}
		}
		if cur == nil {
			cur = []byte{}
		}
		out = append(out, cur)
	}
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func hexVal(c byte) byte {
	switch {
	case c >= '0' && c <= '9':
		return c - '0'
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10
	default:
		return c - 'A' + 10
	}
}

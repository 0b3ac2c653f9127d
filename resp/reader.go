package resp

import (
	"errors"
	"io"
	"math"
)

// Errors of the reply reader and of ScanReply.
var (
	// ErrIncomplete means the bytes hold the start of a reply but not all
	// of it.
	ErrIncomplete = errors.New("resp: incomplete reply")
	// ErrProtocol means the bytes are not RESP.
	ErrProtocol = errors.New("resp: protocol error")
	// ErrTooLarge means a length or count is beyond the reader's limits.
	ErrTooLarge = errors.New("resp: reply beyond limits")
)

// Limits bound what a reply may announce. Zero fields take the defaults.
type Limits struct {
	// MaxBulkLen is the largest bulk/verbatim/blob-error length (default
	// 512 MiB, Redis's proto-max-bulk-len).
	MaxBulkLen int64
	// MaxElements is the largest count of one aggregate (array, map, set,
	// push, attribute; default 1<<30).
	MaxElements int64
	// MaxReplyLen is the largest size of one whole reply (default 1 GiB).
	MaxReplyLen int64
}

// DefaultLimits are the limits used when none are given.
var DefaultLimits = Limits{MaxBulkLen: 512 << 20, MaxElements: 1 << 30, MaxReplyLen: 1 << 30}

func (l *Limits) adjust() {
	positiveOr(&l.MaxBulkLen, DefaultLimits.MaxBulkLen)
	positiveOr(&l.MaxElements, DefaultLimits.MaxElements)
	positiveOr(&l.MaxReplyLen, DefaultLimits.MaxReplyLen)
}

// positiveOr sets a limit *v to def unless it is positive (set).
func positiveOr(v *int64, def int64) {
	if *v <= 0 {
		*v = def
	}
}

// ScanReply finds the first complete RESP2/RESP3 reply in b and returns
// its length. When b holds only part of a reply it returns ErrIncomplete
// and need, a lower bound of the bytes still missing (exact for the body
// of a long bulk string), so a reader does not rescan too early. Nested
// aggregates are walked iteratively: depth costs no stack.
//
// Types: + - : _ # , ( are one line; $ ! = are length-prefixed; * ~ >
// hold n replies, % n pairs, | an attribute (n pairs) followed by the reply
// it annotates. Streamed (?) lengths are not supported.
func ScanReply(b []byte, lim Limits) (n int, need int, err error) {
	lim.adjust()
	pos := 0
	remaining := int64(1)
	// more is a lower bound of the bytes the replies after the current
	// one need: every reply takes at least 3 bytes ("_\r\n").
	more := func() int {
		if remaining-1 > 1<<28 {
			return 3 << 28
		}
		return int(3 * (remaining - 1))
	}
	for remaining > 0 {
		if pos >= len(b) {
			return 0, 3 + more() + pos - len(b), ErrIncomplete
		}
		if int64(pos) > lim.MaxReplyLen {
			return 0, 0, ErrTooLarge
		}
		typ := b[pos]
		eol := indexCRLF(b, pos+1)
		if eol < 0 {
			if int64(len(b)-pos) > 64<<10 && typ != '+' && typ != '-' {
				return 0, 0, ErrProtocol // a length line is never that long
			}
			return 0, 1 + more(), ErrIncomplete
		}
		line := b[pos+1 : eol]
		next := eol + 2
		switch typ {
		case '+', '-', '_', '#', ',', '(':
			if typ == '_' && len(line) != 0 || typ == '#' && (len(line) != 1 || line[0] != 't' && line[0] != 'f') {
				return 0, 0, ErrProtocol
			}
			remaining--
		case ':':
			if _, ok := parseInt64(line); !ok {
				return 0, 0, ErrProtocol
			}
			remaining--
		case '$', '!', '=':
			l, ok := parseInt64(line)
			if !ok || l < -1 || l == -1 && typ != '$' {
				return 0, 0, ErrProtocol
			}
			if l > lim.MaxBulkLen {
				return 0, 0, ErrTooLarge
			}
			if l >= 0 {
				end := int64(next) + l + 2
				if end > lim.MaxReplyLen {
					return 0, 0, ErrTooLarge
				}
				if end > int64(len(b)) {
					return 0, int(end-int64(len(b))) + more(), ErrIncomplete
				}
				if b[end-2] != '\r' || b[end-1] != '\n' {
					return 0, 0, ErrProtocol
				}
				next = int(end)
			}
			remaining--
		case '*', '~', '>', '%', '|':
			l, ok := parseInt64(line)
			if !ok || l < -1 || l == -1 && typ != '*' {
				return 0, 0, ErrProtocol
			}
			if l > lim.MaxElements {
				return 0, 0, ErrTooLarge
			}
			if typ == '%' || typ == '|' {
				l *= 2
			}
			if typ != '|' {
				remaining--
			}
			if l > 0 {
				remaining += l
				if remaining > 1<<40 {
					return 0, 0, ErrTooLarge
				}
			}
		default:
			return 0, 0, ErrProtocol
		}
		pos = next
	}
	return pos, 0, nil
}

// indexCRLF returns the index of the first "\r\n" at or after from, or -1.
func indexCRLF(b []byte, from int) int {
	for i := from; i+1 < len(b); i++ {
		if b[i] == '\r' {
			if b[i+1] == '\n' {
				return i
			}
		}
	}
	return -1
}

// parseInt64 parses a RESP integer: every int64, -9223372036854775808
// included (a valid reply, INCRBY's or EXINCRBY's at the bound, that a
// parser negating a positive int64 refused as a protocol error).
func parseInt64(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	neg := false
	if b[0] == '-' {
		neg = true
		b = b[1:]
		if len(b) == 0 {
			return 0, false
		}
	}
	limit := uint64(math.MaxInt64)
	if neg {
		limit++
	}
	var n uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if n > (limit-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	if neg {
		return -int64(n), true // n == 1<<63 wraps to MinInt64
	}
	return int64(n), true
}

// ReplyReader reads whole replies from a backend connection. Each
// ReadReply returns one complete reply as raw bytes (type byte first,
// trailing CRLF included) that stay valid until the next call. Not safe
// for concurrent use.
type ReplyReader struct {
	rd   io.Reader
	lim  Limits
	buf  []byte
	r, w int
	need int // bytes that must arrive before the next scan
}

// NewReplyReader returns a reader of rd with an initial buffer of size
// bytes (default 16 KiB).
func NewReplyReader(rd io.Reader, size int, lim Limits) *ReplyReader {
	if size <= 0 {
		size = 16 << 10
	}
	lim.adjust()
	return &ReplyReader{rd: rd, lim: lim, buf: make([]byte, size)}
}

// Buffered is the count of bytes read but not yet returned.
func (r *ReplyReader) Buffered() int { return r.w - r.r }

// ReadReply returns the next reply.
func (r *ReplyReader) ReadReply() ([]byte, error) {
	for {
		if r.w-r.r >= r.need && r.w > r.r {
			n, need, err := ScanReply(r.buf[r.r:r.w], r.lim)
			if err == nil {
				raw := r.buf[r.r : r.r+n]
				r.r += n
				r.need = 0
				if r.r == r.w {
					r.r, r.w = 0, 0
				}
				return raw, nil
			}
			if err != ErrIncomplete {
				return nil, err
			}
			r.need = r.w - r.r + need
		}
		if err := r.fill(); err != nil {
			return nil, err
		}
	}
}

// fill reads more bytes, making room first: it moves the unread part to
// the front, or grows the buffer (to what the pending reply is known to
// need, at least doubling).
func (r *ReplyReader) fill() error {
	if r.w == len(r.buf) {
		if r.r > 0 {
			copy(r.buf, r.buf[r.r:r.w])
			r.w -= r.r
			r.r = 0
		}
		if r.w == len(r.buf) || r.need > len(r.buf) {
			size := 2 * len(r.buf)
			if r.need > size {
				size = r.need
			}
			nb := make([]byte, size)
			copy(nb, r.buf[:r.w])
			r.buf = nb
		}
	}
	n, err := r.rd.Read(r.buf[r.w:])
	r.w += n
	if n > 0 {
		return nil
	}
	if err == nil {
		err = io.ErrNoProgress
	}
	return err
}

// Shrink drops a buffer grown beyond size while nothing is buffered.
func (r *ReplyReader) Shrink(size int) {
	if r.r == r.w && len(r.buf) > size {
		r.buf = make([]byte, size)
		r.r, r.w = 0, 0
	}
}

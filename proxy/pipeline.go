package proxy

import (
	"errors"

	"github.com/tairkv/tair/resp"
)

// The logic of a pipelined dataserver connection, whatever carries its
// bytes. Two transports carry them: loopBackend (loopbackend.go), a gnet
// connection on an event loop for the loop's fast path, and backendConn
// (backend.go), a net.Conn with a writer and a reader goroutine for the
// sessions' goroutines. Both keep their requests in a pipeline, so each
// rule is written once:
//
//   - requests are encoded into out in the order they are sent and wait
//     in flight; a dataserver answers a connection's requests in order,
//     so each reply completes flight's head (replied; scan parses the
//     replies out of the bytes read, with backendLimits);
//   - a request counts as written (it may have run) once its bytes were
//     handed to the socket (handed); until then it never reached the
//     dataserver;
//   - when the connection breaks every request in flight fails (fail):
//     the ones handed to the socket with written set, the others with it
//     unset, which classify retries whatever they are.
//
// A pipeline is not safe for concurrent use: its transport serialises
// access to it. done is called for each request completed or failed.
type pipeline struct {
	out    []byte     // the encoded requests of flight[sent:]
	spare  []byte     // a written buffer kept for out (recycle)
	flight []*request // awaiting replies, in the order sent
	head   int        // flight[:head] are answered
	sent   int        // flight[:sent] were handed to the socket
	need   int        // bytes the partial reply at the head needs at least
	done   func(r *request)
}

// backendLimits bound the replies read from dataservers.
var backendLimits = resp.Limits{}

// errUnasked: a dataserver sent a reply no request waits for.
var errUnasked = errors.New("reply without a request")

// maxKeep is the largest write buffer kept for reuse.
const maxKeep = 1 << 20

// add queues r, whose encoding the caller has just appended to out.
func (p *pipeline) add(r *request) {
	p.flight = append(p.flight, r)
}

// queued is the count of requests not yet handed to the socket.
func (p *pipeline) queued() int { return len(p.flight) - p.sent }

// inFlight is the count of requests handed to the socket and not yet
// answered.
func (p *pipeline) inFlight() int { return p.sent - p.head }

// take returns the encoded requests to write; out starts again in the
// buffer recycle kept.
func (p *pipeline) take() []byte {
	b := p.out
	p.out, p.spare = p.spare[:0], nil
	return b
}

// recycle keeps b, a buffer take returned and the transport wrote, for a
// later out, unless it grew large.
func (p *pipeline) recycle(b []byte) {
	if cap(b) <= maxKeep {
		p.spare = b[:0]
	}
}

// handed counts every request queued so far as handed to the socket: from
// now on they may have run.
func (p *pipeline) handed() { p.sent = len(p.flight) }

// replied completes the request at flight's head with raw, its reply
// (copied).
func (p *pipeline) replied(raw []byte) error {
	if p.head == len(p.flight) {
		return errUnasked
	}
	r := p.flight[p.head]
	p.flight[p.head] = nil
	p.head++
	if p.head == len(p.flight) {
		p.flight, p.head, p.sent = p.flight[:0], 0, 0
	}
	r.reply = append(r.reply[:0], raw...)
	r.err = nil
	p.done(r)
	return nil
}

// scan completes requests with the whole replies at the start of buf and
// returns the bytes they took; what follows them is at most the start of
// a reply, and need is set to the length buf must reach before the next
// scan can complete it. An error means buf holds something that is not a
// reply, or a reply no request waits for: the connection is unusable.
func (p *pipeline) scan(buf []byte) (int, error) {
	p.need = 0
	off := 0
	for off < len(buf) {
		n, need, err := resp.ScanReply(buf[off:], backendLimits)
		if errors.Is(err, resp.ErrIncomplete) {
			p.need = len(buf) - off + need
			break
		}
		if err == nil {
			err = p.replied(buf[off : off+n])
		}
		if err != nil {
			return off, err
		}
		off += n
	}
	return off, nil
}

// fail ends the pipeline: every request in flight fails with err. Those
// handed to the socket may have reached the dataserver when written is
// set; those still in out never did (classify retries them whatever they
// are). The pipeline is empty afterwards.
func (p *pipeline) fail(err error, written bool) {
	rs, sent := p.flight[p.head:], p.sent-p.head
	p.flight, p.head, p.sent, p.need = nil, 0, 0, 0
	p.out = nil
	for i, r := range rs {
		r.err, r.written = err, written && i < sent
		r.reply = r.reply[:0]
		p.done(r)
	}
}

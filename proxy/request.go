package proxy

import (
	"sync"
	"time"

	"github.com/tairkv/tair/internal/command"
	"github.com/tairkv/tair/internal/route"
	"github.com/tairkv/tair/resp"
)

// A request: one command on its way to a dataserver or answered by the
// proxy; the session's pool of them, the helpers that set its reply, and
// its bookkeeping once answered (account).

// request is one command on its way to a dataserver (or answered here).
// Requests are pooled per session and reused batch after batch; wire and
// reply keep their capacity.
type request struct {
	ss   *session
	args [][]byte
	spec *command.Spec
	stat *cmdStat

	bucket  route.BucketID
	mute    bool   // CLIENT REPLY OFF or SKIP: the reply is not written
	group   uint32 // split parts: the bucket, or 1<<31|master index for reads
	grouped bool   // a read part over several buckets of one master
	noGroup bool   // split per bucket only
	area    int    // the session's area and protocol when it was prepared
	proto   int
	noTouch bool // the session was in CLIENT NO-TOUCH mode (the envelope's flag)
	slaveOK bool // a read that may go to a slave
	write   bool
	node    *node

	wire    []byte        // the envelope as sent
	sentVer route.Version // the table version the envelope carried
	reply   []byte        // raw reply
	err     error         // backend failure instead of a reply
	written bool          // the request may have reached the dataserver
	wg      sync.WaitGroup

	local    bool // reply already complete (answered by the proxy)
	rejected bool // refused before running (arity, NOAUTH, unknown)
	// barrier requests run alone, after every earlier request of the
	// batch is answered (cluster-wide commands, blocking pops, EXEC).
	barrier func(r *request)

	// multi-key split: one sub-request per bucket, merged into reply
	subs  []*request
	merge mergeKind
	keyAt []uint64 // MGET: for each key, its sub-request (hi 32 bits) and index
	own   [][]byte // a sub-request's own argument list

	start time.Time

	// hot-key cache fill: a GET of a hot key, sent when the cache's
	// invalidation count was fillSeq
	fill    bool
	fillSeq uint64

	// forwarded on an event loop (fastpath.go)
	done   bool   // the reply is final: deliver it
	argBuf []byte // backs args (copied out of the read buffer)
}

func (r *request) fail(err error) {
	r.err = err
	r.wg.Done()
}

func (r *request) setError(msg string) {
	r.reply = resp.AppendError(r.reply[:0], msg)
	r.local = true
}

// newReq takes a pooled request.
func (ss *session) newReq() *request {
	if ss.nreq == len(ss.reqs) {
		ss.reqs = append(ss.reqs, &request{ss: ss})
	}
	r := ss.reqs[ss.nreq]
	ss.nreq++
	r.reset()
	return r
}

// reset clears r for reuse, keeping its buffers.
func (r *request) reset() {
	r.args, r.spec, r.stat, r.node, r.barrier = nil, nil, nil, nil, nil
	r.bucket, r.slaveOK, r.write, r.local, r.written, r.err = 0, false, false, false, false, nil
	r.rejected, r.grouped, r.noGroup, r.group = false, false, false, 0
	r.fill, r.done, r.mute, r.noTouch = false, false, false, false
	r.subs, r.merge, r.keyAt = r.subs[:0], mergeNone, r.keyAt[:0]
	r.reply = r.reply[:0]
}

// copyArgs keeps a copy of args in r (the read buffer is reused).
func (r *request) copyArgs(args [][]byte) {
	r.argBuf, r.own = resp.CopyArgs(r.argBuf, r.own, args)
	r.args = r.own
}

func (r *request) ok()             { r.reply = resp.AppendOK(r.reply[:0]); r.local = true }
func (r *request) status(s string) { r.reply = resp.AppendStatus(r.reply[:0], s); r.local = true }
func (r *request) bulk(b []byte)   { r.reply = resp.AppendBulk(r.reply[:0], b); r.local = true }
func (r *request) bulkString(s string) {
	r.reply = resp.AppendBulkString(r.reply[:0], s)
	r.local = true
}
func (r *request) integer(n int64) { r.reply = resp.AppendInt(r.reply[:0], n); r.local = true }
func (r *request) null()           { r.reply = resp.AppendNull(r.reply[:0], r.proto); r.local = true }
func (r *request) raw(b []byte)    { r.reply = append(r.reply[:0], b...); r.local = true }

// account finishes r's bookkeeping and turns a non-retryable backend
// failure into its error reply.
func (ss *session) account(r *request) {
	if r.err != nil {
		r.reply = resp.AppendErr(r.reply[:0], timedOut(r.err, r.write))
		r.err = nil
	}
	if c := ss.srv.hotCache; c != nil {
		ss.hotDone(c, r)
	}
	// Moving average of reply sizes (window).
	ss.avgReply += (int64(len(r.reply)) - ss.avgReply) / 8
	if r.stat != nil {
		d := time.Since(r.start)
		isErr := len(r.reply) > 0 && r.reply[0] == '-'
		r.stat.record(d, isErr, r.rejected)
		ss.srv.m.latency.Observe(d.Seconds())
		if sl := ss.srv.dyn.slowlogSlower(); sl >= 0 && d > sl {
			ss.srv.slowlog.add(ss, r.args, d)
		}
		if r.spec != nil {
			ss.info.lastCmd.Store(&r.spec.Name)
		}
	}
}

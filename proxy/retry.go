package proxy

import (
	"time"

	"github.com/tairkv/tair/internal/envelope"
	"github.com/tairkv/tair/resp"
)

// Retries: waiting for a request's reply (finish), deciding whether the
// cluster asked for it to be sent again (classify, idempotentWrite), the
// wait before the next attempt (backoff), and the client's error when
// the budget is spent (giveUp).

// finish waits for r's reply, retrying what the cluster asks to retry,
// until the retry budget is spent. Split requests finish each part and
// merge.
func (ss *session) finish(r *request) {
	if len(r.subs) > 0 {
		for _, sub := range r.subs {
			ss.finish(sub)
		}
		ss.mergeReplies(r)
		return
	}
	s := ss.srv
	var deadline time.Time
	attempt, notMaster := 0, 0
	for {
		r.wg.Wait()
		retry, wait := ss.classify(r)
		if !retry {
			return
		}
		if wait == retryScriptConn {
			// A pipelined script the dataserver did not run: a script
			// connection runs it (script.go).
			if r.node != nil {
				r.node.scriptsOff.sendBack(r.args)
			}
			s.m.retries.WithLabelValues(wait.String()).Inc()
			r.err = nil
			r.reply = ss.sendScript(r, r.bucket, r.args, r.write)
			return
		}
		if r.grouped && wait != retryTryAgain {
			// A read over several buckets of one node that the node
			// refused (or lost): one part per bucket from now on.
			s.stats.retries.Add(1)
			s.stats.resplits.Add(1)
			s.m.retries.WithLabelValues("resplit").Inc()
			r.err = nil
			ss.resplit(r)
			ss.finish(r)
			return
		}
		if attempt == 0 {
			deadline = time.Now().Add(s.cfg.RetryBudget)
		}
		attempt++
		// NOTMASTER is bounded by its own attempt count too (two nodes
		// that disagree must not ping-pong a request for the whole
		// budget; the retries of a failover's lost connection before
		// do not count); TRYAGAIN (a migration's short final freeze) and
		// lost or absent masters (a failover in progress) by the time
		// budget only.
		if wait == retryNotMaster {
			notMaster++
		}
		if notMaster >= s.cfg.RetryAttempts || time.Now().After(deadline) {
			ss.giveUp(r)
			return
		}
		s.stats.retries.Add(1)
		s.m.retries.WithLabelValues(wait.String()).Inc()
		ss.backoff(r, wait, attempt)
		ss.send(r)
	}
}

// idempotentWrite reports whether the write args, run twice, leaves the
// same data and gets the same reply as run once: SET with no condition
// (NX, XX, IFEQ), no GET and no version; MSET; HMSET; SETEX and PSETEX.
// (A relative expiry restarts from the second run: the key lives a
// little longer, never shorter.)
func idempotentWrite(args [][]byte) bool {
	switch {
	case resp.EqualFold(args[0], "set"):
		for _, a := range args[3:] {
			switch {
			case resp.EqualFold(a, "nx"), resp.EqualFold(a, "xx"), resp.EqualFold(a, "get"), resp.EqualFold(a, "ifeq"):
				return false
			}
		}
		return true
	case resp.EqualFold(args[0], "mset"), resp.EqualFold(args[0], "hmset"),
		resp.EqualFold(args[0], "setex"), resp.EqualFold(args[0], "psetex"):
		return true
	}
	return false
}

type retryKind int

const (
	retryNone retryKind = iota
	retryNotMaster
	retryTryAgain
	retryConn
	retryNoMaster
	retryScriptConn
)

func (k retryKind) String() string {
	switch k {
	case retryNotMaster:
		return "notmaster"
	case retryTryAgain:
		return "tryagain"
	case retryConn:
		return "conn"
	case retryNoMaster:
		return "nomaster"
	case retryScriptConn:
		return "scriptconn"
	}
	return "none"
}

// classify decides whether r must be sent again.
//
// The rule for lost connections: a request that never reached the
// connection's socket (dial failure, queued when it broke) is always
// retried; one that may have been written is retried only when running
// it twice has the effect and the reply of running it once: reads, and
// the writes idempotentWrite names. Any other write is never sent twice:
// the client gets -TIMEOUT and decides. NOTMASTER and TRYAGAIN replies
// mean the dataserver did not run the command, so they are always
// retried.
func (ss *session) classify(r *request) (bool, retryKind) {
	if r.err != nil {
		switch {
		case r.err == errNoTable || r.err == errNoMaster:
			return true, retryNoMaster
		case !r.written || !r.write || idempotentWrite(r.args):
			return true, retryConn
		}
		return false, retryNone
	}
	if len(r.reply) == 0 || r.reply[0] != '-' {
		return false, retryNone
	}
	refusal, ok := envelope.Decode(r.reply)
	switch {
	case !ok:
		return false, retryNone
	case refusal.Reason == envelope.TryAgain:
		return true, retryTryAgain
	case refusal.Reason == envelope.ScriptConn:
		return true, retryScriptConn
	case refusal.LeaseLapsed || refusal.Table < r.sentVer:
		// The table was right: the master waits for the configserver
		// to confirm it, or has yet to learn the table (it was told a
		// newer one exists). That is a failover in progress, bounded
		// by time.
		return true, retryNoMaster
	}
	return true, retryNotMaster
}

// isNotMaster reports whether a reply is a dataserver's NOTMASTER.
func isNotMaster(reply []byte) bool {
	r, ok := envelope.Decode(reply)
	return ok && r.Reason == envelope.NotMaster
}

// backoff waits before attempt n of r.
func (ss *session) backoff(r *request, k retryKind, n int) {
	s := ss.srv
	switch k {
	case retryTryAgain:
		d := time.Duration(n) * time.Millisecond
		if d > 5*time.Millisecond {
			d = 5 * time.Millisecond
		}
		time.Sleep(d)
	case retryNotMaster:
		// The table moved on (or this proxy is ahead of the dataserver):
		// fetch the configserver's table now, then retry at once when
		// it changed, after a short pause otherwise. A slave read goes
		// to the master next.
		r.slaveOK = false
		refusal, _ := envelope.Decode(r.reply)
		dsVer := refusal.Table
		before := s.r.version()
		ch := s.r.waitChange()
		s.r.refresh(s.ctx)
		if s.r.version() != before {
			return
		}
		d := time.Duration(n) * time.Millisecond
		if dsVer > before {
			d = 20 * time.Millisecond
		}
		if d > 20*time.Millisecond {
			d = 20 * time.Millisecond
		}
		select {
		case <-ch:
		case <-time.After(d):
		}
	case retryConn, retryNoMaster:
		r.slaveOK = false
		ch := s.r.waitChange()
		s.r.refresh(s.ctx)
		d := time.Duration(n) * 10 * time.Millisecond
		if d > 100*time.Millisecond {
			d = 100 * time.Millisecond
		}
		select {
		case <-ch:
		case <-time.After(d):
		}
	}
}

// giveUp turns r's last failure into the client's error.
func (ss *session) giveUp(r *request) {
	if r.err == nil {
		return // the last NOTMASTER/TRYAGAIN reply stands
	}
	switch {
	case r.err == errNoMaster:
		r.reply = resp.AppendErr(r.reply[:0], bucketNoMaster(r.bucket))
	default:
		r.reply = resp.AppendErr(r.reply[:0], clusterDown(r.err))
	}
	r.err = nil
}

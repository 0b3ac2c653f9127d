package proxy

import (
	"bytes"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tairkv/tair/internal/glob"
	"github.com/tairkv/tair/resp"
)

// Pub/sub, as Redis 7 has it: SUBSCRIBE, PSUBSCRIBE, SSUBSCRIBE and their
// UNSUBSCRIBEs, PUBLISH, SPUBLISH and PUBSUB, in RESP2 (subscribed mode:
// only the pub/sub commands, PING, QUIT and RESET) and RESP3 (push
// replies, any command). Pub/sub never touches a dataserver: each proxy
// keeps its own subscribers (pubsubHub), and a PUBLISH is delivered to
// this proxy's subscribers and forwarded to every live peer proxy over
// one pipelined connection per peer (pubsub_peer.go), which delivers it
// to its own. At most once, as Redis: a proxy that dies cuts its
// subscribers, and what was in flight to it is lost.
//
// Delivery. A publisher (a session goroutine, or a peer's forwarded
// PUBLISH) appends the message to each subscriber's mailbox (psClient)
// under the hub's read lock, and posts a task to the subscriber's event
// loop (psFlush), which writes the mailbox out: a connection is written
// only by its loop. While the session's goroutine runs a batch (busy),
// the loop leaves the mailbox alone and the batch's output carries it:
// a (un)subscribe takes what its mailbox holds into its reply, before
// its confirmation (the hub's write lock orders it against publishers),
// and the end of a batch appends the rest, so a client never sees a
// message before the confirmation of the subscription that brought it,
// nor after the one that ended it.
//
// Slow subscribers are cut as Redis's client-output-buffer-limit pubsub
// (Config.PubSubHardLimit, PubSubSoftLimit, PubSubSoftSeconds): their
// pending output is checked whenever messages are added.

// psKind is a subscription family.
type psKind uint8

const (
	psChannel psKind = iota // SUBSCRIBE
	psPattern               // PSUBSCRIBE
	psShard                 // SSUBSCRIBE
)

var psWords = [3]struct{ sub, unsub, msg string }{
	{"subscribe", "unsubscribe", "message"},
	{"psubscribe", "punsubscribe", "pmessage"},
	{"ssubscribe", "sunsubscribe", "smessage"},
}

// psMsg is one published message, shared (read-only) by every
// subscriber it reaches.
type psMsg struct {
	channel, payload []byte
	shard            bool
}

// psItem is a message queued for one subscriber; pattern is set when a
// pattern subscription matched (pmessage).
type psItem struct {
	m       *psMsg
	pattern *string
}

func (it psItem) size() int64 {
	n := len(it.m.channel) + len(it.m.payload) + 48
	if it.pattern != nil {
		n += len(*it.pattern)
	}
	return int64(n)
}

// psClient is a session's pub/sub state. The subscription sets are
// guarded by the hub's mu; the mailbox by qmu; softSince belongs to the
// session's loop.
type psClient struct {
	sets  [3]map[string]struct{}
	gone  bool         // the session closed: subscribe no more
	total atomic.Int32 // subscriptions of every kind (read anywhere)

	qmu    sync.Mutex
	queue  []psItem
	qbytes int64
	posted bool // a psFlush task is queued on the loop
	busy   bool // the session goroutine runs a batch
	cut    bool // over the output limit: closing

	softSince time.Time
}

// count is what a (un)subscribe confirmation reports: channels and
// patterns together, shard channels alone (Redis 7.0).
func (c *psClient) count(k psKind) int64 {
	if k == psShard {
		return int64(len(c.sets[psShard]))
	}
	return int64(len(c.sets[psChannel]) + len(c.sets[psPattern]))
}

// takeLocked empties the mailbox; qmu held.
func (c *psClient) takeLocked() []psItem {
	q := c.queue
	c.queue, c.qbytes = nil, 0
	return q
}

func (c *psClient) take() []psItem {
	c.qmu.Lock()
	defer c.qmu.Unlock()
	return c.takeLocked()
}

// pubsubHub is one proxy's subscribers: for each kind, name -> sessions.
type pubsubHub struct {
	mu   sync.RWMutex
	subs [3]map[string]map[*session]struct{}

	peers peerSet
}

func (h *pubsubHub) addLocked(k psKind, name string, ss *session) {
	if h.subs[k] == nil {
		h.subs[k] = map[string]map[*session]struct{}{}
	}
	m := h.subs[k][name]
	if m == nil {
		m = map[*session]struct{}{}
		h.subs[k][name] = m
	}
	m[ss] = struct{}{}
}

func (h *pubsubHub) removeLocked(k psKind, name string, ss *session) {
	m := h.subs[k][name]
	delete(m, ss)
	if len(m) == 0 {
		delete(h.subs[k], name)
	}
}

// psMatch is Redis's stringmatchlen for pub/sub patterns: an empty
// channel matches only an empty pattern (not even "*").
func psMatch(pattern, s []byte) bool {
	if len(s) == 0 {
		return len(pattern) == 0
	}
	return glob.Match(pattern, s, false)
}

// deliver queues m for this proxy's subscribers and returns how many
// subscriptions received it.
func (h *pubsubHub) deliver(s *Server, m *psMsg) int64 {
	h.mu.RLock()
	defer h.mu.RUnlock()
	var n int64
	if m.shard {
		for ss := range h.subs[psShard][string(m.channel)] {
			ss.psPush(psItem{m: m})
			n++
		}
		return n
	}
	for ss := range h.subs[psChannel][string(m.channel)] {
		ss.psPush(psItem{m: m})
		n++
	}
	for p, set := range h.subs[psPattern] {
		if !psMatch([]byte(p), m.channel) {
			continue
		}
		pat := p
		for ss := range set {
			ss.psPush(psItem{m: m, pattern: &pat})
			n++
		}
	}
	return n
}

// publish delivers a message here and on every live peer: the number
// of receivers, this proxy's plus those of the peers that answered
// within PubSubPeerWait.
func (s *Server) publish(channel, payload []byte, shard bool) int64 {
	m := &psMsg{channel: bytes.Clone(channel), payload: bytes.Clone(payload), shard: shard}
	op := "PUBLISH"
	if shard {
		op = "SPUBLISH"
	}
	waits := s.ps.peers.broadcast(s, [][]byte{[]byte(op), m.channel, m.payload})
	n := s.ps.deliver(s, m)
	for _, rep := range waits.collect() {
		if v, ok := replyInt(rep); ok {
			n += v
		}
	}
	return n
}

// psPush queues it in ss's mailbox (any goroutine, under the hub's read
// lock) and has the loop write it unless a batch runs.
func (ss *session) psPush(it psItem) {
	c := &ss.ps
	c.qmu.Lock()
	if c.cut {
		c.qmu.Unlock()
		return
	}
	c.queue = append(c.queue, it)
	c.qbytes += it.size()
	if hard := ss.srv.cfg.PubSubHardLimit; hard > 0 && c.qbytes > hard {
		// The loop or the session's batch is not keeping up: cut now.
		c.cut = true
		c.queue, c.qbytes = nil, 0
		c.qmu.Unlock()
		ss.ls.post(func() { ss.psCut("pending") })
		return
	}
	post := !c.busy && !c.posted
	if post {
		c.posted = true
		// Under qmu: posted in mailbox order with runBatch's slowDone.
		if !ss.ls.post(ss.psFlush) {
			c.posted = false
		}
	}
	c.qmu.Unlock()
}

// psFlush writes the mailbox out (on the loop).
func (ss *session) psFlush() {
	c := &ss.ps
	c.qmu.Lock()
	c.posted = false
	if c.busy || ss.closing {
		if ss.closing {
			c.takeLocked()
		}
		c.qmu.Unlock()
		return
	}
	items := c.takeLocked()
	// Read under qmu: the goroutine's next batch (HELLO) sets busy
	// under qmu before it changes the protocol.
	proto := ss.proto
	c.qmu.Unlock()
	if len(items) == 0 {
		return
	}
	if ss.dirty {
		// Replies released this round wait in lout: the messages follow.
		ss.lout = appendPSItems(ss.lout, items, proto)
		return
	}
	ss.writeClient(appendPSItems(nil, items, proto))
	ss.psCheckOutput()
}

// psBatchStart and psBatchEnd bracket a batch of the session goroutine:
// meanwhile the loop does not write the mailbox; at the end what it
// holds follows the batch's output, and done (the loop's slowDone) is
// posted under qmu so that a later psFlush runs after it.
func (ss *session) psBatchStart() {
	c := &ss.ps
	c.qmu.Lock()
	c.busy = true
	c.qmu.Unlock()
}

func (ss *session) psBatchEnd(out []byte, done func(out []byte)) {
	c := &ss.ps
	c.qmu.Lock()
	defer c.qmu.Unlock()
	if items := c.takeLocked(); len(items) > 0 && !ss.quit {
		out = appendPSItems(out, items, ss.proto)
	}
	c.busy = false
	ss.ls.post(func() {
		done(out)
		if ss.ps.total.Load() > 0 {
			ss.psCheckOutput()
		}
	})
}

// psWhileBlocked writes, while the session's goroutine waits in a
// blocking command (a RESP3 subscriber's BLPOP), the messages its mailbox
// got meanwhile, after the batch's output so far (session goroutine).
// False when the client is gone or does not read.
func (ss *session) psWhileBlocked() bool {
	if ss.ps.total.Load() == 0 {
		return true
	}
	items := ss.ps.take()
	if len(items) == 0 {
		return true
	}
	ss.out = appendPSItems(ss.out, items, ss.proto)
	return ss.flush()
}

// psCheckOutput cuts a subscriber whose pending output is over the hard
// limit, or over the soft limit for longer than PubSubSoftSeconds (on
// the loop).
func (ss *session) psCheckOutput() {
	if ss.closing {
		return
	}
	cfg := &ss.srv.cfg
	pending := int64(ss.conn.OutboundBuffered())
	c := &ss.ps
	if cfg.PubSubHardLimit > 0 && pending > cfg.PubSubHardLimit {
		ss.psCut("hard")
		return
	}
	if cfg.PubSubSoftLimit > 0 && pending > cfg.PubSubSoftLimit {
		now := time.Now()
		if c.softSince.IsZero() {
			c.softSince = now
		} else if now.Sub(c.softSince) > cfg.PubSubSoftSeconds {
			ss.psCut("soft")
		}
		return
	}
	c.softSince = time.Time{}
}

// psCut closes a subscriber over its output limit (on the loop).
func (ss *session) psCut(which string) {
	if ss.closing {
		return
	}
	s := ss.srv
	s.log.Info("closing pub/sub client over its output buffer limit", "client", ss.addr, "limit", which, "pending", ss.conn.OutboundBuffered())
	s.m.clientEvictions.Inc()
	ss.close()
}

// psUnsubscribeAllLocked removes every subscription of the session from
// the hub, without replies; the hub's mu held.
func (ss *session) psUnsubscribeAllLocked() {
	h := &ss.srv.ps
	c := &ss.ps
	for k := range c.sets {
		for name := range c.sets[k] {
			h.removeLocked(psKind(k), name, ss)
		}
		c.sets[k] = nil
	}
	c.total.Store(0)
}

// psDrop forgets a closed session's subscriptions (OnClose, on the loop).
func (ss *session) psDrop() {
	h := &ss.srv.ps
	c := &ss.ps
	h.mu.Lock()
	ss.psUnsubscribeAllLocked()
	c.gone = true
	h.mu.Unlock()
	c.take()
}

// psReset unsubscribes from everything without replies (RESET) and
// returns the messages queued before, in the session's protocol.
func (ss *session) psReset() []byte {
	h := &ss.srv.ps
	c := &ss.ps
	h.mu.Lock()
	ss.psUnsubscribeAllLocked()
	items := c.take()
	h.mu.Unlock()
	return appendPSItems(nil, items, ss.proto)
}

// psCounts is the session's channels, patterns and shard channels
// (CLIENT LIST), read from any session.
func (ss *session) psCounts() (int, int, int) {
	h := &ss.srv.ps
	h.mu.RLock()
	defer h.mu.RUnlock()
	c := &ss.ps
	return len(c.sets[psChannel]), len(c.sets[psPattern]), len(c.sets[psShard])
}

// psClientsOfType is the sessions CLIENT LIST TYPE pubsub (subscribed to
// something) or TYPE normal (the others) lists.
func (s *Server) psClientsOfType(pubsub bool) map[int64]bool {
	s.sessMu.Lock()
	defer s.sessMu.Unlock()
	ids := map[int64]bool{}
	for id, o := range s.sessions {
		if (o.ps.total.Load() > 0) == pubsub {
			ids[id] = true
		}
	}
	return ids
}

// psRESP2 reports whether the session is in RESP2's subscribed mode.
func (ss *session) psRESP2() bool { return ss.proto == 2 && ss.ps.total.Load() > 0 }

// psRefuse answers a command not allowed in RESP2's subscribed mode.
func (ss *session) psRefuse(r *request, args [][]byte) bool {
	if !ss.psRESP2() {
		return false
	}
	switch r.spec.Name {
	case "subscribe", "psubscribe", "ssubscribe", "unsubscribe", "punsubscribe", "sunsubscribe", "ping", "quit", "reset":
		return false
	}
	name := r.spec.Name
	if in := r.spec.Info; in != nil && len(in.Subcommands) > 0 && len(args) > 1 {
		full := name + "|" + strings.ToLower(string(args[1]))
		for _, sub := range in.Subcommands {
			if sub.Name == full {
				name = full
			}
		}
	}
	if ss.tx.active {
		ss.tx.dirty = true
	}
	r.rejected = true
	r.setError("ERR Can't execute '" + name + "': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context")
	return true
}

func appendPSItems(b []byte, items []psItem, proto int) []byte {
	for _, it := range items {
		m := it.m
		switch {
		case it.pattern != nil:
			b = appendPushHeader(b, 4, proto)
			b = resp.AppendBulkString(b, "pmessage")
			b = resp.AppendBulkString(b, *it.pattern)
		case m.shard:
			b = appendPushHeader(b, 3, proto)
			b = resp.AppendBulkString(b, "smessage")
		default:
			b = appendPushHeader(b, 3, proto)
			b = resp.AppendBulkString(b, "message")
		}
		b = resp.AppendBulk(b, m.channel)
		b = resp.AppendBulk(b, m.payload)
	}
	return b
}

// appendPushHeader is ">n" in RESP3 (a push), "*n" in RESP2.
func appendPushHeader(b []byte, n int, proto int) []byte {
	if proto != 3 {
		return resp.AppendArray(b, n)
	}
	b = append(b, '>')
	b = strconv.AppendInt(b, int64(n), 10)
	return append(b, '\r', '\n')
}

// cmdSubscribe and friends: SUBSCRIBE, PSUBSCRIBE, SSUBSCRIBE.
func cmdSubscribe(ss *session, r *request)  { ss.psSubscribe(r, psChannel) }
func cmdPSubscribe(ss *session, r *request) { ss.psSubscribe(r, psPattern) }
func cmdSSubscribe(ss *session, r *request) { ss.psSubscribe(r, psShard) }

func cmdUnsubscribe(ss *session, r *request)  { ss.psUnsubscribe(r, psChannel) }
func cmdPUnsubscribe(ss *session, r *request) { ss.psUnsubscribe(r, psPattern) }
func cmdSUnsubscribe(ss *session, r *request) { ss.psUnsubscribe(r, psShard) }

func (ss *session) psSubscribe(r *request, k psKind) {
	h := &ss.srv.ps
	c := &ss.ps
	var b []byte
	h.mu.Lock()
	for _, a := range r.args[1:] {
		name := string(a)
		if c.sets[k] == nil {
			c.sets[k] = map[string]struct{}{}
		}
		if _, ok := c.sets[k][name]; !ok && !c.gone {
			c.sets[k][name] = struct{}{}
			h.addLocked(k, name, ss)
		}
		b = appendPushHeader(b, 3, r.proto)
		b = resp.AppendBulkString(b, psWords[k].sub)
		b = resp.AppendBulk(b, a)
		b = resp.AppendInt(b, c.count(k))
	}
	ss.psConfirmAndUnlock(r, b)
}

func (ss *session) psUnsubscribe(r *request, k psKind) {
	h := &ss.srv.ps
	c := &ss.ps
	h.mu.Lock()
	names := r.args[1:]
	if len(names) == 0 {
		all := make([]string, 0, len(c.sets[k]))
		for n := range c.sets[k] {
			all = append(all, n)
		}
		sort.Strings(all)
		names = make([][]byte, len(all))
		for i, n := range all {
			names[i] = []byte(n)
		}
	}
	var b []byte
	for _, a := range names {
		name := string(a)
		if _, ok := c.sets[k][name]; ok {
			delete(c.sets[k], name)
			h.removeLocked(k, name, ss)
		}
		b = appendPushHeader(b, 3, r.proto)
		b = resp.AppendBulkString(b, psWords[k].unsub)
		b = resp.AppendBulk(b, a)
		b = resp.AppendInt(b, c.count(k))
	}
	if len(names) == 0 {
		b = appendPushHeader(b, 3, r.proto)
		b = resp.AppendBulkString(b, psWords[k].unsub)
		b = resp.AppendNull(b, r.proto)
		b = resp.AppendInt(b, c.count(k))
	}
	ss.psConfirmAndUnlock(r, b)
}

// psConfirmAndUnlock answers a (un)subscribe with its confirmations b,
// after the messages queued before the change, then releases the hub's
// mu: held since the change, it keeps a message the change lets in from
// being queued ahead of them.
func (ss *session) psConfirmAndUnlock(r *request, b []byte) {
	ss.psSetTotal()
	items := ss.ps.take()
	ss.srv.ps.mu.Unlock()
	r.reply = append(appendPSItems(r.reply[:0], items, r.proto), b...)
	r.local = true
}

// psSetTotal updates the count of subscriptions; hub's mu held.
func (ss *session) psSetTotal() {
	c := &ss.ps
	c.total.Store(int32(len(c.sets[0]) + len(c.sets[1]) + len(c.sets[2])))
}

func cmdPublish(ss *session, r *request)  { ss.psPublish(r, false) }
func cmdSPublish(ss *session, r *request) { ss.psPublish(r, true) }

// psPublish answers PUBLISH or SPUBLISH. A subscriber publishing (RESP3)
// gets what its mailbox holds, its own message included, before the
// count, as Redis writes a message to its own client first.
func (ss *session) psPublish(r *request, shard bool) {
	n := ss.srv.publish(r.args[1], r.args[2], shard)
	var b []byte
	if ss.ps.total.Load() > 0 {
		b = appendPSItems(r.reply[:0], ss.ps.take(), r.proto)
	}
	r.reply = resp.AppendInt(b, n)
	r.local = true
}

// pubsubHelp is PUBSUB HELP's text, as Redis 7.0's.
var pubsubHelp = []string{
	"CHANNELS [<pattern>]",
	"    Return the currently active channels matching a <pattern> (default: '*').",
	"NUMPAT",
	"    Return number of subscriptions to patterns.",
	"NUMSUB [<channel> ...]",
	"    Return the number of subscribers for the specified channels, excluding",
	"    pattern subscriptions(default: no channels).",
	"SHARDCHANNELS [<pattern>]",
	"    Return the currently active shard level channels matching a <pattern> (default: '*').",
	"SHARDNUMSUB [<shardchannel> ...]",
	"    Return the number of subscribers for the specified shard level channel(s)",
	"HELP",
	"    Prints this help.",
}

// cmdPubsub is PUBSUB: this proxy's subscribers and the live peers'
// (channels united, counts summed).
func cmdPubsub(ss *session, r *request) {
	s := ss.srv
	sub := strings.ToLower(string(r.args[1]))
	n := len(r.args)
	switch {
	case sub == "help" && n == 2:
		r.raw(helpReply("PUBSUB", pubsubHelp))
	case (sub == "channels" || sub == "shardchannels") && n <= 3:
		k, op := psChannel, "CHANNELS"
		if sub == "shardchannels" {
			k, op = psShard, "SHARDCHANNELS"
		}
		req := [][]byte{[]byte(op)}
		var pat []byte
		if n == 3 {
			pat = r.args[2]
			req = append(req, pat)
		}
		waits := s.ps.peers.broadcast(s, req)
		set := map[string]struct{}{}
		for _, c := range s.ps.channels(k, pat, n == 3) {
			set[c] = struct{}{}
		}
		for _, rep := range waits.collect() {
			for _, c := range replyStrings(rep) {
				set[c] = struct{}{}
			}
		}
		names := make([]string, 0, len(set))
		for c := range set {
			names = append(names, c)
		}
		sort.Strings(names)
		b := resp.AppendArray(r.reply[:0], len(names))
		for _, c := range names {
			b = resp.AppendBulkString(b, c)
		}
		r.raw(b)
	case sub == "numsub" || sub == "shardnumsub":
		k, op := psChannel, "NUMSUB"
		if sub == "shardnumsub" {
			k, op = psShard, "SHARDNUMSUB"
		}
		chans := r.args[2:]
		counts := s.ps.numsub(k, chans)
		if len(chans) > 0 {
			req := append([][]byte{[]byte(op)}, chans...)
			for _, rep := range s.ps.peers.broadcast(s, req).collect() {
				if v := replyInts(rep); len(v) == len(counts) {
					for i := range counts {
						counts[i] += v[i]
					}
				}
			}
		}
		b := resp.AppendArray(r.reply[:0], 2*len(chans))
		for i, c := range chans {
			b = resp.AppendBulk(b, c)
			b = resp.AppendInt(b, counts[i])
		}
		r.raw(b)
	case sub == "numpat" && n == 2:
		// Redis counts distinct patterns: a pattern subscribed on two
		// proxies counts once.
		set := map[string]struct{}{}
		for _, p := range s.ps.channels(psPattern, nil, false) {
			set[p] = struct{}{}
		}
		for _, rep := range s.ps.peers.broadcast(s, [][]byte{[]byte("PATTERNS")}).collect() {
			for _, p := range replyStrings(rep) {
				set[p] = struct{}{}
			}
		}
		r.integer(int64(len(set)))
	default:
		switch sub {
		case "help", "numpat":
			r.setError("ERR wrong number of arguments for 'pubsub|" + sub + "' command")
		case "channels", "shardchannels":
			r.setError("ERR unknown subcommand or wrong number of arguments for '" + quotedArg(r.args[1]) + "'. Try PUBSUB HELP.")
		default:
			r.setError("ERR unknown subcommand '" + quotedArg(r.args[1]) + "'. Try PUBSUB HELP.")
		}
	}
}

// channels lists this proxy's channels of kind k with a subscriber,
// matching pat when hasPat.
func (h *pubsubHub) channels(k psKind, pat []byte, hasPat bool) []string {
	h.mu.RLock()
	defer h.mu.RUnlock()
	var out []string
	for c := range h.subs[k] {
		if !hasPat || psMatch(pat, []byte(c)) {
			out = append(out, c)
		}
	}
	return out
}

func (h *pubsubHub) numsub(k psKind, chans [][]byte) []int64 {
	h.mu.RLock()
	defer h.mu.RUnlock()
	out := make([]int64, len(chans))
	for i, c := range chans {
		out[i] = int64(len(h.subs[k][string(c)]))
	}
	return out
}

// sizes is this proxy's channels, patterns and shard channels with a
// subscriber (INFO stats).
func (h *pubsubHub) sizes() (int64, int64, int64) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return int64(len(h.subs[psChannel])), int64(len(h.subs[psPattern])), int64(len(h.subs[psShard]))
}

func (h *pubsubHub) numpat() int64 {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return int64(len(h.subs[psPattern]))
}

// cmdPubFwd is TAIR.PUBFWD, a peer proxy's request: this proxy's part
// only, never forwarded again.
//
//	TAIR.PUBFWD PUBLISH|SPUBLISH <channel> <message>   :receivers here
//	TAIR.PUBFWD CHANNELS|SHARDCHANNELS [pattern]       channels here
//	TAIR.PUBFWD NUMSUB|SHARDNUMSUB <channel>...        [count...] here
//	TAIR.PUBFWD PATTERNS                               patterns subscribed here
//	TAIR.PUBFWD NUMPAT                                 :patterns here
func cmdPubFwd(ss *session, r *request) {
	h := &ss.srv.ps
	op := strings.ToUpper(string(r.args[1]))
	args := r.args[2:]
	switch {
	case (op == "PUBLISH" || op == "SPUBLISH") && len(args) == 2:
		m := &psMsg{channel: bytes.Clone(args[0]), payload: bytes.Clone(args[1]), shard: op == "SPUBLISH"}
		r.integer(h.deliver(ss.srv, m))
	case (op == "CHANNELS" || op == "SHARDCHANNELS") && len(args) <= 1:
		k := psChannel
		if op == "SHARDCHANNELS" {
			k = psShard
		}
		var pat []byte
		if len(args) == 1 {
			pat = args[0]
		}
		names := h.channels(k, pat, len(args) == 1)
		b := resp.AppendArray(r.reply[:0], len(names))
		for _, c := range names {
			b = resp.AppendBulkString(b, c)
		}
		r.raw(b)
	case op == "NUMSUB" || op == "SHARDNUMSUB":
		k := psChannel
		if op == "SHARDNUMSUB" {
			k = psShard
		}
		counts := h.numsub(k, args)
		b := resp.AppendArray(r.reply[:0], len(counts))
		for _, c := range counts {
			b = resp.AppendInt(b, c)
		}
		r.raw(b)
	case op == "PATTERNS" && len(args) == 0:
		names := h.channels(psPattern, nil, false)
		b := resp.AppendArray(r.reply[:0], len(names))
		for _, c := range names {
			b = resp.AppendBulkString(b, c)
		}
		r.raw(b)
	case op == "NUMPAT" && len(args) == 0:
		r.integer(h.numpat())
	default:
		r.setError("ERR syntax error")
	}
}

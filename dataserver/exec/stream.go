package exec

// Redis 7 streams (t_stream.c): XADD, XRANGE, XREVRANGE, XLEN, XDEL,
// XTRIM, XREAD, XSETID and the consumer groups (XGROUP, XREADGROUP, XACK,
// XPENDING, XCLAIM, XAUTOCLAIM, XINFO), with Redis 7.0's replies, errors
// and order of checks. The stream is an engines.Object (ds.Stream) on
// every engine.
//
// # Blocking
//
// XREAD and XREADGROUP make one non-blocking attempt whatever their BLOCK
// (checked, then ignored): a null when there is nothing. The proxy polls
// (proxy/streamblock.go), as it does for the blocking pops.
//
// # Replication
//
// Slaves get the effect, never a choice made here: XADD propagates the id
// it generated, and a trim with ~ or LIMIT the exact trim it made (as
// Redis rewrites them). XREADGROUP, XCLAIM and XAUTOCLAIM propagate, per
// key they wrote, one XCLAIM key group consumer 0 ids... TIME t
// [RETRYCOUNT n] [FORCE] [JUSTID] LASTID id [ENTRIESREAD n] naming every
// entry they delivered, claimed or dropped from the PEL (Redis sends one
// XCLAIM per entry; one command per write keeps the slave's record at the
// master's version; ENTRIESREAD, the group's read counter, is taken from
// the master only), an XGROUP SETID ... ENTRIESREAD n when only the
// group's last id moved, an XGROUP CREATECONSUMER for a consumer a read
// created or saw without delivering anything (on a slave it marks an
// existing consumer seen), so that a slave ends with the same stream.

import (
	"bytes"
	"math"
	"strconv"

	"github.com/google/btree"

	"github.com/tairkv/tair/engines"
	"github.com/tairkv/tair/engines/ds"
	"github.com/tairkv/tair/internal/errs"
)

func init() {
	Register("xadd", cmdXAdd)
	Register("xtrim", cmdXTrim)
	Register("xlen", cmdXLen)
	Register("xrange", func(c *Ctx) { cmdXRange(c, false) })
	Register("xrevrange", func(c *Ctx) { cmdXRange(c, true) })
	Register("xdel", cmdXDel)
	Register("xsetid", cmdXSetID)
	Register("xread", func(c *Ctx) { cmdXRead(c, false) })
	Register("xreadgroup", func(c *Ctx) { cmdXRead(c, true) })
	Register("xgroup", cmdXGroup)
	Register("xack", cmdXAck)
	Register("xpending", cmdXPending)
	Register("xclaim", cmdXClaim)
	Register("xautoclaim", cmdXAutoClaim)
	Register("xinfo", cmdXInfo)
}

const (
	errTextStreamID     = "ERR Invalid stream ID specified as stream command argument"
	errTextXAddSmaller  = "ERR The ID specified in XADD is equal or smaller than the target stream top item"
	errTextXAddZero     = "ERR The ID specified in XADD must be greater than 0-0"
	errTextXAddExhaust  = "ERR The stream has exhausted the last possible ID, unable to add more items"
	errTextStartID      = "ERR invalid start ID for the interval"
	errTextEndID        = "ERR invalid end ID for the interval"
	errTextXGroupNoKey  = "ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically."
	errTextBusyGroup    = "BUSYGROUP Consumer Group name already exists"
	errTextEntriesRead  = "ERR value for ENTRIESREAD must be positive or -1"
	errTextTrimBoth     = "ERR syntax error, MAXLEN and MINID options at the same time are not compatible"
	errTextLimitNoTrim  = "ERR syntax error, LIMIT cannot be used without specifying a trimming strategy"
	errTextXTrimNoStrat = "ERR syntax error, XTRIM must be called with a trimming strategy"
	errTextLimitNoApprx = "ERR syntax error, LIMIT cannot be used without the special ~ option"
)

var (
	argXClaim      = []byte("XCLAIM")
	argXGroup      = []byte("XGROUP")
	argSetID       = []byte("SETID")
	argCreateCons  = []byte("CREATECONSUMER")
	argEntriesRead = []byte("ENTRIESREAD")
	argTime        = []byte("TIME")
	argRetryCount  = []byte("RETRYCOUNT")
	argForce       = []byte("FORCE")
	argJustID      = []byte("JUSTID")
	argLastID      = []byte("LASTID")
	argEqual       = []byte("=")
)

// ---- ids ----

// strtoull is C's strtoull as Redis's string2ull falls back to it: space,
// a sign (a minus negates), digits to the end; false on overflow or
// anything else.
func strtoull(s []byte) (uint64, bool) {
	if v, ok := ParseInt(s); ok {
		return uint64(v), v >= 0
	}
	i := 0
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	if i == len(s) {
		return 0, false
	}
	var v uint64
	for ; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		if v > (math.MaxUint64-uint64(c-'0'))/10 {
			return 0, false
		}
		v = v*10 + uint64(c-'0')
	}
	if neg {
		v = -v
	}
	return v, true
}

// parseStreamID is Redis's streamGenericParseIDOrReply: "-" and "+"
// (refused when strict), <ms>-<seq>, <ms> (seq missingSeq), and <ms>-*
// when seqStar (seqGiven false then).
func parseStreamID(b []byte, strict bool, missingSeq uint64, seqStar bool) (id ds.StreamID, seqGiven bool, ok bool) {
	if len(b) > 127 {
		return id, false, false
	}
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i] // a C string
	}
	if len(b) == 1 && (b[0] == '-' || b[0] == '+') {
		if strict {
			return id, false, false
		}
		if b[0] == '-' {
			return ds.StreamID{}, true, true
		}
		return ds.MaxStreamID, true, true
	}
	seqGiven = true
	msPart, seqPart, dash := bytes.Cut(b, []byte("-"))
	ms, ok := strtoull(msPart)
	if !ok {
		return id, false, false
	}
	seq := missingSeq
	if dash {
		if seqStar && len(seqPart) == 1 && seqPart[0] == '*' {
			seq, seqGiven = 0, false
		} else if seq, ok = strtoull(seqPart); !ok {
			return id, false, false
		}
	}
	return ds.StreamID{Ms: ms, Seq: seq}, seqGiven, true
}

// strictID parses args[i] as a strict id (no "-" or "+"), replying
// Redis's error when it is not one.
func strictID(c *Ctx, i int) (ds.StreamID, bool) {
	id, _, ok := parseStreamID(c.Args[i], true, 0, false)
	if !ok {
		c.Error(errTextStreamID)
	}
	return id, ok
}

// strictIDs parses every arg as a strict id: XDEL's and XACK's ids, all
// checked before any is used.
func strictIDs(args [][]byte) ([]ds.StreamID, error) {
	ids := make([]ds.StreamID, 0, len(args))
	for _, a := range args {
		id, _, ok := parseStreamID(a, true, 0, false)
		if !ok {
			return nil, ReplyError(errTextStreamID)
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// intervalID is Redis's streamParseIntervalIDOrReply: an id, or an
// exclusive "(id" (strict), with missingSeq for a bare <ms>.
func intervalID(c *Ctx, i int, missingSeq uint64) (id ds.StreamID, exclusive, ok bool) {
	b := c.Args[i]
	if len(b) > 1 && b[0] == '(' {
		id, _, ok = parseStreamID(b[1:], true, missingSeq, false)
		exclusive = true
	} else {
		id, _, ok = parseStreamID(b, false, missingSeq, false)
	}
	if !ok {
		c.Error(errTextStreamID)
	}
	return id, exclusive, ok
}

// rangeStart parses an interval's start: an exclusive start is the next id.
func rangeStart(c *Ctx, i int) (ds.StreamID, bool) {
	return rangeBound(c, i, 0, ds.StreamID.Incr, errTextStartID)
}

// rangeEnd parses an interval's end: an exclusive end is the previous id.
func rangeEnd(c *Ctx, i int) (ds.StreamID, bool) {
	return rangeBound(c, i, math.MaxUint64, ds.StreamID.Decr, errTextEndID)
}

// rangeBound is rangeStart and rangeEnd: an exclusive bound is the id one
// step inward, errText when there is none.
func rangeBound(c *Ctx, i int, missingSeq uint64, inward func(ds.StreamID) (ds.StreamID, bool), errText string) (ds.StreamID, bool) {
	id, ex, ok := intervalID(c, i, missingSeq)
	if !ok {
		return id, false
	}
	if ex {
		if id, ok = inward(id); !ok {
			c.Error(errText)
			return id, false
		}
	}
	return id, true
}

// ---- the key's stream ----

// streamDo runs fn on the stream at args[i]: s is nil when the key is
// missing and create is false (a new empty stream when create). fn
// returns whether it changed the stream (then stored, even empty: Redis
// keeps empty streams). Another type is WRONGTYPE before fn runs.
func streamDo(c *Ctx, i int, create bool, fn func(s *ds.Stream) (bool, error)) error {
	k := c.Key(i)
	if c.isPkey(k) {
		return errs.ErrWrongType
	}
	_, err := c.UpdateKey(k, func(cur engines.Entry, exists bool) (engines.Entry, engines.Action, error) {
		var s *ds.Stream
		switch {
		case exists && !holdsType(cur, engines.TypeStream):
			return cur, engines.Keep, errs.ErrWrongType
		case exists:
			s = cur.Object.(*ds.Stream)
		case create:
			s = ds.NewStream()
		}
		changed, err := fn(s)
		if err != nil || !changed || s == nil {
			return cur, engines.Keep, err
		}
		next := cur
		if !exists {
			next = engines.Entry{Type: engines.TypeStream}
		}
		next.Object = s
		return next, engines.Store, nil
	})
	return err
}

// streamFail ends a command whose fn failed: what it wrote is taken back
// (from start) and err's reply written.
func streamFail(c *Ctx, start int, err error) {
	c.Out = c.Out[:start]
	c.Fail(err)
}

// ---- replies ----

func (c *Ctx) streamID(id ds.StreamID) {
	var buf [48]byte
	c.Bulk(id.Append(buf[:0]))
}

// streamEntry writes [id, [field, value ...]].
func (c *Ctx) streamEntry(e *ds.StreamEntry) {
	c.Array(2)
	c.streamID(e.ID)
	c.Array(len(e.Fields))
	for _, f := range e.Fields {
		c.BulkString(f)
	}
}

// streamRange writes the entries from start to end (count 0: all) as an
// array and returns how many.
func (c *Ctx) streamRange(s *ds.Stream, start, end ds.StreamID, rev bool, count int64) int {
	var es []*ds.StreamEntry
	s.Range(start, end, rev, func(e *ds.StreamEntry) bool {
		es = append(es, e)
		return count == 0 || int64(len(es)) < count
	})
	c.Array(len(es))
	for _, e := range es {
		c.streamEntry(e)
	}
	return len(es)
}

// streamOneEntry writes entry id as [id, fields], or a null when it is
// gone, and reports whether it was there.
func (c *Ctx) streamOneEntry(s *ds.Stream, id ds.StreamID) bool {
	if e := s.Get(id); e != nil {
		c.streamEntry(e)
		return true
	}
	return false
}

// ---- XADD, XTRIM ----

// trimArgs are XADD's and XTRIM's parsed options.
type trimArgs struct {
	ds.TrimArgs
	strategy bool // MAXLEN or MINID given
	argIdx   int  // the threshold's index
	noMk     bool
	idGiven  bool
	seqGiven bool
	id       ds.StreamID
}

// parseTrimArgs is Redis's streamParseAddOrTrimArgsOrReply: it returns
// the index after the options (XADD: the id's), or -1 with the reply
// written.
func parseTrimArgs(c *Ctx, xadd bool, a *trimArgs) int {
	limitGiven := false
	i := 2
	for ; i < len(c.Args); i++ {
		more := len(c.Args) - 1 - i
		opt := c.Args[i]
		switch {
		case xadd && len(opt) == 1 && opt[0] == '*':
			goto done
		case eqFold(opt, "maxlen") && more > 0, eqFold(opt, "minid") && more > 0:
			minid := eqFold(opt, "minid")
			if a.strategy {
				c.Error(errTextTrimBoth)
				return -1
			}
			a.Approx = false
			if next := cString(c.Args[i+1]); more >= 2 && (next == "~" || next == "=") {
				a.Approx = next == "~"
				i++
			}
			if minid {
				id, ok := strictID(c, i+1)
				if !ok {
					return -1
				}
				a.ID = id
			} else {
				n, ok := nonNegArg(c, i+1, "MAXLEN")
				if !ok {
					return -1
				}
				a.MaxLen = n
			}
			i++
			a.MinID, a.strategy, a.argIdx = minid, true, i
		case eqFold(opt, "limit") && more > 0:
			n, ok := nonNegArg(c, i+1, "LIMIT")
			if !ok {
				return -1
			}
			a.Limit, limitGiven = n, true
			i++
		case xadd && eqFold(opt, "nomkstream"):
			a.noMk = true
		case xadd:
			id, seqGiven, ok := parseStreamID(opt, true, 0, true)
			if !ok {
				c.Error(errTextStreamID)
				return -1
			}
			a.id, a.seqGiven, a.idGiven = id, seqGiven, true
			goto done
		default:
			c.SyntaxErr()
			return -1
		}
	}
done:
	if a.Limit != 0 && !a.strategy {
		c.Error(errTextLimitNoTrim)
		return -1
	}
	if !xadd && !a.strategy {
		c.Error(errTextXTrimNoStrat)
		return -1
	}
	switch {
	case c.Replica:
		a.Limit = 0 // the master sent the exact trim
	case limitGiven:
		if !a.Approx {
			c.Error(errTextLimitNoApprx)
			return -1
		}
	case a.Approx:
		a.Limit = 100 * 100 // 100 * stream-node-max-entries
	default:
		a.Limit = 0
	}
	return i
}

// nonNegArg parses args[i], the argument of option name, as an integer
// >= 0, replying the error when it is not one.
func nonNegArg(c *Ctx, i int, name string) (int64, bool) {
	n, ok := c.IntArg(i)
	if !ok {
		return 0, false
	}
	if n < 0 {
		c.Error("ERR The " + name + " argument must be >= 0.")
		return 0, false
	}
	return n, true
}

// exactTrimArgs rewrites a trim with ~ into the exact trim it made (as
// Redis's streamRewriteApproxSpecifier and streamRewriteTrimArgument):
// "=", and the length left or the first id left.
func exactTrimArgs(args [][]byte, a *trimArgs, s *ds.Stream) {
	args[a.argIdx-1] = argEqual
	if a.MinID {
		args[a.argIdx] = []byte(s.FirstNodeID().String())
	} else {
		args[a.argIdx] = Int64Bytes(int64(s.Len()))
	}
}

func cmdXAdd(c *Ctx) {
	var a trimArgs
	idPos := parseTrimArgs(c, true, &a)
	if idPos < 0 {
		return
	}
	fieldPos := idPos + 1
	if n := len(c.Args) - fieldPos; n < 2 || n%2 == 1 {
		dsWrongArgs(c)
		return
	}
	if a.idGiven && a.seqGiven && a.id.IsZero() {
		c.Error(errTextXAddZero)
		return
	}
	if err := dsCheckValues(c, fieldPos, 1); err != nil {
		c.Fail(err)
		return
	}
	var added ds.StreamID
	var prop [][]byte
	missing := false
	err := streamDo(c, 1, !a.noMk, func(s *ds.Stream) (bool, error) {
		if s == nil {
			missing = true
			return false, nil
		}
		if s.LastID == ds.MaxStreamID {
			return false, ReplyError(errTextXAddExhaust)
		}
		var id ds.StreamID
		switch {
		case a.idGiven && a.seqGiven:
			id = a.id
		case a.idGiven:
			if s.LastID.Ms == a.id.Ms {
				if s.LastID.Seq == math.MaxUint64 {
					return false, ReplyError(errTextXAddSmaller)
				}
				id = ds.StreamID{Ms: a.id.Ms, Seq: s.LastID.Seq + 1}
			} else {
				id = a.id
			}
		default:
			ms := uint64(c.NowMs())
			if ms > s.LastID.Ms {
				id = ds.StreamID{Ms: ms}
			} else {
				id, _ = s.LastID.Incr()
			}
		}
		if id.Cmp(s.LastID) <= 0 {
			return false, ReplyError(errTextXAddSmaller)
		}
		fields := make([]string, 0, len(c.Args)-fieldPos)
		for _, f := range c.Args[fieldPos:] {
			fields = append(fields, string(f))
		}
		s.Append(id, fields)
		added = id
		if a.strategy {
			s.Trim(a.TrimArgs)
		}
		prop = append([][]byte(nil), c.Args...)
		prop[idPos] = []byte(id.String())
		if a.strategy && a.Approx {
			exactTrimArgs(prop, &a, s)
		}
		return true, nil
	})
	switch {
	case err != nil:
		c.Fail(err)
	case missing:
		c.NoPropagate()
		c.Null()
	default:
		c.propagateCmd(prop)
		c.streamID(added)
	}
}

func cmdXTrim(c *Ctx) {
	var a trimArgs
	if parseTrimArgs(c, false, &a) < 0 {
		return
	}
	var deleted int64
	var prop [][]byte
	err := streamDo(c, 1, false, func(s *ds.Stream) (bool, error) {
		if s == nil {
			return false, nil
		}
		deleted = s.Trim(a.TrimArgs)
		if deleted > 0 && a.Approx {
			prop = append([][]byte(nil), c.Args...)
			exactTrimArgs(prop, &a, s)
		}
		return deleted > 0, nil
	})
	if err != nil {
		c.Fail(err)
		return
	}
	if prop != nil {
		c.propagateCmd(prop)
	} else if deleted == 0 {
		c.NoPropagate()
	}
	c.Int(deleted)
}

// ---- XLEN, XRANGE, XREVRANGE, XDEL, XSETID ----

func cmdXLen(c *Ctx) {
	n := 0
	err := streamDo(c, 1, false, func(s *ds.Stream) (bool, error) {
		if s != nil {
			n = s.Len()
		}
		return false, nil
	})
	if err != nil {
		c.Fail(err)
		return
	}
	c.Int(int64(n))
}

func cmdXRange(c *Ctx, rev bool) {
	si, ei := 2, 3
	if rev {
		si, ei = 3, 2
	}
	start, ok := rangeStart(c, si)
	if !ok {
		return
	}
	end, ok := rangeEnd(c, ei)
	if !ok {
		return
	}
	count := int64(-1)
	for j := 4; j < len(c.Args); j++ {
		if eqFold(c.Args[j], "count") && j+1 < len(c.Args) {
			n, ok := c.IntArg(j + 1)
			if !ok {
				return
			}
			count = max(n, 0)
			j++
			continue
		}
		c.SyntaxErr()
		return
	}
	from := len(c.Out)
	found := false
	err := streamDo(c, 1, false, func(s *ds.Stream) (bool, error) {
		if s == nil {
			return false, nil
		}
		found = true
		if count == 0 {
			c.NullArray()
			return false, nil
		}
		c.streamRange(s, start, end, rev, max(count, 0))
		return false, nil
	})
	switch {
	case err != nil:
		streamFail(c, from, err)
	case !found:
		c.Array(0)
	}
}

func cmdXDel(c *Ctx) {
	var deleted int64
	err := streamDo(c, 1, false, func(s *ds.Stream) (bool, error) {
		if s == nil {
			return false, nil
		}
		ids, err := strictIDs(c.Args[2:])
		if err != nil {
			return false, err
		}
		first := false
		for _, id := range ids {
			if s.Delete(id) {
				if s.MaxDeletedID.Less(id) {
					s.MaxDeletedID = id
				}
				deleted++
				first = first || id == s.FirstID
			}
		}
		if deleted > 0 && (s.Len() == 0 || first) {
			s.UpdateFirstID()
		}
		return deleted > 0, nil
	})
	replyCount(c, int(deleted), err)
}

func cmdXSetID(c *Ctx) {
	id, ok := strictID(c, 2)
	if !ok {
		return
	}
	added := int64(-1)
	var maxDel ds.StreamID
	for i := 3; i < len(c.Args); i += 2 {
		more := i+1 < len(c.Args)
		switch {
		case eqFold(c.Args[i], "entriesadded") && more:
			n, ok := c.IntArg(i + 1)
			if !ok {
				return
			}
			if n < 0 {
				c.Error("ERR entries_added must be positive")
				return
			}
			added = n
		case eqFold(c.Args[i], "maxdeletedid") && more:
			if maxDel, ok = strictID(c, i+1); !ok {
				return
			}
			if id.Less(maxDel) {
				c.Error("ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id")
				return
			}
		default:
			c.SyntaxErr()
			return
		}
	}
	err := streamDo(c, 1, false, func(s *ds.Stream) (bool, error) {
		if s == nil {
			return false, ReplyError(ErrTextNoSuchKey)
		}
		if s.Len() > 0 {
			if id.Less(s.Last().ID) {
				return false, ReplyError("ERR The ID specified in XSETID is smaller than the target stream top item")
			}
			if added != -1 && int64(s.Len()) > added {
				return false, ReplyError("ERR The entries_added specified in XSETID is smaller than the target stream length")
			}
		}
		if id.Less(s.MaxDeletedID) {
			return false, ReplyError("ERR The ID specified in XSETID is smaller than current max_deleted_entry_id")
		}
		s.LastID = id
		if added != -1 {
			s.EntriesAdded = added
		}
		if !maxDel.IsZero() {
			s.MaxDeletedID = maxDel
		}
		return true, nil
	})
	if err != nil {
		c.Fail(err)
		return
	}
	c.OK()
}

// ---- XREAD, XREADGROUP ----

// blockTimeout checks a BLOCK argument as Redis 7.0's
// getTimeoutFromObjectOrReply in milliseconds (the wait itself is the
// proxy's).
func blockTimeout(c *Ctx, i int) bool {
	t, ok := ParseInt(c.Args[i])
	switch {
	case !ok:
		c.Error("ERR timeout is not an integer or out of range")
		return false
	case t < 0:
		c.Error("ERR timeout is negative")
		return false
	}
	return true
}

// readKey is one stream of an XREAD: its key index and the id to read
// after (gt), and for XREADGROUP whether it is ">".
type readKey struct {
	key   int
	gt    ds.StreamID
	isNew bool
}

func cmdXRead(c *Ctx, group bool) {
	var count int64
	streamsArg, nstreams := 0, 0
	var groupName, consumerName []byte
	noack := false
	for i := 1; i < len(c.Args); i++ {
		more := len(c.Args) - i - 1
		o := c.Args[i]
		switch {
		case eqFold(o, "block") && more > 0:
			i++
			if !blockTimeout(c, i) {
				return
			}
		case eqFold(o, "count") && more > 0:
			i++
			n, ok := c.IntArg(i)
			if !ok {
				return
			}
			count = max(n, 0)
		case eqFold(o, "streams") && more > 0:
			streamsArg = i + 1
			nstreams = len(c.Args) - streamsArg
			if nstreams%2 != 0 {
				// Redis 7.0 says XREAD and '$' for XREADGROUP too
				c.Error("ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified.")
				return
			}
			nstreams /= 2
			i = len(c.Args)
		case eqFold(o, "group") && more >= 2:
			if !group {
				c.Error("ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead.")
				return
			}
			groupName, consumerName = c.Args[i+1], c.Args[i+2]
			i += 2
		case eqFold(o, "noack"):
			if !group {
				c.Error("ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead.")
				return
			}
			noack = true
		default:
			c.SyntaxErr()
			return
		}
	}
	if streamsArg == 0 {
		c.SyntaxErr()
		return
	}
	if group && groupName == nil {
		c.Error("ERR Missing GROUP option for XREADGROUP")
		return
	}
	// The ids, with each key's type and group checked in turn.
	keys := make([]readKey, nstreams)
	for j := range keys {
		ki, ii := streamsArg+j, streamsArg+nstreams+j
		keys[j].key = ki
		var last ds.StreamID
		hasGroup := false
		err := streamDo(c, ki, false, func(s *ds.Stream) (bool, error) {
			if s != nil {
				last = s.LastID
				hasGroup = group && s.Group(string(groupName)) != nil
			}
			return false, nil
		})
		if err != nil {
			c.Fail(err)
			return
		}
		if group && !hasGroup {
			c.Error("NOGROUP No such key '" + cString(c.Args[ki]) + "' or consumer group '" + cString(groupName) + "' in XREADGROUP with GROUP option")
			return
		}
		idArg := c.Args[ii]
		switch {
		case string(idArg) == "$":
			if group {
				c.Error("ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID would just return an empty result set.")
				return
			}
			keys[j].gt = last
			continue
		case string(idArg) == ">":
			if !group {
				c.Error("ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option.")
				return
			}
			keys[j].isNew = true
			keys[j].gt = ds.MaxStreamID
			continue
		}
		id, ok := strictID(c, ii)
		if !ok {
			return
		}
		keys[j].gt = id
		// the largest id is how Redis marks ">": it reads as ">"
		keys[j].isNew = group && id == ds.MaxStreamID
	}
	// Serve what can be served now.
	var body []byte
	served := 0
	var props [][][]byte
	for _, k := range keys {
		save := c.Out
		c.Out = body
		ok, err := xreadOne(c, k, group, groupName, consumerName, noack, count, &props)
		body = c.Out
		c.Out = save
		if err != nil {
			c.Fail(err)
			return
		}
		if ok {
			served++
		}
	}
	if served == 0 {
		c.NoPropagate()
		c.NullArray()
		return
	}
	if c.Proto >= 3 {
		c.Map(served)
	} else {
		c.Array(served)
	}
	c.Out = append(c.Out, body...)
	if group {
		if len(props) == 0 {
			c.NoPropagate()
		}
		for _, p := range props {
			c.propagateCmd(p)
		}
	}
}

// xreadOne serves one stream of an XREAD or XREADGROUP into c.Out when
// there is something to serve (served).
func xreadOne(c *Ctx, k readKey, group bool, groupName, consumerName []byte, noack bool, count int64, props *[][][]byte) (served bool, err error) {
	key := c.Args[k.key]
	extraStores := 0
	err = streamDo(c, k.key, false, func(s *ds.Stream) (bool, error) {
		if s == nil {
			return false, nil
		}
		gt := k.gt
		history := false
		var g *ds.StreamGroup
		if group {
			g = s.Group(string(groupName))
			if g == nil {
				return false, nil
			}
			if !k.isNew {
				history = true
			} else if s.Len() > 0 && g.LastID.Less(s.Last().ID) {
				gt = g.LastID
			} else {
				return false, nil
			}
		} else if s.Len() == 0 || !gt.Less(s.Last().ID) {
			return false, nil
		}
		served = true
		startID, _ := gt.Incr()
		if c.Proto < 3 {
			c.Array(2)
		}
		c.Bulk(key)
		if !group {
			c.streamRange(s, startID, ds.MaxStreamID, false, count)
			return false, nil
		}
		now := c.NowMs()
		cons := g.Consumer(string(consumerName))
		created := cons == nil
		if created {
			cons, _ = g.CreateConsumer(string(consumerName), now)
		}
		cons.SeenTime = now
		createCons := [][]byte{argXGroup, argCreateCons, key, groupName, consumerName}
		if history {
			if ids := xreadHistory(c, s, cons, startID, count); len(ids) > 0 {
				// each found once more: an XCLAIM without RETRYCOUNT or
				// JUSTID counts one more delivery, at TIME
				*props = append(*props, xclaimCmd(key, groupName, consumerName, ids, now, -1, false, false, g, false))
			} else {
				// the consumer created or seen: on a slave, CREATECONSUMER
				// of one that exists marks it seen (cmdXGroup)
				*props = append(*props, createCons)
			}
			return true, nil
		}
		var es []*ds.StreamEntry
		s.Range(startID, ds.MaxStreamID, false, func(e *ds.StreamEntry) bool {
			es = append(es, e)
			return count == 0 || int64(len(es)) < count
		})
		c.Array(len(es))
		ids := make([][]byte, 0, len(es))
		for _, e := range es {
			if g.LastID.Less(e.ID) {
				if g.EntriesRead != ds.InvalidEntriesRead && !s.RangeHasTombstones(e.ID, nil) {
					g.EntriesRead++
				} else if s.EntriesAdded != 0 {
					g.EntriesRead = s.EstimateDistance(e.ID)
				}
				g.LastID = e.ID
			}
			c.streamEntry(e)
			if !noack {
				g.AddNACK(e.ID, cons, now)
				cons.ActiveTime = now
				ids = append(ids, []byte(e.ID.String()))
			}
		}
		switch {
		case noack && created:
			// two commands for this one write: the master's record
			// takes one more write, as the slave's does
			*props = append(*props, createCons, setIDProp(key, groupName, g))
			extraStores++
		case noack:
			*props = append(*props, setIDProp(key, groupName, g))
		default:
			// the deliveries: pending, delivered once, now (the XCLAIM
			// creates the consumer), and the group's last id and read
			// counter
			*props = append(*props, xclaimCmd(key, groupName, consumerName, ids, now, 1, true, true, g, true))
		}
		return true, nil
	})
	for ; err == nil && extraStores > 0; extraStores-- {
		_, err = c.UpdateKey(c.Key(k.key), func(cur engines.Entry, exists bool) (engines.Entry, engines.Action, error) {
			return cur, engines.Store, nil
		})
	}
	return served, err
}

// xreadHistory is Redis's streamReplyWithRangeFromConsumerPEL: the
// consumer's pending entries from start (an entry no longer in the
// stream as [id, null]); each one found is delivered once more, and its
// id returned.
func xreadHistory(c *Ctx, s *ds.Stream, cons *ds.StreamConsumer, start ds.StreamID, count int64) [][]byte {
	var ns []*ds.StreamNACK
	cons.PEL.AscendGreaterOrEqual(&ds.StreamNACK{ID: start}, func(n *ds.StreamNACK) bool {
		if count != 0 && int64(len(ns)) >= count {
			return false
		}
		ns = append(ns, n)
		return true
	})
	now := c.NowMs()
	c.Array(len(ns))
	var ids [][]byte
	for _, n := range ns {
		if !c.streamOneEntry(s, n.ID) {
			c.Array(2)
			c.streamID(n.ID)
			c.NullArray()
			continue
		}
		n.DeliveryTime = now
		n.DeliveryCount++
		cons.ActiveTime = now
		ids = append(ids, []byte(n.ID.String()))
	}
	return ids
}

// xclaimCmd is the one XCLAIM a slave replays for a write that delivered,
// claimed or dropped pending entries of one key (Redis propagates an
// XCLAIM per entry; one command per write keeps the slave's record
// version the master's): XCLAIM key group consumer 0 ids... TIME t
// [RETRYCOUNT n] [FORCE] [JUSTID] LASTID id [ENTRIESREAD n]. The slave
// applies it to the same state, so each id meets the same fate as on the
// master; ENTRIESREAD, the group's read counter, is taken from the
// master only (a client's XCLAIM does not know it).
func xclaimCmd(key, groupName, consumer []byte, ids [][]byte, t, retry int64, force, justID bool, g *ds.StreamGroup, entriesRead bool) [][]byte {
	cmd := make([][]byte, 0, len(ids)+16)
	cmd = append(cmd, argXClaim, key, groupName, consumer, argZero)
	cmd = append(cmd, ids...)
	cmd = append(cmd, argTime, Int64Bytes(t))
	if retry >= 0 {
		cmd = append(cmd, argRetryCount, Int64Bytes(retry))
	}
	if force {
		cmd = append(cmd, argForce)
	}
	if justID {
		cmd = append(cmd, argJustID)
	}
	cmd = append(cmd, argLastID, []byte(g.LastID.String()))
	if entriesRead {
		cmd = append(cmd, argEntriesRead, Int64Bytes(g.EntriesRead))
	}
	return cmd
}

// setIDProp is the XGROUP SETID a slave replays for g's last id and read
// counter.
func setIDProp(key, groupName []byte, g *ds.StreamGroup) [][]byte {
	return [][]byte{argXGroup, argSetID, key, groupName, []byte(g.LastID.String()), argEntriesRead, Int64Bytes(g.EntriesRead)}
}

// ---- XGROUP ----

var xgroupHelp = []string{
	"XGROUP <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"CREATE <key> <groupname> <id|$> [option]",
	"    Create a new consumer group. Options are:",
	"    * MKSTREAM",
	"      Create the empty stream if it does not exist.",
	"    * ENTRIESREAD entries_read",
	"      Set the group's entries_read counter (internal use).",
	"CREATECONSUMER <key> <groupname> <consumer>",
	"    Create a new consumer in the specified group.",
	"DELCONSUMER <key> <groupname> <consumer>",
	"    Remove the specified consumer.",
	"DESTROY <key> <groupname>",
	"    Remove the specified group.",
	"SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
	"    Set the current group ID and entries_read counter.",
	"HELP",
	"    Prints this help.",
}

var xinfoHelp = []string{
	"XINFO <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"CONSUMERS <key> <groupname>",
	"    Show consumers of <groupname>.",
	"GROUPS <key>",
	"    Show the stream consumer groups.",
	"STREAM <key> [FULL [COUNT <count>]",
	"    Show information about the stream.",
	"HELP",
	"    Prints this help.",
}

// subcommand checks a container command's subcommand (Redis's
// processCommand): known names with their arity; HELP answered. It
// returns the lower-case name, or "" with the reply written.
func subcommand(c *Ctx, container string, arities map[string]int, help []string) string {
	sub := string(bytes.ToLower(c.Args[1]))
	ar, ok := arities[sub]
	if !ok {
		c.Error("ERR unknown subcommand '" + errorFormat(errs.Quoted(c.Args[1], 128)) + "'. Try " + container + " HELP.")
		return ""
	}
	if n := len(c.Args); (ar >= 0 && n != ar) || (ar < 0 && n < -ar) {
		c.Error("ERR wrong number of arguments for '" + string(bytes.ToLower([]byte(container))) + "|" + sub + "' command")
		return ""
	}
	if sub == "help" {
		replyHelp(c, help)
		return ""
	}
	return sub
}

// subSyntaxErr is Redis's addReplySubcommandSyntaxError.
func subSyntaxErr(c *Ctx) ReplyError {
	return ReplyError("ERR unknown subcommand or wrong number of arguments for '" + errs.Quoted(c.Args[1], 128) + "'. Try " +
		string(bytes.ToUpper(c.Args[0])) + " HELP.")
}

func cmdXGroup(c *Ctx) {
	sub := subcommand(c, "XGROUP", map[string]int{"create": -5, "setid": -5, "destroy": 4, "createconsumer": 5, "delconsumer": 5, "help": 2}, xgroupHelp)
	if sub == "" {
		c.NoPropagate()
		return
	}
	mkstream := false
	entriesRead := int64(ds.InvalidEntriesRead)
	if sub == "create" || sub == "setid" {
		for i := 5; i < len(c.Args); {
			switch {
			case sub == "create" && eqFold(c.Args[i], "mkstream"):
				mkstream = true
				i++
			case eqFold(c.Args[i], "entriesread") && i+1 < len(c.Args):
				n, ok := c.IntArg(i + 1)
				if !ok {
					return
				}
				if n < 0 && n != ds.InvalidEntriesRead {
					c.Error(errTextEntriesRead)
					return
				}
				entriesRead = n
				i += 2
			default:
				c.Fail(subSyntaxErr(c))
				return
			}
		}
	}
	key, groupName := c.Args[2], string(c.Args[3])
	var reply func()
	changed := false
	err := streamDo(c, 2, mkstream && sub == "create", func(s *ds.Stream) (bool, error) {
		if s == nil {
			return false, ReplyError(errTextXGroupNoKey)
		}
		g := s.Group(groupName)
		if g == nil && (sub == "setid" || sub == "createconsumer" || sub == "delconsumer") {
			return false, ReplyError("NOGROUP No such consumer group '" + cString(c.Args[3]) + "' for key name '" + cString(key) + "'")
		}
		switch sub {
		case "create":
			id, err := groupID(s, c.Args[4], true)
			if err != nil {
				return false, err
			}
			if _, ok := s.CreateGroup(groupName, id, entriesRead); !ok {
				return false, ReplyError(errTextBusyGroup)
			}
			reply, changed = c.OK, true
		case "setid":
			if n := len(c.Args); n != 5 && n != 7 {
				return false, subSyntaxErr(c)
			}
			id, err := groupID(s, c.Args[4], false)
			if err != nil {
				return false, err
			}
			g.LastID, g.EntriesRead = id, entriesRead
			reply, changed = c.OK, true
		case "destroy":
			changed = s.DeleteGroup(groupName)
			reply = func() { c.Int(boolInt(changed)) }
		case "createconsumer":
			cons, created := g.CreateConsumer(string(c.Args[4]), c.NowMs())
			reply = func() { c.Int(boolInt(created)) }
			changed = created
			if !created && c.Replica {
				// the master's read of a consumer's empty history: seen
				cons.SeenTime, changed = c.NowMs(), true
			}
		case "delconsumer":
			n, ok := g.DeleteConsumer(string(c.Args[4]))
			changed = ok
			reply = func() { c.Int(int64(n)) }
		}
		return changed, nil
	})
	if writeDone(c, changed, err) {
		reply()
	}
}

// ---- XACK, XPENDING ----

func cmdXAck(c *Ctx) {
	n := 0
	err := streamDo(c, 1, false, func(s *ds.Stream) (bool, error) {
		if s == nil {
			return false, nil
		}
		g := s.Group(string(c.Args[2]))
		if g == nil {
			return false, nil
		}
		ids, err := strictIDs(c.Args[3:])
		if err != nil {
			return false, err
		}
		for _, id := range ids {
			if nk := g.NACK(id); nk != nil {
				g.DeleteNACK(nk)
				n++
			}
		}
		return n > 0, nil
	})
	replyCount(c, n, err)
}

// groupID is XGROUP CREATE's and SETID's id: "$" is the stream's last
// id; CREATE's must be strict, SETID's may be "-" or "+".
func groupID(s *ds.Stream, arg []byte, strict bool) (ds.StreamID, error) {
	if string(arg) == "$" {
		return s.LastID, nil
	}
	id, _, ok := parseStreamID(arg, strict, 0, false)
	if !ok {
		return id, ReplyError(errTextStreamID)
	}
	return id, nil
}

// groupDo is streamDo on the key at args[1] with its group args[2]: a
// missing key or group is NOGROUP.
func groupDo(c *Ctx, fn func(s *ds.Stream, g *ds.StreamGroup) (bool, error)) error {
	return streamDo(c, 1, false, func(s *ds.Stream) (bool, error) {
		var g *ds.StreamGroup
		if s != nil {
			g = s.Group(string(c.Args[2]))
		}
		if g == nil {
			return false, noGroupErr(c)
		}
		return fn(s, g)
	})
}

func noGroupErr(c *Ctx) error {
	return ReplyError("NOGROUP No such key '" + cString(c.Args[1]) + "' or consumer group '" + cString(c.Args[2]) + "'")
}

func cmdXPending(c *Ctx) {
	n := len(c.Args)
	if n != 3 && (n < 6 || n > 9) {
		c.SyntaxErr()
		return
	}
	var start, end ds.StreamID
	var count, minIdle int64
	var consumer []byte
	if n >= 6 {
		si := 3
		if eqFold(c.Args[3], "idle") {
			var ok bool
			if minIdle, ok = c.IntArg(4); !ok {
				return
			}
			if n < 8 {
				c.SyntaxErr()
				return
			}
			si += 2
		}
		var ok bool
		if count, ok = c.IntArg(si + 2); !ok {
			return
		}
		count = max(count, 0)
		if start, ok = rangeStart(c, si); !ok {
			return
		}
		if end, ok = rangeEnd(c, si+1); !ok {
			return
		}
		if si+3 < n {
			consumer = c.Args[si+3]
		}
	}
	from := len(c.Out)
	err := groupDo(c, func(s *ds.Stream, g *ds.StreamGroup) (bool, error) {
		if n == 3 {
			c.Array(4)
			c.Int(int64(g.PEL.Len()))
			if g.PEL.Len() == 0 {
				c.Null()
				c.Null()
				c.NullArray()
				return false, nil
			}
			lo, _ := g.PEL.Min()
			hi, _ := g.PEL.Max()
			c.streamID(lo.ID)
			c.streamID(hi.ID)
			var cs []*ds.StreamConsumer
			for _, x := range g.Consumers() {
				if x.PEL.Len() > 0 {
					cs = append(cs, x)
				}
			}
			c.Array(len(cs))
			for _, x := range cs {
				c.Array(2)
				c.BulkString(x.Name)
				c.BulkString(strconv.Itoa(x.PEL.Len()))
			}
			return false, nil
		}
		pel := g.PEL
		if consumer != nil {
			x := g.Consumer(string(consumer))
			if x == nil {
				c.Array(0)
				return false, nil
			}
			pel = x.PEL
		}
		now := c.NowMs()
		var ns []*ds.StreamNACK
		pel.AscendGreaterOrEqual(&ds.StreamNACK{ID: start}, func(x *ds.StreamNACK) bool {
			if count == 0 || end.Less(x.ID) {
				return false
			}
			if minIdle != 0 && now-x.DeliveryTime < minIdle {
				return true
			}
			ns = append(ns, x)
			count--
			return true
		})
		c.Array(len(ns))
		for _, x := range ns {
			c.Array(4)
			c.streamID(x.ID)
			c.BulkString(x.Consumer.Name)
			c.Int(max(now-x.DeliveryTime, 0))
			c.Int(int64(x.DeliveryCount))
		}
		return false, nil
	})
	if err != nil {
		streamFail(c, from, err)
	}
}

// ---- XCLAIM, XAUTOCLAIM ----

func cmdXClaim(c *Ctx) {
	from := len(c.Out)
	var props [][][]byte
	err := groupDo(c, func(s *ds.Stream, g *ds.StreamGroup) (bool, error) {
		minIdle, ok := ParseInt(c.Args[4])
		if !ok {
			return false, ReplyError("ERR Invalid min-idle-time argument for XCLAIM")
		}
		minIdle = max(minIdle, 0)
		j := 5
		for ; j < len(c.Args); j++ {
			if _, _, ok := parseStreamID(c.Args[j], true, 0, false); !ok {
				break
			}
		}
		lastIDArg := j - 1
		now := c.NowMs()
		var lastID ds.StreamID
		retry, delivery := int64(-1), int64(-1)
		entriesRead := int64(math.MinInt64)
		force, justID := false, false
		// next takes an option's integer value, the next argument, or
		// answers errText.
		next := func(errText string) (int64, error) {
			j++
			if v, ok := ParseInt(c.Args[j]); ok {
				return v, nil
			}
			return 0, ReplyError(errText)
		}
		var err error
		for ; j < len(c.Args); j++ {
			more := len(c.Args) - 1 - j
			opt := c.Args[j]
			switch {
			case eqFold(opt, "force"):
				force = true
			case eqFold(opt, "justid"):
				justID = true
			case eqFold(opt, "idle") && more > 0:
				v, err := next("ERR Invalid IDLE option argument for XCLAIM")
				if err != nil {
					return false, err
				}
				delivery = now - v
			case eqFold(opt, "time") && more > 0:
				if delivery, err = next("ERR Invalid TIME option argument for XCLAIM"); err != nil {
					return false, err
				}
			case eqFold(opt, "retrycount") && more > 0:
				if retry, err = next("ERR Invalid RETRYCOUNT option argument for XCLAIM"); err != nil {
					return false, err
				}
			case c.Replica && eqFold(opt, "entriesread") && more > 0:
				// the master's group read counter (xclaimCmd)
				if entriesRead, err = next(ErrTextNotInt); err != nil {
					return false, err
				}
			case eqFold(opt, "lastid") && more > 0:
				j++
				id, _, ok := parseStreamID(c.Args[j], true, 0, false)
				if !ok {
					return false, ReplyError(errTextStreamID)
				}
				lastID = id
			default:
				return false, ReplyError("ERR Unrecognized XCLAIM option '" + errorFormat(cString(opt)) + "'")
			}
		}
		changed := false
		propLast := false
		if g.LastID.Less(lastID) {
			g.LastID = lastID
			propLast, changed = true, true
		}
		switch {
		case delivery == -1:
			delivery = now
		case (delivery < 0 || delivery > now) && !c.Replica:
			// the master's TIME is taken as it is on a slave
			delivery = now
		}
		name := string(c.Args[3])
		var cons *ds.StreamConsumer
		var replies []func()
		var ids [][]byte // what changed, for the slaves
		for j := 5; j <= lastIDArg; j++ {
			id, _, _ := parseStreamID(c.Args[j], true, 0, false)
			nk := g.NACK(id)
			if s.Get(id) == nil {
				if nk != nil {
					ids = append(ids, c.Args[j])
					g.DeleteNACK(nk)
					changed = true
				}
				continue
			}
			created := false
			if force && nk == nil {
				nk = &ds.StreamNACK{ID: id, DeliveryTime: now, DeliveryCount: 1}
				created = true
			}
			if nk == nil {
				continue
			}
			if !created && minIdle != 0 && now-nk.DeliveryTime < minIdle {
				continue
			}
			if cons == nil {
				cons = streamConsumer(g, name, now)
			}
			if created {
				nk.Consumer = cons
				g.PEL.ReplaceOrInsert(nk)
				cons.PEL.ReplaceOrInsert(nk)
			} else {
				g.MoveNACK(nk, cons)
			}
			nk.DeliveryTime = delivery
			switch {
			case retry >= 0:
				nk.DeliveryCount = uint64(retry)
			case !justID:
				nk.DeliveryCount++
			}
			cons.ActiveTime = now
			id2 := id
			if justID {
				replies = append(replies, func() { c.streamID(id2) })
			} else {
				replies = append(replies, func() {
					if !c.streamOneEntry(s, id2) {
						c.Null()
					}
				})
			}
			ids = append(ids, c.Args[j])
			changed = true
		}
		if entriesRead != math.MinInt64 {
			g.EntriesRead = entriesRead
			changed = true
		}
		switch {
		case len(ids) > 0:
			props = append(props, xclaimCmd(c.Args[1], c.Args[2], c.Args[3], ids, delivery, retry, force, justID, g, false))
		case propLast:
			props = append(props, setIDProp(c.Args[1], c.Args[2], g))
		}
		c.Array(len(replies))
		for _, r := range replies {
			r()
		}
		return changed || cons != nil, nil
	})
	if err != nil {
		streamFail(c, from, err)
		return
	}
	streamPropagate(c, props)
}

// streamConsumer is the consumer name of g, seen now (created when
// missing: the XCLAIM propagated for what it claims creates it on the
// slaves).
func streamConsumer(g *ds.StreamGroup, name string, now int64) *ds.StreamConsumer {
	cons, _ := g.CreateConsumer(name, now)
	cons.SeenTime = now
	return cons
}

// streamPropagate hands props to the slaves (nothing when empty).
func streamPropagate(c *Ctx, props [][][]byte) {
	if len(props) == 0 {
		c.NoPropagate()
		return
	}
	for _, p := range props {
		c.propagateCmd(p)
	}
}

func cmdXAutoClaim(c *Ctx) {
	minIdle, ok := ParseInt(c.Args[4])
	if !ok {
		c.Error("ERR Invalid min-idle-time argument for XAUTOCLAIM")
		return
	}
	minIdle = max(minIdle, 0)
	start, ok := rangeStart(c, 5)
	if !ok {
		return
	}
	count := int64(100)
	justID := false
	for j := 6; j < len(c.Args); j++ {
		more := len(c.Args) - 1 - j
		switch {
		case eqFold(c.Args[j], "count") && more > 0:
			v, ok := ParseInt(c.Args[j+1])
			if !ok || v < 1 || v > math.MaxInt64/16 {
				c.Error("ERR COUNT must be > 0")
				return
			}
			count = v
			j++
		case eqFold(c.Args[j], "justid"):
			justID = true
		default:
			c.SyntaxErr()
			return
		}
	}
	from := len(c.Out)
	var props [][][]byte
	err := groupDo(c, func(s *ds.Stream, g *ds.StreamGroup) (bool, error) {
		attempts := count * 10
		now := c.NowMs()
		name := string(c.Args[3])
		var cons *ds.StreamConsumer
		var claimed, deleted []ds.StreamID
		var examined []*ds.StreamNACK
		g.PEL.AscendGreaterOrEqual(&ds.StreamNACK{ID: start}, func(n *ds.StreamNACK) bool {
			if attempts == 0 || count == 0 {
				return false
			}
			attempts--
			examined = append(examined, n)
			if s.Get(n.ID) == nil {
				deleted = append(deleted, n.ID)
				count--
				return true
			}
			if minIdle != 0 && now-n.DeliveryTime < minIdle {
				return true
			}
			claimed = append(claimed, n.ID)
			count--
			return true
		})
		// the cursor: the first pending entry after the last examined
		next := ds.StreamID{}
		if len(examined) > 0 {
			last := examined[len(examined)-1].ID
			g.PEL.AscendGreaterOrEqual(&ds.StreamNACK{ID: last}, func(n *ds.StreamNACK) bool {
				if n.ID == last {
					return true
				}
				next = n.ID
				return false
			})
		}
		isDel := map[ds.StreamID]bool{}
		for _, id := range deleted {
			isDel[id] = true
		}
		c.Array(3)
		c.streamID(next)
		c.Array(len(claimed))
		var ids [][]byte // what changed, for the slaves
		for _, n := range examined {
			if isDel[n.ID] {
				ids = append(ids, []byte(n.ID.String()))
				g.DeleteNACK(n)
				continue
			}
			if minIdle != 0 && now-n.DeliveryTime < minIdle {
				continue
			}
			if cons == nil {
				cons = streamConsumer(g, name, now)
			}
			g.MoveNACK(n, cons)
			n.DeliveryTime = now
			if !justID {
				n.DeliveryCount++
			}
			cons.ActiveTime = now
			if justID {
				c.streamID(n.ID)
			} else {
				c.streamOneEntry(s, n.ID)
			}
			ids = append(ids, []byte(n.ID.String()))
		}
		if len(ids) > 0 {
			props = append(props, xclaimCmd(c.Args[1], c.Args[2], c.Args[3], ids, now, -1, false, justID, g, false))
		}
		c.Array(len(deleted))
		for _, id := range deleted {
			c.streamID(id)
		}
		return len(props) > 0 || cons != nil, nil
	})
	if err != nil {
		streamFail(c, from, err)
		return
	}
	streamPropagate(c, props)
}

// ---- XINFO ----

func cmdXInfo(c *Ctx) {
	sub := subcommand(c, "XINFO", map[string]int{"consumers": 4, "groups": 3, "stream": -3, "help": 2}, xinfoHelp)
	if sub == "" {
		return
	}
	from := len(c.Out)
	err := streamDo(c, 2, false, func(s *ds.Stream) (bool, error) {
		if s == nil {
			return false, ReplyError(ErrTextNoSuchKey)
		}
		now := c.NowMs()
		switch sub {
		case "consumers":
			g := s.Group(string(c.Args[3]))
			if g == nil {
				return false, ReplyError("NOGROUP No such consumer group '" + cString(c.Args[3]) + "' for key name '" + cString(c.Args[2]) + "'")
			}
			cs := g.Consumers()
			c.Array(len(cs))
			for _, x := range cs {
				c.Map(3)
				c.BulkString("name")
				c.BulkString(x.Name)
				c.BulkString("pending")
				c.Int(int64(x.PEL.Len()))
				c.BulkString("idle")
				c.Int(max(now-x.SeenTime, 0))
			}
		case "groups":
			gs := s.Groups()
			c.Array(len(gs))
			for _, g := range gs {
				c.Map(6)
				c.BulkString("name")
				c.BulkString(g.Name)
				c.BulkString("consumers")
				c.Int(int64(len(g.Consumers())))
				c.BulkString("pending")
				c.Int(int64(g.PEL.Len()))
				c.groupPosition(s, g)
			}
		case "stream":
			return false, xinfoStream(c, s)
		}
		return false, nil
	})
	if err != nil {
		streamFail(c, from, err)
	}
}

// groupPosition writes the fields of where group g is in s, as XINFO
// GROUPS and XINFO STREAM FULL list them: last-delivered-id,
// entries-read and lag (the two null when unknown).
func (c *Ctx) groupPosition(s *ds.Stream, g *ds.StreamGroup) {
	c.BulkString("last-delivered-id")
	c.streamID(g.LastID)
	c.BulkString("entries-read")
	if g.EntriesRead != ds.InvalidEntriesRead {
		c.Int(g.EntriesRead)
	} else {
		c.Null()
	}
	c.BulkString("lag")
	if n, ok := s.Lag(g); ok {
		c.Int(n)
	} else {
		c.Null()
	}
}

// fullPEL writes XINFO STREAM FULL's pel-count and pending (its first
// count entries) of a group's or a consumer's pending list; a group's
// entries name their consumer.
func (c *Ctx) fullPEL(pel *btree.BTreeG[*ds.StreamNACK], count int64, ofGroup bool) {
	c.BulkString("pel-count")
	c.Int(int64(pel.Len()))
	c.BulkString("pending")
	ns := firstNACKs(pel, count)
	c.Array(len(ns))
	for _, n := range ns {
		if ofGroup {
			c.Array(4)
			c.streamID(n.ID)
			c.BulkString(n.Consumer.Name)
		} else {
			c.Array(3)
			c.streamID(n.ID)
		}
		c.Int(n.DeliveryTime)
		c.Int(int64(n.DeliveryCount))
	}
}

func xinfoStream(c *Ctx, s *ds.Stream) error {
	opts := c.Args[3:]
	full := len(opts) > 0
	count := int64(10)
	if full {
		if (len(opts) != 1 && len(opts) != 3) || !eqFold(opts[0], "full") || (len(opts) == 3 && !eqFold(opts[1], "count")) {
			return subSyntaxErr(c)
		}
		if len(opts) == 3 {
			n, ok := ParseInt(opts[2])
			if !ok {
				return ReplyError(ErrTextNotInt)
			}
			if n < 0 {
				n = 10
			}
			count = n
		}
	}
	if full {
		c.Map(9)
	} else {
		c.Map(10)
	}
	c.BulkString("length")
	c.Int(int64(s.Len()))
	c.BulkString("radix-tree-keys")
	c.Int(int64(s.Nodes()))
	c.BulkString("radix-tree-nodes")
	c.Int(int64(s.RaxNodes()))
	c.BulkString("last-generated-id")
	c.streamID(s.LastID)
	c.BulkString("max-deleted-entry-id")
	c.streamID(s.MaxDeletedID)
	c.BulkString("entries-added")
	c.Int(s.EntriesAdded)
	c.BulkString("recorded-first-entry-id")
	c.streamID(s.FirstID)
	if !full {
		c.BulkString("groups")
		c.Int(int64(s.NumGroups()))
		c.BulkString("first-entry")
		if e := s.First(); e != nil {
			c.streamEntry(e)
		} else {
			c.Null()
		}
		c.BulkString("last-entry")
		if e := s.Last(); e != nil {
			c.streamEntry(e)
		} else {
			c.Null()
		}
		return nil
	}
	c.BulkString("entries")
	c.streamRange(s, ds.StreamID{}, ds.MaxStreamID, false, count)
	c.BulkString("groups")
	gs := s.Groups()
	c.Array(len(gs))
	for _, g := range gs {
		c.Map(7)
		c.BulkString("name")
		c.BulkString(g.Name)
		c.groupPosition(s, g)
		c.fullPEL(g.PEL, count, true)
		c.BulkString("consumers")
		cs := g.Consumers()
		c.Array(len(cs))
		for _, x := range cs {
			c.Map(4)
			c.BulkString("name")
			c.BulkString(x.Name)
			c.BulkString("seen-time")
			c.Int(x.SeenTime)
			c.fullPEL(x.PEL, count, false)
		}
	}
	return nil
}

// firstNACKs is the first count entries of a pending list in id order
// (all of them when count is 0), as XINFO STREAM FULL lists them for a
// group and for each of its consumers.
func firstNACKs(pel *btree.BTreeG[*ds.StreamNACK], count int64) []*ds.StreamNACK {
	var ns []*ds.StreamNACK
	pel.Ascend(func(n *ds.StreamNACK) bool {
		if count != 0 && int64(len(ns)) >= count {
			return false
		}
		ns = append(ns, n)
		return true
	})
	return ns
}

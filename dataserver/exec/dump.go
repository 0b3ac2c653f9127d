package exec

// DUMP and RESTORE in Redis's serialization format (internal/rdbcodec):
// a value DUMPed by Redis 7.0 RESTOREs here, and one DUMPed here
// RESTOREs into Redis 7.0. Strings, lists, sets, sorted sets and hashes
// (objects, or a prefix-stored hash on persistent engines) are served;
// Streams too (their entries, ids, counters, groups, pending entries and
// consumers; RESTORE keeps the payload's node layout, DUMP packs the
// entries as XADDs would, without tombstones). Tair's
// own types (TairHash, items) have no Redis serialization and DUMP
// refuses them, as RESTORE refuses modules and functions (ERR Bad data
// format).
//
// RESTORE is replicated as itself (the payload decodes the same way
// everywhere), with a relative TTL made absolute (ABSTTL appended), as
// Redis rewrites it for its replicas.

import (
	"errors"
	"slices"

	"github.com/tairkv/tair/engines"
	"github.com/tairkv/tair/engines/ds"
	"github.com/tairkv/tair/internal/errs"
	"github.com/tairkv/tair/internal/rdbcodec"
)

func init() {
	Register("dump", cmdDump)
	Register("restore", cmdRestore)
}

const (
	errTextBusyKey     = "BUSYKEY Target key name already exists."
	errTextRestoreTTL  = "ERR Invalid TTL value, must be >= 0"
	errTextIdleTime    = "ERR Invalid IDLETIME value, must be >= 0"
	errTextFreq        = "ERR Invalid FREQ value, must be >= 0 and <= 255"
	errTextDumpPayload = "ERR DUMP payload version or checksum are wrong"
	errTextBadData     = "ERR Bad data format"
	errTextDumpType    = "ERR DUMP is not supported for this type of value"
)

var argABSTTL = []byte("ABSTTL")

// restoreInflateLimit bounds what LZF decompression of one payload may
// allocate (Redis's proto-max-bulk-len).
const restoreInflateLimit = 512 << 20

// DUMP key: the value's serialization, or a null for a missing key.
func cmdDump(c *Ctx) {
	src, ok, err := c.snapshot(1)
	if !readDone(c, ok, err) {
		return
	}
	v, ok := rdbValue(src)
	if !ok {
		c.Error(errTextDumpType)
		return
	}
	c.Bulk(rdbcodec.Encode(v))
}

// rdbValue is a snapshot as an rdbcodec value (ok false: a type Redis
// does not have).
func rdbValue(src snapshot) (rdbcodec.Value, bool) {
	if src.kvs != nil {
		v := rdbcodec.Value{Kind: rdbcodec.Hash, Elems: make([][]byte, 0, 2*len(src.kvs))}
		for _, kv := range src.kvs {
			v.Elems = append(v.Elems, kv.Key, kv.Entry.Value)
		}
		return v, true
	}
	e := src.e
	if e.Object == nil {
		if e.Type != engines.TypeString || IsLockRecord(e) {
			return rdbcodec.Value{}, false
		}
		return rdbcodec.Value{Kind: rdbcodec.String, Str: e.Value}, true
	}
	switch o := e.Object.(type) {
	case *ds.List:
		v := rdbcodec.Value{Kind: rdbcodec.List, Elems: make([][]byte, 0, o.Len())}
		for _, s := range o.Elements() {
			v.Elems = append(v.Elems, []byte(s))
		}
		return v, true
	case *ds.Set:
		v := rdbcodec.Value{Kind: rdbcodec.Set, Elems: make([][]byte, 0, o.Len())}
		o.Range(func(m string) bool { v.Elems = append(v.Elems, []byte(m)); return true })
		return v, true
	case *ds.ZSet:
		v := rdbcodec.Value{Kind: rdbcodec.ZSet, Elems: make([][]byte, 0, o.Len()), Scores: make([]float64, 0, o.Len())}
		o.Range(func(m string, score float64) bool {
			v.Elems = append(v.Elems, []byte(m))
			v.Scores = append(v.Scores, score)
			return true
		})
		return v, true
	case *ds.Hash:
		v := rdbcodec.Value{Kind: rdbcodec.Hash, Elems: make([][]byte, 0, 2*o.Len())}
		o.Range(func(f, val string) bool { v.Elems = append(v.Elems, []byte(f), []byte(val)); return true })
		return v, true
	case *ds.Stream:
		return rdbcodec.Value{Kind: rdbcodec.Stream, Stream: streamValue(o)}, true
	}
	return rdbcodec.Value{}, false
}

// RESTORE key ttl payload [REPLACE] [ABSTTL] [IDLETIME s] [FREQ f], with
// Redis's order of checks: options, BUSYKEY, TTL, payload. The key is a
// new one, its access frequency and time a new key's but as IDLETIME and
// FREQ set them (Redis sets the one its maxmemory-policy tracks; both are
// tracked here).
func cmdRestore(c *Ctx) {
	replace, absttl, idle, freq := false, false, false, false
	idleSeconds, freqValue := int64(-1), int64(-1)
	for j := 4; j < len(c.Args); j++ {
		a, more := c.Args[j], j+1 < len(c.Args)
		switch {
		case eqFold(a, "replace"):
			replace = true
		case eqFold(a, "absttl"):
			absttl = true
		case eqFold(a, "idletime") && more && !freq:
			v, ok := c.IntArg(j + 1)
			if !ok {
				return
			}
			if v < 0 {
				c.Error(errTextIdleTime)
				return
			}
			idle, idleSeconds = true, v
			j++
		case eqFold(a, "freq") && more && !idle:
			v, ok := c.IntArg(j + 1)
			if !ok {
				return
			}
			if v < 0 || v > 255 {
				c.Error(errTextFreq)
				return
			}
			freq, freqValue = true, v
			j++
		default:
			c.SyntaxErr()
			return
		}
	}
	if !replace {
		_, exists, _, err := c.lookupAny(1)
		if err != nil {
			c.Fail(err)
			return
		}
		if exists {
			c.Error(errTextBusyKey)
			return
		}
	}
	ttl, ok := c.IntArg(2)
	if !ok {
		return
	}
	if ttl < 0 {
		c.Error(errTextRestoreTTL)
		return
	}
	v, err := rdbcodec.Decode(c.Args[3], rdbcodec.Limits{MaxString: c.MaxValueSize(), MaxInflate: restoreInflateLimit})
	switch {
	case errors.Is(err, rdbcodec.ErrChecksum):
		c.Error(errTextDumpPayload)
		return
	case errors.Is(err, rdbcodec.ErrTooLarge):
		c.Err(errs.ErrValueTooLong)
		return
	case err != nil:
		c.Error(errTextBadData)
		return
	}
	at := ttl
	if ttl != 0 && !absttl {
		at = ttl + c.NowMs() // wraps negative on overflow, as in C: expired
	}
	if ttl != 0 && at <= c.NowMs() && !c.Replica {
		restoreExpired(c, replace)
		return
	}
	written, err := c.writeSnapshot(restoreSnapshot(c, v, at), c.Key(1), replace)
	if err != nil {
		c.Fail(err)
		return
	}
	if !written {
		c.NoPropagate()
		c.Error(errTextBusyKey)
		return
	}
	if a := engines.AccessOf(c.Eng); a != nil {
		a.SetAccess(c.Key(1), int(freqValue), idleSeconds)
	}
	if ttl != 0 && !absttl {
		cmd := slices.Clone(c.Args)
		cmd[2] = Int64Bytes(at)
		c.propagateCmd(append(cmd, argABSTTL))
	}
	c.OK()
}

// restoreExpired is RESTORE of a value already expired: nothing is
// created, and with REPLACE the old key goes (propagated as a DEL).
func restoreExpired(c *Ctx, replace bool) {
	deleted := false
	if replace {
		_, exists, pkey, err := c.lookupAny(1)
		if err == nil && exists {
			if pkey {
				_, err = c.Eng.PrefixRemoveAll(c.Key(1))
			} else {
				err = c.Eng.Remove(c.Key(1), 0)
			}
			deleted = err == nil
		}
		if err != nil && !errors.Is(err, errs.ErrNotFound) {
			c.Fail(err)
			return
		}
	}
	if deleted {
		c.Propagate(argDel, c.Args[1])
	} else {
		c.NoPropagate()
	}
	c.OK()
}

// restoreSnapshot is the decoded value as the record (or the fields of a
// prefix-stored hash, on persistent engines) RESTORE writes.
func restoreSnapshot(c *Ctx, v rdbcodec.Value, at int64) snapshot {
	e := engines.Entry{ExpireAt: at}
	switch v.Kind {
	case rdbcodec.String:
		e.Type, e.Value = engines.TypeString, slices.Clone(v.Str)
	case rdbcodec.List:
		l := ds.NewList()
		for _, s := range v.Elems {
			l.PushBack(string(s))
		}
		e.Type, e.Object = engines.TypeList, l
	case rdbcodec.Set:
		s := ds.NewSet()
		for _, m := range v.Elems {
			s.Add(string(m))
		}
		e.Type, e.Object = engines.TypeSet, s
	case rdbcodec.ZSet:
		// Redis loads it whole, then converts it to a listpack when
		// small enough.
		z := ds.NewZSet()
		for i, m := range v.Elems {
			z.SetSigned(string(m), v.Scores[i])
		}
		z.SettleListpackScores()
		e.Type, e.Object = engines.TypeZSet, z
	case rdbcodec.Stream:
		e.Type, e.Object = engines.TypeStream, restoreStream(v.Stream)
	case rdbcodec.Hash:
		if c.Eng.Persistent() {
			kvs := make([]engines.KV, 0, len(v.Elems)/2)
			for i := 0; i+1 < len(v.Elems); i += 2 {
				kvs = append(kvs, engines.KV{Key: slices.Clone(v.Elems[i]), Entry: engines.Entry{
					Type: engines.TypeString, Value: slices.Clone(v.Elems[i+1]), ExpireAt: at, Version: 1}})
			}
			slices.SortFunc(kvs, func(a, b engines.KV) int { return bytesCompare(a.Key, b.Key) })
			return snapshot{kvs: kvs}
		}
		h := ds.NewHash()
		for i := 0; i+1 < len(v.Elems); i += 2 {
			h.Set(string(v.Elems[i]), string(v.Elems[i+1]))
		}
		e.Type, e.Object = engines.TypeHash, h
	}
	return snapshot{e: e}
}

func bytesCompare(a, b []byte) int {
	switch {
	case string(a) < string(b):
		return -1
	case string(a) > string(b):
		return 1
	}
	return 0
}

// streamValue is s as rdbcodec serializes it.
func streamValue(s *ds.Stream) *rdbcodec.StreamValue {
	id := func(x ds.StreamID) rdbcodec.StreamID { return rdbcodec.StreamID{Ms: x.Ms, Seq: x.Seq} }
	v := &rdbcodec.StreamValue{LastID: id(s.LastID), FirstID: id(s.FirstID), MaxDeletedID: id(s.MaxDeletedID),
		EntriesAdded: uint64(s.EntriesAdded)}
	s.Range(ds.StreamID{}, ds.MaxStreamID, false, func(e *ds.StreamEntry) bool {
		en := rdbcodec.StreamEntry{ID: id(e.ID), Fields: make([][]byte, len(e.Fields))}
		for i, f := range e.Fields {
			en.Fields[i] = []byte(f)
		}
		v.Entries = append(v.Entries, en)
		return true
	})
	for _, g := range s.Groups() {
		gv := rdbcodec.StreamGroup{Name: []byte(g.Name), LastID: id(g.LastID), EntriesRead: g.EntriesRead}
		g.PEL.Ascend(func(n *ds.StreamNACK) bool {
			gv.PEL = append(gv.PEL, rdbcodec.StreamNACK{ID: id(n.ID), DeliveryTime: n.DeliveryTime,
				DeliveryCount: n.DeliveryCount, Consumer: []byte(n.Consumer.Name)})
			return true
		})
		for _, c := range g.Consumers() {
			gv.Consumers = append(gv.Consumers, rdbcodec.StreamConsumer{Name: []byte(c.Name), SeenTime: c.SeenTime, ActiveTime: c.ActiveTime})
		}
		v.Groups = append(v.Groups, gv)
	}
	return v
}

// restoreStream is the stream a RESTORE payload holds.
func restoreStream(v *rdbcodec.StreamValue) *ds.Stream {
	id := func(x rdbcodec.StreamID) ds.StreamID { return ds.StreamID{Ms: x.Ms, Seq: x.Seq} }
	s := ds.NewStream()
	for _, e := range v.Entries {
		fields := make([]string, len(e.Fields))
		for i, f := range e.Fields {
			fields[i] = string(f)
		}
		s.Append(id(e.ID), fields)
	}
	layout := make([]ds.StreamNodeLayout, 0, len(v.Nodes))
	for _, n := range v.Nodes {
		l := ds.StreamNodeLayout{Master: id(n.Master), Last: id(n.Last), Live: n.Live, Deleted: n.Deleted, Bytes: n.Bytes}
		for _, f := range n.Fields {
			l.Fields = append(l.Fields, string(f))
		}
		layout = append(layout, l)
	}
	s.SetLayout(layout) // the payload's nodes, tombstones counted (else as XADDs pack)
	s.LastID, s.FirstID, s.MaxDeletedID = id(v.LastID), id(v.FirstID), id(v.MaxDeletedID)
	s.EntriesAdded = int64(v.EntriesAdded)
	for _, gv := range v.Groups {
		g, _ := s.CreateGroup(string(gv.Name), id(gv.LastID), gv.EntriesRead)
		for _, cv := range gv.Consumers {
			c, _ := g.CreateConsumer(string(cv.Name), cv.SeenTime)
			c.ActiveTime = cv.ActiveTime
		}
		for _, n := range gv.PEL {
			c, _ := g.CreateConsumer(string(n.Consumer), 0)
			g.AddNACK(id(n.ID), c, n.DeliveryTime).DeliveryCount = n.DeliveryCount
		}
	}
	return s
}

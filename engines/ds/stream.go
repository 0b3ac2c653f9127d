package ds

import (
	"encoding/binary"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"

	"github.com/google/btree"

	"github.com/tairkv/tair/engines"
	"github.com/tairkv/tair/internal/errs"
	"github.com/tairkv/tair/internal/redisnum"
)

// StreamID is a stream entry's id, <ms>-<seq>.
type StreamID struct{ Ms, Seq uint64 }

// MaxStreamID is the largest id (Redis's "+").
var MaxStreamID = StreamID{math.MaxUint64, math.MaxUint64}

// Cmp compares a and b (-1, 0, 1).
func (a StreamID) Cmp(b StreamID) int {
	switch {
	case a.Ms < b.Ms:
		return -1
	case a.Ms > b.Ms:
		return 1
	case a.Seq < b.Seq:
		return -1
	case a.Seq > b.Seq:
		return 1
	}
	return 0
}

// Less reports a < b.
func (a StreamID) Less(b StreamID) bool { return a.Cmp(b) < 0 }

// IsZero reports a == 0-0.
func (a StreamID) IsZero() bool { return a.Ms == 0 && a.Seq == 0 }

// String is the id as Redis prints it.
func (a StreamID) String() string {
	return string(a.Append(nil))
}

// Append appends the id as Redis prints it.
func (a StreamID) Append(b []byte) []byte {
	b = strconv.AppendUint(b, a.Ms, 10)
	b = append(b, '-')
	return strconv.AppendUint(b, a.Seq, 10)
}

// Incr is Redis's streamIncrID: the next id; at the largest id it wraps
// to 0-0 and ok is false.
func (a StreamID) Incr() (StreamID, bool) {
	switch {
	case a.Seq != math.MaxUint64:
		a.Seq++
	case a.Ms != math.MaxUint64:
		a.Ms, a.Seq = a.Ms+1, 0
	default:
		return StreamID{}, false
	}
	return a, true
}

// Decr is Redis's streamDecrID: the previous id; at 0-0 it wraps to the
// largest id and ok is false.
func (a StreamID) Decr() (StreamID, bool) {
	switch {
	case a.Seq != 0:
		a.Seq--
	case a.Ms != 0:
		a.Ms, a.Seq = a.Ms-1, math.MaxUint64
	default:
		return MaxStreamID, false
	}
	return a, true
}

// StreamEntry is one entry: its id and its field/value pairs (Fields
// holds field, value, field, value ...).
type StreamEntry struct {
	ID     StreamID
	Fields []string
}

// StreamNACK is a pending entry of a consumer group: delivered to
// Consumer and not acknowledged.
type StreamNACK struct {
	ID            StreamID
	DeliveryTime  int64 // unix ms
	DeliveryCount uint64
	Consumer      *StreamConsumer
}

// StreamConsumer is a consumer of a group.
type StreamConsumer struct {
	Name string
	// SeenTime is the last time (unix ms) the consumer was seen
	// (XREADGROUP, XCLAIM, XAUTOCLAIM); ActiveTime the last time it read
	// or claimed an entry (-1: never).
	SeenTime, ActiveTime int64
	PEL                  *btree.BTreeG[*StreamNACK]
}

// StreamGroup is a consumer group.
type StreamGroup struct {
	Name   string
	LastID StreamID
	// EntriesRead is the group's logical read counter, -1 when unknown
	// (Redis's SCG_INVALID_ENTRIES_READ).
	EntriesRead int64
	PEL         *btree.BTreeG[*StreamNACK]
	consumers   map[string]*StreamConsumer
}

// InvalidEntriesRead is a group's unknown read counter.
const InvalidEntriesRead = -1

func nackLess(a, b *StreamNACK) bool { return a.ID.Less(b.ID) }

func newPEL() *btree.BTreeG[*StreamNACK] { return btree.NewG(8, nackLess) }

// Consumer returns the consumer named name (nil when there is none).
func (g *StreamGroup) Consumer(name string) *StreamConsumer { return g.consumers[name] }

// CreateConsumer adds a consumer (seen at now) unless it exists; it
// returns it and whether it is new.
func (g *StreamGroup) CreateConsumer(name string, now int64) (*StreamConsumer, bool) {
	if c, ok := g.consumers[name]; ok {
		return c, false
	}
	c := &StreamConsumer{Name: name, SeenTime: now, ActiveTime: -1, PEL: newPEL()}
	g.consumers[name] = c
	return c, true
}

// DeleteConsumer removes a consumer and its pending entries (from the
// group's PEL too); it returns how many were pending.
func (g *StreamGroup) DeleteConsumer(name string) (int, bool) {
	c, ok := g.consumers[name]
	if !ok {
		return 0, false
	}
	n := c.PEL.Len()
	c.PEL.Ascend(func(n *StreamNACK) bool { g.PEL.Delete(n); return true })
	delete(g.consumers, name)
	return n, true
}

// Consumers returns the consumers in name order (Redis's rax order).
func (g *StreamGroup) Consumers() []*StreamConsumer { return byName(g.consumers) }

// byName is m's values in the order of their names, m's keys (Redis's
// rax order).
func byName[T any](m map[string]T) []T {
	out := make([]T, 0, len(m))
	for _, name := range slices.Sorted(maps.Keys(m)) {
		out = append(out, m[name])
	}
	return out
}

// NACK returns the pending entry id (nil when not pending).
func (g *StreamGroup) NACK(id StreamID) *StreamNACK {
	n, _ := g.PEL.Get(&StreamNACK{ID: id})
	return n
}

// AddNACK makes id pending for c, delivered at now once: a new pending
// entry, or one moved from its consumer to c (count reset to 1).
func (g *StreamGroup) AddNACK(id StreamID, c *StreamConsumer, now int64) *StreamNACK {
	if n := g.NACK(id); n != nil {
		n.Consumer.PEL.Delete(n)
		n.Consumer, n.DeliveryTime, n.DeliveryCount = c, now, 1
		c.PEL.ReplaceOrInsert(n)
		return n
	}
	n := &StreamNACK{ID: id, DeliveryTime: now, DeliveryCount: 1, Consumer: c}
	g.PEL.ReplaceOrInsert(n)
	c.PEL.ReplaceOrInsert(n)
	return n
}

// MoveNACK gives the pending entry n to c.
func (g *StreamGroup) MoveNACK(n *StreamNACK, c *StreamConsumer) {
	if n.Consumer == c {
		return
	}
	n.Consumer.PEL.Delete(n)
	n.Consumer = c
	c.PEL.ReplaceOrInsert(n)
}

// DeleteNACK acknowledges n.
func (g *StreamGroup) DeleteNACK(n *StreamNACK) {
	g.PEL.Delete(n)
	n.Consumer.PEL.Delete(n)
}

// Redis's stream node limits (stream-node-max-bytes, -entries): the
// entries are kept in one ordered tree, but the nodes Redis would pack
// them in are tracked too, since approximate trimming (~) removes whole
// nodes and XINFO reports them.
const (
	streamNodeMaxBytes   = 4096
	streamNodeMaxEntries = 100
)

// streamNode is one of Redis's listpack nodes: its master id (first
// entry) and master fields, the last entry added, its live and deleted
// entries and its listpack's size in bytes.
type streamNode struct {
	master, last  StreamID
	live, deleted int
	bytes         int
	fields        []string
}

// Stream is a Redis stream.
type Stream struct {
	entries *btree.BTreeG[*StreamEntry]
	nodes   []*streamNode
	// LastID is the last id generated; FirstID the first entry's (0-0
	// when empty); MaxDeletedID the largest id XDEL removed;
	// EntriesAdded how many entries were ever added.
	LastID, FirstID, MaxDeletedID StreamID
	EntriesAdded                  int64
	groups                        map[string]*StreamGroup
	size                          int
}

var _ engines.Object = (*Stream)(nil)

func entryLess(a, b *StreamEntry) bool { return a.ID.Less(b.ID) }

// NewStream returns an empty stream.
func NewStream() *Stream {
	return &Stream{entries: btree.NewG(16, entryLess), groups: map[string]*StreamGroup{}}
}

func (s *Stream) Type() engines.ValueType { return engines.TypeStream }

// Len is the number of entries. A stream is kept when it has none (Redis
// keeps empty streams), so the engines' "empty object deletes the key"
// rule must not apply: exec stores streams with StoreStream.
func (s *Stream) Len() int { return s.entries.Len() }

func (s *Stream) Size() int { return objectOverhead + s.size }

// Encoding is OBJECT ENCODING's answer.
func (s *Stream) Encoding() string { return "stream" }

func entrySize(e *StreamEntry) int {
	n := 48
	for _, f := range e.Fields {
		n += stringOverhead + len(f)
	}
	return n
}

// Get returns the entry id (nil when there is none).
func (s *Stream) Get(id StreamID) *StreamEntry {
	e, _ := s.entries.Get(&StreamEntry{ID: id})
	return e
}

// First and Last return the first and last entries (nil when empty).
func (s *Stream) First() *StreamEntry { e, _ := s.entries.Min(); return e }
func (s *Stream) Last() *StreamEntry  { e, _ := s.entries.Max(); return e }

// Range calls fn for the entries from start to end (inclusive), in
// reverse order when rev, until fn returns false.
func (s *Stream) Range(start, end StreamID, rev bool, fn func(e *StreamEntry) bool) {
	if end.Less(start) {
		return
	}
	lo, hi := &StreamEntry{ID: start}, &StreamEntry{ID: end}
	if rev {
		s.entries.DescendLessOrEqual(hi, func(e *StreamEntry) bool {
			if e.ID.Less(start) {
				return false
			}
			return fn(e)
		})
		return
	}
	s.entries.AscendGreaterOrEqual(lo, func(e *StreamEntry) bool {
		if end.Less(e.ID) {
			return false
		}
		return fn(e)
	})
}

// Append adds an entry with id (greater than LastID: the caller checks).
func (s *Stream) Append(id StreamID, fields []string) {
	e := &StreamEntry{ID: id, Fields: fields}
	s.entries.ReplaceOrInsert(e)
	s.size += entrySize(e)
	s.appendToNode(id, fields)
	s.LastID = id
	s.EntriesAdded++
	if s.entries.Len() == 1 {
		s.FirstID = id
	}
}

// PieceHead returns the first piece of s as a move sends it in pieces
// (dataserver/migwalk.go): a stream with all of s but its entries, of
// which it holds the first n. It shares s's parts and is to be encoded at
// once, never stored or changed.
func (s *Stream) PieceHead(n int) *Stream {
	h := *s
	h.entries = btree.NewG(16, entryLess)
	h.size = 0
	s.entries.Ascend(func(e *StreamEntry) bool {
		if h.entries.Len() >= n {
			return false
		}
		h.insertEntry(e)
		return true
	})
	return &h
}

// PieceAfter returns the next piece of s after the entry id after: a
// stream holding only the next n entries (none of s's ids, nodes or
// groups), to be encoded at once; more reports whether entries follow.
func (s *Stream) PieceAfter(after StreamID, n int) (p *Stream, more bool) {
	p = NewStream()
	from, ok := after.Incr()
	if !ok {
		return p, false
	}
	s.entries.AscendGreaterOrEqual(&StreamEntry{ID: from}, func(e *StreamEntry) bool {
		if p.entries.Len() >= n {
			more = true
			return false
		}
		p.insertEntry(e)
		return true
	})
	return p, more
}

// MergePiece adds the entries of piece (a *Stream, PieceAfter's), which
// must all come after s's last one; s's ids, nodes and groups stay as the
// first piece brought them (engines.PieceMerger).
func (s *Stream) MergePiece(piece engines.Object) error {
	p, ok := piece.(*Stream)
	if !ok {
		return errs.ErrWrongType
	}
	if last := s.Last(); last != nil {
		if first := p.First(); first != nil && !last.ID.Less(first.ID) {
			return errs.New(errs.InvalidArgument, "stream piece: entries not after the stream's last")
		}
	}
	p.entries.Ascend(func(e *StreamEntry) bool {
		s.insertEntry(e)
		return true
	})
	return nil
}

// insertEntry adds e to the entries (not to the node layout or the ids:
// a decoded or merged stream brings those as they are).
func (s *Stream) insertEntry(e *StreamEntry) {
	s.entries.ReplaceOrInsert(e)
	s.size += entrySize(e)
}

// appendToNode places the new entry in Redis's node layout
// (streamAppendItem): a new node when the tail's listpack would reach
// stream-node-max-bytes or it holds stream-node-max-entries entries
// (deleted ones included).
func (s *Stream) appendToNode(id StreamID, fields []string) {
	tot := 0
	for _, f := range fields {
		tot += len(f)
	}
	var n *streamNode
	if len(s.nodes) > 0 {
		n = s.nodes[len(s.nodes)-1]
		if n.bytes+tot >= streamNodeMaxBytes || n.live+n.deleted >= streamNodeMaxEntries {
			n = nil
		}
	}
	if n == nil {
		n = &streamNode{master: id, bytes: 7}
		for i := 0; i < len(fields); i += 2 {
			n.fields = append(n.fields, fields[i])
		}
		// master entry: count, deleted, num fields, the fields, 0
		n.bytes += lpIntSize(1) + lpIntSize(0) + lpIntSize(int64(len(n.fields)))
		for _, f := range n.fields {
			n.bytes += lpStrSize(f)
		}
		n.bytes += lpIntSize(0)
		s.nodes = append(s.nodes, n)
	}
	same := len(fields)/2 == len(n.fields)
	for i := 0; same && i < len(n.fields); i++ {
		same = fields[2*i] == n.fields[i]
	}
	b := lpIntSize(0) + lpIntSize(int64(id.Ms-n.master.Ms)) + lpIntSize(int64(id.Seq-n.master.Seq))
	if same {
		for i := 1; i < len(fields); i += 2 {
			b += lpStrSize(fields[i])
		}
		b += lpIntSize(int64(len(fields) / 2))
	} else {
		b += lpIntSize(int64(len(fields) / 2))
		for _, f := range fields {
			b += lpStrSize(f)
		}
		b += lpIntSize(int64(len(fields) + 1))
	}
	n.bytes += b
	n.live++
	n.last = id
}

// lpIntSize is the bytes a listpack takes for integer v (with its
// back-length byte).
func lpIntSize(v int64) int {
	switch {
	case v >= 0 && v <= 127:
		return 2
	case v >= -4096 && v <= 4095:
		return 3
	case v >= -32768 && v <= 32767:
		return 4
	case v >= -8388608 && v <= 8388607:
		return 5
	case v >= math.MinInt32 && v <= math.MaxInt32:
		return 6
	}
	return 10
}

// lpStrSize is the bytes a listpack takes for element s: an integer when
// s is one (Redis's string2ll), else a string.
func lpStrSize(s string) int {
	if len(s) <= 20 {
		if v, ok := redisnum.ParseInt([]byte(s)); ok {
			return lpIntSize(v)
		}
	}
	var l int
	switch {
	case len(s) <= 63:
		l = 1 + len(s)
	case len(s) <= 4095:
		l = 2 + len(s)
	default:
		l = 5 + len(s)
	}
	switch {
	case l <= 127:
		return l + 1
	case l < 16383:
		return l + 2
	case l < 2097151:
		return l + 3
	case l < 268435455:
		return l + 4
	}
	return l + 5
}

// nodeOf is the index of the node holding id (-1: none).
func (s *Stream) nodeOf(id StreamID) int {
	i := sort.Search(len(s.nodes), func(i int) bool { return id.Less(s.nodes[i].master) }) - 1
	if i < 0 || s.nodes[i].last.Less(id) {
		return -1
	}
	return i
}

// Delete removes entry id (XDEL) and reports whether it was there. It
// does not touch MaxDeletedID or FirstID (the caller does, as XDEL).
func (s *Stream) Delete(id StreamID) bool {
	e, ok := s.entries.Delete(&StreamEntry{ID: id})
	if !ok {
		return false
	}
	s.size -= entrySize(e)
	if i := s.nodeOf(id); i >= 0 {
		n := s.nodes[i]
		n.live--
		n.deleted++
		if n.live == 0 {
			s.nodes = append(s.nodes[:i], s.nodes[i+1:]...)
		}
	}
	return true
}

// UpdateFirstID sets FirstID to the first entry's id (0-0 when empty).
func (s *Stream) UpdateFirstID() {
	if e := s.First(); e != nil {
		s.FirstID = e.ID
	} else {
		s.FirstID = StreamID{}
	}
}

// Nodes is the number of Redis listpack nodes (XINFO's radix-tree-keys).
func (s *Stream) Nodes() int { return len(s.nodes) }

// TrimArgs are a trim's arguments: MAXLEN (MinID false) or MINID, exact
// or approximate, with Redis's LIMIT (0: none).
type TrimArgs struct {
	MinID  bool
	MaxLen int64
	ID     StreamID
	Approx bool
	Limit  int64
}

// Trim is Redis's streamTrim: it removes entries from the start and
// returns how many. Approximate trims remove whole nodes only.
func (s *Stream) Trim(a TrimArgs) int64 {
	var deleted int64
	for len(s.nodes) > 0 {
		if !a.MinID && int64(s.entries.Len()) <= a.MaxLen {
			break
		}
		n := s.nodes[0]
		entries := int64(n.live)
		if a.Limit > 0 && deleted+entries > a.Limit {
			break
		}
		var remove bool
		if a.MinID {
			remove = n.last.Less(a.ID)
		} else {
			remove = int64(s.entries.Len())-entries >= a.MaxLen
		}
		if remove {
			s.removeRange(n.master, n.last)
			s.nodes = s.nodes[1:]
			deleted += entries
			continue
		}
		if a.Approx {
			break
		}
		// Trim inside the node: its first live entries.
		var del []*StreamEntry
		length := int64(s.entries.Len())
		s.Range(n.master, n.last, false, func(e *StreamEntry) bool {
			if a.MinID {
				if !e.ID.Less(a.ID) {
					return false
				}
			} else if length <= a.MaxLen {
				return false
			}
			del = append(del, e)
			length--
			return true
		})
		for _, e := range del {
			s.entries.Delete(e)
			s.size -= entrySize(e)
		}
		n.live -= len(del)
		n.deleted += len(del)
		deleted += int64(len(del))
		break
	}
	s.UpdateFirstID()
	return deleted
}

func (s *Stream) removeRange(from, to StreamID) {
	var del []*StreamEntry
	s.Range(from, to, false, func(e *StreamEntry) bool { del = append(del, e); return true })
	for _, e := range del {
		s.entries.Delete(e)
		s.size -= entrySize(e)
	}
}

// ---- consumer groups ----

// Group returns the group named name (nil when there is none).
func (s *Stream) Group(name string) *StreamGroup { return s.groups[name] }

// CreateGroup adds a group; false when one of that name exists.
func (s *Stream) CreateGroup(name string, last StreamID, entriesRead int64) (*StreamGroup, bool) {
	if _, ok := s.groups[name]; ok {
		return nil, false
	}
	g := &StreamGroup{Name: name, LastID: last, EntriesRead: entriesRead, PEL: newPEL(), consumers: map[string]*StreamConsumer{}}
	s.groups[name] = g
	return g, true
}

// DeleteGroup removes a group and reports whether it was there.
func (s *Stream) DeleteGroup(name string) bool {
	_, ok := s.groups[name]
	delete(s.groups, name)
	return ok
}

// Groups returns the groups in name order.
func (s *Stream) Groups() []*StreamGroup { return byName(s.groups) }

// NumGroups is the number of groups.
func (s *Stream) NumGroups() int { return len(s.groups) }

// RangeHasTombstones is Redis's streamRangeHasTombstones (end nil: to the
// end).
func (s *Stream) RangeHasTombstones(start StreamID, end *StreamID) bool {
	if s.Len() == 0 || s.MaxDeletedID.IsZero() {
		return false
	}
	if s.MaxDeletedID.Less(s.FirstID) {
		return false
	}
	e := MaxStreamID
	if end != nil {
		e = *end
	}
	return !s.MaxDeletedID.Less(start) && !e.Less(s.MaxDeletedID)
}

// EstimateDistance is Redis's streamEstimateDistanceFromFirstEverEntry
// (InvalidEntriesRead when it cannot tell).
func (s *Stream) EstimateDistance(id StreamID) int64 {
	if s.EntriesAdded == 0 {
		return 0
	}
	if s.Len() == 0 && id.Cmp(s.LastID) < 1 {
		return s.EntriesAdded
	}
	switch c := id.Cmp(s.LastID); {
	case c == 0:
		return s.EntriesAdded
	case c > 0:
		return InvalidEntriesRead
	}
	cmpFirst := id.Cmp(s.FirstID)
	if s.MaxDeletedID.IsZero() || s.MaxDeletedID.Less(s.FirstID) {
		switch {
		case cmpFirst < 0:
			return s.EntriesAdded - int64(s.Len())
		case cmpFirst == 0:
			return s.EntriesAdded - int64(s.Len()) + 1
		}
	}
	return InvalidEntriesRead
}

// Lag is Redis's streamReplyWithCGLag: the group's lag, ok false when it
// cannot tell (a null).
func (s *Stream) Lag(g *StreamGroup) (int64, bool) {
	switch {
	case s.EntriesAdded == 0:
		return 0, true
	case g.EntriesRead != InvalidEntriesRead && !s.RangeHasTombstones(g.LastID, nil):
		return s.EntriesAdded - g.EntriesRead, true
	}
	if r := s.EstimateDistance(g.LastID); r != InvalidEntriesRead {
		return s.EntriesAdded - r, true
	}
	return 0, false
}

// ---- encoding ----

func (e *encoder) id(id StreamID) { e.uvarint(id.Ms); e.uvarint(id.Seq) }
func (d *decoder) id() StreamID   { return StreamID{d.uvarint(), d.uvarint()} }

// MarshalBinary encodes the stream: its ids and counters, the entries
// with the node each starts (so the node layout survives), the groups
// with their consumers and pending entries.
func (s *Stream) MarshalBinary() ([]byte, error) {
	e := newEncoder(engines.TypeStream, s.entries.Len(), s.size)
	e.id(s.LastID)
	e.id(s.FirstID)
	e.id(s.MaxDeletedID)
	e.varint(s.EntriesAdded)
	// nodes: master, last, live, deleted, bytes, fields
	e.uvarint(uint64(len(s.nodes)))
	for _, n := range s.nodes {
		e.id(n.master)
		e.id(n.last)
		e.uvarint(uint64(n.live))
		e.uvarint(uint64(n.deleted))
		e.uvarint(uint64(n.bytes))
		e.uvarint(uint64(len(n.fields)))
		for _, f := range n.fields {
			e.str(f)
		}
	}
	s.entries.Ascend(func(x *StreamEntry) bool {
		e.id(x.ID)
		e.uvarint(uint64(len(x.Fields)))
		for _, f := range x.Fields {
			e.str(f)
		}
		return true
	})
	e.uvarint(uint64(len(s.groups)))
	for _, g := range s.Groups() {
		e.str(g.Name)
		e.id(g.LastID)
		e.varint(g.EntriesRead)
		cs := g.Consumers()
		e.uvarint(uint64(len(cs)))
		for _, c := range cs {
			e.str(c.Name)
			e.varint(c.SeenTime)
			e.varint(c.ActiveTime)
		}
		e.uvarint(uint64(g.PEL.Len()))
		g.PEL.Ascend(func(n *StreamNACK) bool {
			e.id(n.ID)
			e.varint(n.DeliveryTime)
			e.uvarint(n.DeliveryCount)
			e.str(n.Consumer.Name)
			return true
		})
	}
	return e.b, nil
}

// DecodeStream reverses MarshalBinary.
func DecodeStream(b []byte) (*Stream, error) {
	d, n := newDecoder(b, engines.TypeStream)
	s := NewStream()
	s.LastID = d.id()
	s.FirstID = d.id()
	s.MaxDeletedID = d.id()
	s.EntriesAdded = d.varint()
	nn := d.uvarint()
	if nn > uint64(len(d.b)) {
		return nil, ErrCorrupt
	}
	for i := uint64(0); i < nn && d.err == nil; i++ {
		x := &streamNode{master: d.id(), last: d.id()}
		x.live, x.deleted, x.bytes = int(d.uvarint()), int(d.uvarint()), int(d.uvarint())
		nf := d.uvarint()
		if nf > uint64(len(d.b)) {
			return nil, ErrCorrupt
		}
		for j := uint64(0); j < nf && d.err == nil; j++ {
			x.fields = append(x.fields, d.str())
		}
		s.nodes = append(s.nodes, x)
	}
	for i := 0; i < n && d.err == nil; i++ {
		x := &StreamEntry{ID: d.id()}
		nf := d.uvarint()
		if nf > uint64(len(d.b)) {
			return nil, ErrCorrupt
		}
		for j := uint64(0); j < nf && d.err == nil; j++ {
			x.Fields = append(x.Fields, d.str())
		}
		s.insertEntry(x)
	}
	ng := d.uvarint()
	if ng > uint64(len(d.b)) {
		return nil, ErrCorrupt
	}
	for i := uint64(0); i < ng && d.err == nil; i++ {
		name := d.str()
		g, ok := s.CreateGroup(name, d.id(), d.varint())
		if !ok {
			return nil, ErrCorrupt
		}
		nc := d.uvarint()
		if nc > uint64(len(d.b)) {
			return nil, ErrCorrupt
		}
		for j := uint64(0); j < nc && d.err == nil; j++ {
			c, _ := g.CreateConsumer(d.str(), 0)
			c.SeenTime, c.ActiveTime = d.varint(), d.varint()
		}
		np := d.uvarint()
		if np > uint64(len(d.b)) {
			return nil, ErrCorrupt
		}
		for j := uint64(0); j < np && d.err == nil; j++ {
			x := &StreamNACK{ID: d.id(), DeliveryTime: d.varint(), DeliveryCount: d.uvarint()}
			c := g.consumers[d.str()]
			if c == nil {
				return nil, ErrCorrupt
			}
			x.Consumer = c
			g.PEL.ReplaceOrInsert(x)
			c.PEL.ReplaceOrInsert(x)
		}
	}
	if err := d.done(); err != nil {
		return nil, err
	}
	return s, nil
}

// FirstNodeID is the id of the first entry of the first node, deleted
// or not (Redis's streamGetEdgeID with tombstones), the largest id when
// the stream has no node: a MINID trim at it removes nothing.
func (s *Stream) FirstNodeID() StreamID {
	if len(s.nodes) == 0 {
		return MaxStreamID
	}
	return s.nodes[0].master
}

// RaxNodes is the number of nodes of Redis's radix tree over the nodes'
// 128-bit big-endian master ids (XINFO's radix-tree-nodes): the
// compressed trie those keys make.
func (s *Stream) RaxNodes() int {
	if len(s.nodes) == 0 {
		return 1
	}
	keys := make([][16]byte, len(s.nodes))
	for i, n := range s.nodes {
		binary.BigEndian.PutUint64(keys[i][:8], n.master.Ms)
		binary.BigEndian.PutUint64(keys[i][8:], n.master.Seq)
	}
	return raxCount(keys, 0)
}

// raxCount counts the nodes of the compressed trie of keys (sorted,
// distinct) below depth d.
func raxCount(keys [][16]byte, d int) int {
	if d == 16 {
		return 1
	}
	l := 16 - d
	for _, k := range keys[1:] {
		i := d
		for i < d+l && k[i] == keys[0][i] {
			i++
		}
		l = i - d
	}
	if l > 0 {
		return 1 + raxCount(keys, d+l)
	}
	n := 1
	for i := 0; i < len(keys); {
		j := i + 1
		for j < len(keys) && keys[j][d] == keys[i][d] {
			j++
		}
		n += raxCount(keys[i:j], d+1)
		i = j
	}
	return n
}

// StreamNodeLayout is one of Redis's listpack nodes as a RESTORE payload
// has it: its master id and fields, the last entry it holds (deleted or
// not), its live and deleted entries and its size in bytes.
type StreamNodeLayout struct {
	Master, Last  StreamID
	Live, Deleted int
	Bytes         int
	Fields        []string
}

// SetLayout replaces the node layout (RESTORE keeps a payload's, whose
// nodes may hold tombstones); false, and nothing changed, when it does
// not hold exactly the stream's entries in order.
func (s *Stream) SetLayout(l []StreamNodeLayout) bool {
	nodes := make([]*streamNode, 0, len(l))
	total := 0
	for i, x := range l {
		if x.Live < 0 || x.Deleted < 0 || x.Last.Less(x.Master) || i > 0 && !l[i-1].Last.Less(x.Master) {
			return false
		}
		live := 0
		s.Range(x.Master, x.Last, false, func(*StreamEntry) bool { live++; return true })
		if live != x.Live {
			return false
		}
		total += live
		nodes = append(nodes, &streamNode{master: x.Master, last: x.Last, live: x.Live, deleted: x.Deleted, bytes: x.Bytes,
			fields: append([]string(nil), x.Fields...)})
	}
	if total != s.Len() {
		return false
	}
	s.nodes = nodes
	return true
}

package rdbcodec

import (
	"encoding/binary"
	"strconv"
)

// Streams: Redis 7.0's RDB_TYPE_STREAM_LISTPACKS_2 (what it DUMPs), and
// on reading also the 5.0 form (LISTPACKS) and 7.2's (LISTPACKS_3, with
// each consumer's active time). The entries travel in listpack nodes
// keyed by their master id; a value carries the live entries (tombstones
// are dropped), the stream's ids and counters, and its groups with their
// pending entries and consumers. Encode packs the entries into nodes as
// Redis's XADD would (100 entries, 4 KiB), so a restored stream has the
// node layout of one built by XADDs.

const (
	typeStreamListpacks  = 15
	typeStreamListpacks2 = 19
	typeStreamListpacks3 = 21

	streamFlagDeleted    = 1
	streamFlagSameFields = 2
)

// StreamID is <ms>-<seq>.
type StreamID struct{ Ms, Seq uint64 }

// StreamEntry is a live entry: Fields holds field, value, field, value ...
type StreamEntry struct {
	ID     StreamID
	Fields [][]byte
}

// StreamNACK is a group's pending entry, delivered to Consumer.
type StreamNACK struct {
	ID            StreamID
	DeliveryTime  int64
	DeliveryCount uint64
	Consumer      []byte
}

// StreamConsumer is a consumer of a group (its pending entries are the
// group's NACKs naming it).
type StreamConsumer struct {
	Name       []byte
	SeenTime   int64
	ActiveTime int64 // -1 when the payload has none (before 7.2)
}

// StreamGroup is a consumer group.
type StreamGroup struct {
	Name        []byte
	LastID      StreamID
	EntriesRead int64
	PEL         []StreamNACK
	Consumers   []StreamConsumer
}

// StreamNode is one of a payload's listpack nodes: its master id and
// fields, its last entry (deleted or not), its live and deleted entries
// and its size. Decode fills Nodes; Encode ignores them (it packs the
// entries afresh: tombstones are not kept).
type StreamNode struct {
	Master, Last  StreamID
	Live, Deleted int
	Bytes         int
	Fields        [][]byte
}

// StreamValue is a stream's content.
type StreamValue struct {
	Nodes                         []StreamNode
	Entries                       []StreamEntry
	LastID, FirstID, MaxDeletedID StreamID
	EntriesAdded                  uint64
	Groups                        []StreamGroup
}

func streamKey(id StreamID) []byte {
	var k [16]byte
	binary.BigEndian.PutUint64(k[:8], id.Ms)
	binary.BigEndian.PutUint64(k[8:], id.Seq)
	return k[:]
}

func (e *encoder) millis(t int64) { e.b = binary.LittleEndian.AppendUint64(e.b, uint64(t)) }

// stream writes s as RDB_TYPE_STREAM_LISTPACKS_2.
func (e *encoder) stream(s *StreamValue) {
	e.b = append(e.b, typeStreamListpacks2)
	nodes := streamNodes(s.Entries)
	e.length(uint64(len(nodes)))
	for _, n := range nodes {
		e.raw(streamKey(n.master))
		e.raw(n.lp)
	}
	e.length(uint64(len(s.Entries)))
	for _, id := range []StreamID{s.LastID, s.FirstID, s.MaxDeletedID} {
		e.length(id.Ms)
		e.length(id.Seq)
	}
	e.length(s.EntriesAdded)
	e.length(uint64(len(s.Groups)))
	for _, g := range s.Groups {
		e.raw(g.Name)
		e.length(g.LastID.Ms)
		e.length(g.LastID.Seq)
		e.length(uint64(g.EntriesRead))
		e.length(uint64(len(g.PEL)))
		for _, n := range g.PEL {
			e.b = append(e.b, streamKey(n.ID)...)
			e.millis(n.DeliveryTime)
			e.length(n.DeliveryCount)
		}
		e.length(uint64(len(g.Consumers)))
		for _, c := range g.Consumers {
			e.raw(c.Name)
			e.millis(c.SeenTime)
			var ids []StreamID
			for _, n := range g.PEL {
				if string(n.Consumer) == string(c.Name) {
					ids = append(ids, n.ID)
				}
			}
			e.length(uint64(len(ids)))
			for _, id := range ids {
				e.b = append(e.b, streamKey(id)...)
			}
		}
	}
}

type streamNode struct {
	master StreamID
	lp     []byte
}

// streamNodes packs entries into listpacks as streamAppendItem does.
func streamNodes(entries []StreamEntry) []streamNode {
	var nodes []streamNode
	var (
		cur    []byte // the listpack being built, header included
		count  int
		master StreamID
		fields [][]byte
	)
	flush := func() {
		if count == 0 {
			return
		}
		lp := append(cur, 0xff)
		lp[6] = byte(count) // the master entry's count: a 7-bit integer (at most 100)
		binary.LittleEndian.PutUint32(lp, uint32(len(lp)))
		n := 0
		for p := 6; lp[p] != 0xff; n++ {
			p += lpEntryLen(lp[p:])
		}
		binary.LittleEndian.PutUint16(lp[4:], uint16(min(n, 0xffff)))
		nodes = append(nodes, streamNode{master: master, lp: lp})
		cur, count = nil, 0
	}
	num := func(v int64) []byte { return strconv.AppendInt(nil, v, 10) }
	for _, en := range entries {
		tot := 0
		for _, f := range en.Fields {
			tot += len(f)
		}
		if count > 0 && (len(cur)+1+tot >= 4096 || count >= 100) {
			flush()
		}
		if count == 0 {
			master, fields = en.ID, nil
			for i := 0; i+1 < len(en.Fields); i += 2 {
				fields = append(fields, en.Fields[i])
			}
			cur = make([]byte, 6)
			cur = appendListpackEntry(cur, []byte("1")) // count, rewritten at flush
			cur = appendListpackEntry(cur, []byte("0")) // deleted
			cur = appendListpackEntry(cur, num(int64(len(fields))))
			for _, f := range fields {
				cur = appendListpackEntry(cur, f)
			}
			cur = appendListpackEntry(cur, []byte("0"))
		}
		same := len(en.Fields)/2 == len(fields)
		for i := 0; same && i < len(fields); i++ {
			same = string(en.Fields[2*i]) == string(fields[i])
		}
		flags := int64(0)
		if same {
			flags = streamFlagSameFields
		}
		cur = appendListpackEntry(cur, num(flags))
		cur = appendListpackEntry(cur, num(int64(en.ID.Ms-master.Ms)))
		cur = appendListpackEntry(cur, num(int64(en.ID.Seq-master.Seq)))
		if same {
			for i := 1; i < len(en.Fields); i += 2 {
				cur = appendListpackEntry(cur, en.Fields[i])
			}
			cur = appendListpackEntry(cur, num(int64(len(fields))))
		} else {
			cur = appendListpackEntry(cur, num(int64(len(en.Fields)/2)))
			for _, f := range en.Fields {
				cur = appendListpackEntry(cur, f)
			}
			cur = appendListpackEntry(cur, num(int64(len(en.Fields)+1)))
		}
		count++
	}
	flush()
	return nodes
}

// lpEntryLen is the size of the listpack entry at b (encoding, data,
// back length).
func lpEntryLen(b []byte) int {
	c := b[0]
	var l int
	switch {
	case c&0x80 == 0:
		l = 1
	case c&0xc0 == 0x80:
		l = 1 + int(c&0x3f)
	case c&0xe0 == 0xc0:
		l = 2
	case c&0xf0 == 0xe0:
		l = 2 + (int(c&0x0f)<<8 | int(b[1]))
	case c == 0xf0:
		l = 5 + int(binary.LittleEndian.Uint32(b[1:]))
	case c == 0xf1:
		l = 3
	case c == 0xf2:
		l = 4
	case c == 0xf3:
		l = 5
	default:
		l = 9
	}
	return l + backlenSize(l)
}

func (d *decoder) millis() (int64, error) {
	p, err := d.take(8)
	if err != nil {
		return 0, err
	}
	return int64(binary.LittleEndian.Uint64(p)), nil
}

func (d *decoder) rawID() (StreamID, error) {
	p, err := d.take(16)
	if err != nil {
		return StreamID{}, err
	}
	return StreamID{binary.BigEndian.Uint64(p), binary.BigEndian.Uint64(p[8:])}, nil
}

func (d *decoder) lenID() (StreamID, error) {
	ms, err := d.count()
	if err != nil {
		return StreamID{}, err
	}
	seq, err := d.count()
	return StreamID{ms, seq}, err
}

// stream reads a stream of RDB type t.
func (d *decoder) stream(t byte) (Value, error) {
	s := &StreamValue{}
	nn, err := d.count()
	if err != nil {
		return Value{}, err
	}
	var last *StreamID
	for ; nn > 0; nn-- {
		key, err := d.blob(16)
		if err != nil || len(key) != 16 {
			return Value{}, errCorrupt
		}
		master := StreamID{binary.BigEndian.Uint64(key), binary.BigEndian.Uint64(key[8:])}
		lp, err := d.container()
		if err != nil {
			return Value{}, err
		}
		els, err := d.listpack(lp, nil)
		if err != nil {
			return Value{}, err
		}
		node := StreamNode{Master: master, Bytes: len(lp)}
		if s.Entries, err = d.streamNodeEntries(&node, els, s.Entries, last); err != nil {
			return Value{}, err
		}
		s.Nodes = append(s.Nodes, node)
		if n := len(s.Entries); n > 0 {
			last = &s.Entries[n-1].ID
		}
	}
	length, err := d.count()
	if err != nil || length != uint64(len(s.Entries)) {
		return Value{}, errCorrupt
	}
	if s.LastID, err = d.lenID(); err != nil {
		return Value{}, err
	}
	if t == typeStreamListpacks {
		if len(s.Entries) > 0 {
			s.FirstID = s.Entries[0].ID
		}
		s.EntriesAdded = length
	} else {
		if s.FirstID, err = d.lenID(); err != nil {
			return Value{}, err
		}
		if s.MaxDeletedID, err = d.lenID(); err != nil {
			return Value{}, err
		}
		if s.EntriesAdded, err = d.count(); err != nil {
			return Value{}, err
		}
	}
	ng, err := d.count()
	if err != nil {
		return Value{}, err
	}
	names := map[string]bool{}
	for ; ng > 0; ng-- {
		var g StreamGroup
		if g.Name, err = d.str(); err != nil {
			return Value{}, err
		}
		if names[string(g.Name)] {
			return Value{}, errCorrupt
		}
		names[string(g.Name)] = true
		if g.LastID, err = d.lenID(); err != nil {
			return Value{}, err
		}
		g.EntriesRead = -1
		if t != typeStreamListpacks {
			n, err := d.count()
			if err != nil {
				return Value{}, err
			}
			g.EntriesRead = int64(n)
			if g.EntriesRead < -1 {
				return Value{}, errCorrupt
			}
		}
		np, err := d.count()
		if err != nil || np > uint64(d.left())/17 {
			return Value{}, errCorrupt
		}
		pel := map[StreamID]int{}
		for ; np > 0; np-- {
			var n StreamNACK
			if n.ID, err = d.rawID(); err != nil {
				return Value{}, err
			}
			if n.DeliveryTime, err = d.millis(); err != nil {
				return Value{}, err
			}
			if n.DeliveryCount, err = d.count(); err != nil {
				return Value{}, err
			}
			if _, dup := pel[n.ID]; dup {
				return Value{}, errCorrupt
			}
			pel[n.ID] = len(g.PEL)
			g.PEL = append(g.PEL, n)
		}
		nc, err := d.count()
		if err != nil || nc > uint64(d.left()) {
			return Value{}, errCorrupt
		}
		cnames := map[string]bool{}
		for ; nc > 0; nc-- {
			c := StreamConsumer{ActiveTime: -1}
			if c.Name, err = d.str(); err != nil {
				return Value{}, err
			}
			if cnames[string(c.Name)] {
				return Value{}, errCorrupt
			}
			cnames[string(c.Name)] = true
			if c.SeenTime, err = d.millis(); err != nil {
				return Value{}, err
			}
			if t == typeStreamListpacks3 {
				if c.ActiveTime, err = d.millis(); err != nil {
					return Value{}, err
				}
			}
			ncp, err := d.count()
			if err != nil || ncp > uint64(d.left())/16 {
				return Value{}, errCorrupt
			}
			for ; ncp > 0; ncp-- {
				id, err := d.rawID()
				if err != nil {
					return Value{}, err
				}
				i, ok := pel[id]
				if !ok || g.PEL[i].Consumer != nil {
					return Value{}, errCorrupt
				}
				g.PEL[i].Consumer = c.Name
			}
			g.Consumers = append(g.Consumers, c)
		}
		for _, n := range g.PEL {
			if n.Consumer == nil {
				return Value{}, errCorrupt // a pending entry of no consumer
			}
		}
		s.Groups = append(s.Groups, g)
	}
	return Value{Kind: Stream, Stream: s}, nil
}

// streamNodeEntries appends the live entries of one node (its listpack's
// elements els) to out; ids must grow from after.
func (d *decoder) streamNodeEntries(node *StreamNode, els [][]byte, out []StreamEntry, after *StreamID) ([]StreamEntry, error) {
	master := node.Master
	i := 0
	next := func() ([]byte, bool) {
		if i >= len(els) {
			return nil, false
		}
		i++
		return els[i-1], true
	}
	num := func() (int64, bool) {
		b, ok := next()
		if !ok {
			return 0, false
		}
		v, err := strconv.ParseInt(string(b), 10, 64)
		return v, err == nil
	}
	count, ok1 := num()
	deleted, ok2 := num()
	nf, ok3 := num()
	if !ok1 || !ok2 || !ok3 || count < 0 || deleted < 0 || nf < 0 || nf > int64(len(els)) {
		return nil, errCorrupt
	}
	fields := make([][]byte, nf)
	for j := range fields {
		f, ok := next()
		if !ok {
			return nil, errCorrupt
		}
		fields[j] = f
	}
	if z, ok := num(); !ok || z != 0 {
		return nil, errCorrupt
	}
	live := int64(0)
	for i < len(els) {
		flags, ok := num()
		msd, ok2 := num()
		seqd, ok3 := num()
		if !ok || !ok2 || !ok3 {
			return nil, errCorrupt
		}
		id := StreamID{master.Ms + uint64(msd), master.Seq + uint64(seqd)}
		var kv [][]byte
		if flags&streamFlagSameFields != 0 {
			for _, f := range fields {
				v, ok := next()
				if !ok {
					return nil, errCorrupt
				}
				kv = append(kv, f, v)
			}
		} else {
			n, ok := num()
			if !ok || n < 0 || n > int64(len(els)) {
				return nil, errCorrupt
			}
			for j := int64(0); j < 2*n; j++ {
				v, ok := next()
				if !ok {
					return nil, errCorrupt
				}
				kv = append(kv, v)
			}
		}
		if _, ok := num(); !ok { // lp-count
			return nil, errCorrupt
		}
		if after != nil && !(after.Ms < id.Ms || after.Ms == id.Ms && after.Seq < id.Seq) {
			return nil, errCorrupt
		}
		a := id
		after = &a
		node.Last = id
		if flags&streamFlagDeleted != 0 {
			node.Deleted++
			continue
		}
		if len(kv) == 0 {
			return nil, errCorrupt
		}
		out = append(out, StreamEntry{ID: id, Fields: kv})
		live++
	}
	if live != count || deleted != int64(node.Deleted) {
		return nil, errCorrupt
	}
	node.Live, node.Fields = int(live), fields
	return out, nil
}

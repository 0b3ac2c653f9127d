package exec

import (
	"bytes"

	"github.com/tairkv/tair/engines"
)

func init() {
	Register("tair.restorerec", cmdRestoreRec)
}

// TAIR.RESTOREREC key record: writes record (engines.AppendRecord's, as
// tair ctl backup read it from the engine) under key in the client's
// area, replacing whatever is there: the value and its type, its Tair
// version, its expiry, a pkey's skeys, as they were when the backup was
// taken. tair ctl restore sends one per record of a backup; it checks
// that the backup and this cluster keep hashes alike (persistent engines
// as prefix records, in-memory ones as objects). Replicated as itself.
func cmdRestoreRec(c *Ctx) {
	rec, err := engines.DecodeRecord(c.Args[2])
	if err != nil {
		c.Error("ERR TAIR.RESTOREREC: malformed record")
		return
	}
	if !bytes.Equal(rec.Key, c.Args[1]) {
		c.Error("ERR TAIR.RESTOREREC: the record is of another key")
		return
	}
	if !wellFormed(&rec.Entry) {
		c.Error("ERR TAIR.RESTOREREC: a " + rec.Entry.Type.String() + " record must hold what its type keeps")
		return
	}
	for i := range rec.Prefix {
		if !wellFormed(&rec.Prefix[i].Entry) {
			c.Error("ERR TAIR.RESTOREREC: a " + rec.Prefix[i].Entry.Type.String() + " record must hold what its type keeps")
			return
		}
	}
	k := c.Key(1)
	rec.Area, rec.Key = k.Area, k.Key
	if err := c.Eng.Restore(k.Bucket, rec); err != nil {
		c.Fail(err)
		return
	}
	if fx := c.X.opts.FieldExpiry; fx != nil && rec.Entry.Type == engines.TypeExHash {
		fx(k, NextFieldExpiry(&rec.Entry))
	}
	c.OK()
}

// wellFormed reports whether e holds what its type keeps, as an engine
// writes it: a string or items as plain bytes, a data structure as an
// object (a pkey's own entry is a zero string; the codec decodes an
// object by its entry's type, and none is registered for the plain
// types). A record of one type with the other's shape would sit under
// its key unreadable by every command.
func wellFormed(e *engines.Entry) bool {
	switch e.Type {
	case engines.TypeString, engines.TypeItems:
		return e.Object == nil
	case engines.TypeHash, engines.TypeList, engines.TypeSet, engines.TypeZSet, engines.TypeExHash, engines.TypeStream:
		return e.Object != nil
	}
	return false
}

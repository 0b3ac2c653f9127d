package proxy

import (
	"github.com/tairkv/tair/hotkey"
	"github.com/tairkv/tair/internal/command"
)

// The hot-key cache on the request path: GETs of hot keys answered from
// it or filling it (hotRead), and writes through this proxy keeping it
// true (hotDone).

// hotRead answers a GET from the hot-key cache, or marks it to fill the
// cache when its key is hot.
func (ss *session) hotRead(c *hotkey.Cache, r *request, key []byte) bool {
	area := uint16(r.area)
	if v, ok := c.Get(area, key); ok {
		r.reply = append(r.reply[:0], v...)
		r.local = true
		return true
	}
	if ss.srv.hot.IsHot(area, key) {
		r.fill, r.fillSeq = true, c.Seq()
	}
	return false
}

// hotDone keeps the cache true to the writes through this proxy once r
// has its reply: a filling GET caches a value (a bulk string; a null
// differs between RESP2 and RESP3 and is not worth caching) unless a write
// came in between; a write drops its keys again (a read that raced it may
// have filled the old value); a write without keys, or EXEC, clears all.
func (ss *session) hotDone(c *hotkey.Cache, r *request) {
	if r.fill {
		r.fill = false
		if len(r.reply) > 1 && r.reply[0] == '$' && r.reply[1] != '-' {
			c.PutIfUnchanged(uint16(r.area), r.args[1], r.reply, r.fillSeq)
		}
		return
	}
	if r.spec == nil || r.rejected {
		return
	}
	if r.spec.Name == "exec" {
		c.Clear()
		return
	}
	if !r.spec.Has(command.Write) {
		return
	}
	var buf [8]int
	keys := r.spec.AppendKeyIndexes(buf[:0], r.args)
	if len(keys) == 0 {
		c.Clear()
		return
	}
	for _, k := range keys {
		c.Invalidate(uint16(r.area), r.args[k])
	}
}

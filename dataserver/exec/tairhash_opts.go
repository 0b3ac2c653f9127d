package exec

import (
	"math"

	"github.com/tairkv/tair/engines"
	"github.com/tairkv/tair/engines/ds"
	"github.com/tairkv/tair/internal/redisnum"
)

func init() {
	Register("exhmsetwithopts", cmdExHMSetWithOpts)
}

// EXHMSETWITHOPTS key field value ver expire [field value ver expire ...]
// (TairHash): every field is checked before any is written — ver and
// expire are integers of at least 0 (else a syntax error), and an
// existing field's version must equal a ver other than 0 (else "update
// version is stale") — then each field takes its value, its version plus
// one (1 when new) and an expiry of expire seconds from now (0: none).
// It answers OK and propagates one canonical EXHSET ... ABS v [PXAT ms]
// per field, so that a slave stamps the same versions and expiries.
func cmdExHMSetWithOpts(c *Ctx) {
	if (len(c.Args)-2)%4 != 0 {
		dsWrongArgs(c)
		return
	}
	if err := dsCheckValues(c, 3, 4); err != nil {
		c.Fail(err)
		return
	}
	var set []ds.ExField
	err := exWrite(c, func(h *ds.ExHash, now int64) (bool, error) {
		expires := make([]int64, 0, (len(c.Args)-2)/4)
		for i := 2; i < len(c.Args); i += 4 {
			ver, okVer := redisnum.ParseInt(c.Args[i+2])
			secs, okExp := redisnum.ParseInt(c.Args[i+3])
			if !okVer || !okExp || ver < 0 || secs < 0 || secs > (math.MaxInt64-now)/1000 {
				return false, ReplyError("ERR syntax error")
			}
			if f := h.Get(string(c.Args[i]), now); f != nil && ver != 0 && f.Version != ver {
				return false, ReplyError(errTextExStale)
			}
			at := int64(0)
			if secs > 0 {
				at = now + secs*1000
			}
			expires = append(expires, at)
		}
		for n, i := 0, 2; i < len(c.Args); n, i = n+1, i+4 {
			nf := ds.ExField{Value: string(c.Args[i+1]), Version: 1, ExpireAt: expires[n]}
			if f := h.Get(string(c.Args[i]), now); f != nil {
				nf.Version = engines.NextVersion(f.Version)
			}
			h.Set(string(c.Args[i]), nf)
			set = append(set, nf)
		}
		return true, nil
	})
	if err != nil {
		c.Fail(err)
		return
	}
	for n, i := 0, 2; i < len(c.Args); n, i = n+1, i+4 {
		propExSet(c, c.Args[i], set[n])
	}
	c.OK()
}

package exec

import (
	"bytes"
	"strconv"

	"github.com/tairkv/tair/internal/redisnum"
)

// # Versions in replication
//
// A replica replays its master's writes as commands, and a command that
// stores a record counts the record's version on from the copy's own. Two
// copies whose versions of a record differ (one expired it a moment
// earlier than the other, or skipped a write before it was copied again)
// would then go on differing, and a version is what Tair's optimistic
// lock compares: after a failover a client's versioned put is refused,
// or a stale one accepted. So a write's propagation carries the versions
// its stores gave, ahead of its commands:
//
//	TAIR.REPLVER <key> <version> [<key> <version> ...]
//	TAIR.REPLVER <version>
//
// The replica's stores of those keys, in the commands that follow it (up
// to the next entry), take them (engines.Key.Versions). The short form,
// for the usual write (one command that stored the key it names first),
// is the version of that key in the next command alone. An entry is not
// a command clients can run: the replica's apply takes it out
// (IsVersions, Request.Entry) and hands the versions to the commands
// after it (Request.Versions, Request.KeyVersion).

// versionsCmd names the versions entry of a propagation.
var versionsCmd = []byte("TAIR.REPLVER")

// Entry takes versions entry cmd (IsVersions) into r for the commands
// after it. The caller clears KeyVersion after the next command: the
// short form is its alone.
func (r *Request) Entry(cmd [][]byte) {
	if len(cmd) == 2 {
		r.Versions, r.KeyVersion = nil, cmd[1]
		return
	}
	r.Versions, r.KeyVersion = cmd[1:], nil
}

// IsVersions reports whether a propagated command is the versions entry
// of the commands after it.
func IsVersions(cmd [][]byte) bool {
	return len(cmd) > 0 && bytes.Equal(cmd[0], versionsCmd)
}

// versionLog is a command's engines.VersionLink (Ctx.Key sets it).
type versionLog struct {
	// stored: on a master, the key and version of each store, in order.
	stored []storedVersion
	// given: on a replica, the pairs of the versions entry before the
	// command (Request.Versions), key then version.
	given [][]byte
	// pair holds the short form's pair (Request.KeyVersion).
	pair [2][]byte
	// index maps the given keys to their versions once there are many.
	index map[string]int64
}

type storedVersion struct {
	key []byte
	v   int64
}

func (l *versionLog) Stored(key []byte, v int64) {
	l.stored = append(l.stored, storedVersion{key, v})
}

// Given finds key's version among the given pairs: the last pair of the
// key (a command that stored it twice sent both).
func (l *versionLog) Given(key []byte) int64 {
	g := l.given
	if len(g) < 2 {
		return 0
	}
	if len(g) > 32 {
		if l.index == nil {
			l.index = make(map[string]int64, len(g)/2)
			for i := 0; i+1 < len(g); i += 2 {
				if v, ok := redisnum.ParseInt(g[i+1]); ok && v > 0 {
					l.index[string(g[i])] = v
				}
			}
		}
		return l.index[string(key)]
	}
	for i := len(g) - 2; i >= 0; i -= 2 {
		if bytes.Equal(g[i], key) {
			if v, ok := redisnum.ParseInt(g[i+1]); ok && v > 0 {
				return v
			}
			return 0
		}
	}
	return 0
}

// withVersions returns prop with the versions entry of l ahead of its
// commands. The usual write, one command that stored one key, takes one
// allocation for both (versioned1), or none when room, where Propagate
// put the one command of prop (room.cmds[1]), has it.
func (l *versionLog) withVersions(prop [][][]byte, room *versioned1) [][][]byte {
	if len(prop) == 1 && len(l.stored) == 1 && len(prop[0]) > 1 && bytes.Equal(prop[0][1], l.stored[0].key) {
		p := room
		if p == nil {
			p = new(versioned1)
			p.cmds[1] = prop[0]
		}
		buf := strconv.AppendInt(p.buf[:0], l.stored[0].v, 10)
		p.entry = [2][]byte{versionsCmd, buf}
		p.cmds[0] = p.entry[:]
		return p.cmds[:]
	}
	return append(append(make([][][]byte, 0, len(prop)+1), l.versionsEntry()), prop...)
}

// versioned1 holds the propagation of a write whose one command stored
// the key it names first: the short versions entry and the command.
type versioned1 struct {
	cmds  [2][][]byte
	entry [2][]byte
	buf   [20]byte
}

// versionsEntry builds the versions entry of the stores in l (keys and
// digits copied into one buffer: a key may be a buffer its caller
// reuses). A key stored twice is sent twice; the replica takes the last.
func (l *versionLog) versionsEntry() [][]byte {
	n := 0
	for _, sv := range l.stored {
		n += len(sv.key) + 20
	}
	cmd := make([][]byte, 1, 1+2*len(l.stored))
	cmd[0] = versionsCmd
	buf := make([]byte, 0, n)
	for _, sv := range l.stored {
		start := len(buf)
		buf = append(buf, sv.key...)
		mid := len(buf)
		buf = strconv.AppendInt(buf, sv.v, 10)
		cmd = append(cmd, buf[start:mid:mid], buf[mid:len(buf):len(buf)])
	}
	return cmd
}

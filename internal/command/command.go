// Package command is the one command table shared by the proxy (routing:
// where are the keys, may this go to a slave, is it atomic) and the
// dataserver (is it a write, which buckets does it touch). Execution lives
// elsewhere (dataserver/exec); this package only classifies.
package command

import (
	"strconv"
	"strings"

	"github.com/tairkv/tair/resp"
)

// Flag classifies a command.
type Flag uint32

const (
	// Write changes data: only a bucket's master runs it, and it is
	// replicated.
	Write Flag = 1 << iota
	// ReadOnly reads data: may be served by a slave when allowed.
	ReadOnly
	// NoKey commands touch no key (PING, INFO ...): the proxy answers them
	// or sends them to every dataserver.
	NoKey
	// MultiKey commands may be split by bucket and their replies merged
	// (MGET, MSET, DEL, EXISTS, UNLINK, TAIR.INVALID).
	MultiKey
	// Atomic multi-key commands need all keys in one bucket (else CROSSSLOT).
	Atomic
	// Blocking commands may wait (BLPOP ...).
	Blocking
	// Admin commands are for the proxy itself or the whole cluster.
	Admin
	// Tair marks the extended Tair commands.
	Tair
)

// Spec describes one command. Arity follows Redis: positive = exact,
// negative = at least -Arity (command name included). Keys are at
// FirstKey, FirstKey+Step, ... LastKey (negative LastKey counts from the
// end: -1 = last argument); KeysFunc overrides for irregular commands.
type Spec struct {
	Name     string
	Arity    int
	Flags    Flag
	FirstKey int
	LastKey  int
	Step     int
	KeysFunc func(args [][]byte) []int
	// Group is the command's family for COMMAND DOCS (Group(Name) unless
	// set); Info its COMMAND INFO description (keyspec.go), filled in by
	// Register unless set.
	Group string
	Info  *Info
}

// Has reports whether s has every flag in f.
func (s *Spec) Has(f Flag) bool { return s.Flags&f == f }

// ArityOK reports whether n arguments (name included) fit the arity.
func (s *Spec) ArityOK(n int) bool {
	if s.Arity >= 0 {
		return n == s.Arity
	}
	return n >= -s.Arity
}

// KeyIndexes returns the positions of the keys in args (args[0] is the
// command name). Out-of-range positions are left out.
func (s *Spec) KeyIndexes(args [][]byte) []int {
	return s.AppendKeyIndexes(nil, args)
}

// AppendKeyIndexes is KeyIndexes appending to buf, so that the request
// paths (proxy, dataserver) can pass a stack buffer and not allocate.
func (s *Spec) AppendKeyIndexes(buf []int, args [][]byte) []int {
	if s.KeysFunc != nil {
		return append(buf, s.KeysFunc(args)...)
	}
	if s.FirstKey <= 0 {
		return buf
	}
	last := s.LastKey
	if last < 0 {
		last = len(args) + last
	}
	step := s.Step
	if step <= 0 {
		step = 1
	}
	for i := s.FirstKey; i <= last && i < len(args); i += step {
		buf = append(buf, i)
	}
	return buf
}

var table = map[string]*Spec{}

// Register adds specs to the table (later registrations replace earlier).
func Register(specs ...*Spec) {
	for _, s := range specs {
		s.Name = strings.ToLower(s.Name)
		fillInfo(s)
		table[s.Name] = s
	}
}

// Lookup finds a command by name, case-insensitively; nil when unknown.
func Lookup(name []byte) *Spec {
	if s, ok := table[string(name)]; ok {
		return s
	}
	var buf [32]byte
	if b, ok := LowerASCII(&buf, name); ok {
		return table[string(b)]
	}
	return table[strings.ToLower(string(name))]
}

// LowerASCII writes name in ASCII lower case into buf and returns that
// slice of it, so that a command name is looked up without allocating;
// a name longer than buf comes back as it is, with false. It is small
// enough to be inlined, keeping buf on the caller's stack.
func LowerASCII(buf *[32]byte, name []byte) ([]byte, bool) {
	if len(name) > len(buf) {
		return name, false
	}
	return resp.AppendLower(buf[:0], name), true
}

// All returns every registered spec.
func All() []*Spec {
	out := make([]*Spec, 0, len(table))
	for _, s := range table {
		out = append(out, s)
	}
	return out
}

// NumKeysAt returns a KeysFunc for commands whose key count is the
// argument at pos, followed by that many keys (ZUNIONSTORE dst 2 a b ...
// uses extra for the destination key in front).
func NumKeysAt(pos int, extra ...int) func(args [][]byte) []int {
	return func(args [][]byte) []int {
		out := append([]int(nil), extra...)
		if pos >= len(args) {
			return out
		}
		n, err := strconv.Atoi(string(args[pos]))
		// numkeys past the arguments is the command's syntax error, not
		// keys: the arguments after numkeys are not keys then.
		if err != nil || n < 0 || n >= len(args)-pos {
			return out
		}
		for i := pos + 1; i <= pos+n; i++ {
			out = append(out, i)
		}
		return out
	}
}

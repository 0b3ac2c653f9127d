// Package envelope is the contract between proxies and dataservers, kept in
// one place so that neither side writes or reads it by hand: the envelope a
// proxy wraps each command in, and the refusals that tell it to send the
// command again (NOTMASTER, TRYAGAIN) or that the outcome of a write is
// unknown (a TIMEOUT whose write may have applied).
//
// The envelope, a RESP array:
//
//	TAIR.X  <area> <table-version> <proto 2|3>[n] <cmd> <args...>   to a bucket's master
//	TAIR.XR <area> <table-version> <proto 2|3>[n] <cmd> <args...>   a read a slave may serve
//	TAIR.XF <area> <table-version> <proto 2|3>[n] <cmd> <args...>   forwarded by a former master
//
// Per-request flags follow the protocol digit as letters: n, the client
// is in CLIENT NO-TOUCH mode (its commands leave the keys' access
// frequency and time alone); t<id>, last, a read that fills the proxy's
// hot-key cache: the master remembers the key for the tracker id (the
// proxy's, as its TAIR.TRACKING connection names it) and pushes an
// invalidation there when the key next changes. A request without flags
// is written as before they existed, so that a dataserver that knows none
// serves it.
//
// The refusals, as error replies (see Refusal):
//
//	-NOTMASTER [bucket <b> ]table <v>[: master lease lapsed][ (<note>)] (tair -3986)
//	-TRYAGAIN bucket <b> is migrating (tair -3984)
//
// Both mean that the command did not run.
package envelope

import (
	"errors"
	"strconv"

	"github.com/tairkv/tair/internal/redisnum"
	"github.com/tairkv/tair/internal/route"
	"github.com/tairkv/tair/resp"
)

// Kind says how a dataserver may serve an envelope's command.
type Kind uint8

const (
	// Master (TAIR.X): only the master of the command's bucket serves it.
	Master Kind = iota
	// SlaveOK (TAIR.XR): a read that a slave not marked behind may serve.
	SlaveOK
	// Forwarded (TAIR.XF): sent on by a bucket's former master to its new
	// one; never forwarded again.
	Forwarded
)

// names are the command names of the kinds, in Kind order.
var names = [...]string{"TAIR.X", "TAIR.XR", "TAIR.XF"}

// Name is the command name that carries k ("TAIR.X", ...).
func (k Kind) Name() string { return names[k] }

// KindOf reports which envelope the command name b is (any case).
func KindOf(b []byte) (Kind, bool) {
	if len(b) < 6 || len(b) > 7 || !resp.EqualFold(b[:6], "tair.x") {
		return 0, false
	}
	if len(b) == 6 {
		return Master, true
	}
	switch b[6] | 0x20 {
	case 'r':
		return SlaveOK, true
	case 'f':
		return Forwarded, true
	}
	return 0, false
}

// Header is what an envelope says about its command.
type Header struct {
	Kind    Kind
	Area    uint16
	Version route.Version // the sender's bucket table version
	Proto   int           // the client's RESP version, 2 or 3
	// NoTouch: the client is in CLIENT NO-TOUCH mode (flag n).
	NoTouch bool
	// Track: a hot-key cache fill for the tracker of this id (flag
	// t<id>); 0 = none.
	Track uint64
}

// Fields is the number of arguments an envelope puts before its command.
const Fields = 4

// Append appends h's envelope around the command args, as one RESP array.
func Append(b []byte, h Header, args [][]byte) []byte {
	b = resp.AppendArray(b, len(args)+Fields)
	switch h.Kind {
	case SlaveOK:
		b = append(b, "$7\r\nTAIR.XR\r\n"...)
	case Forwarded:
		b = append(b, "$7\r\nTAIR.XF\r\n"...)
	default:
		b = append(b, "$6\r\nTAIR.X\r\n"...)
	}
	var num [20]byte
	if h.Area < 10 {
		b = append(b, '$', '1', '\r', '\n', byte('0'+h.Area), '\r', '\n')
	} else {
		b = resp.AppendBulk(b, strconv.AppendUint(num[:0], uint64(h.Area), 10))
	}
	b = resp.AppendBulk(b, strconv.AppendUint(num[:0], uint64(h.Version), 10))
	b = appendProto(b, h)
	for _, a := range args {
		b = resp.AppendBulk(b, a)
	}
	return b
}

// Args is h's envelope around the command args as an argument list (for
// code that sends commands as lists; Append is the wire form).
func Args(h Header, args [][]byte) [][]byte {
	out := make([][]byte, 0, Fields+len(args))
	out = append(out, []byte(h.Kind.Name()),
		strconv.AppendUint(nil, uint64(h.Area), 10),
		strconv.AppendUint(nil, uint64(h.Version), 10),
		protoField(nil, h))
	return append(out, args...)
}

// appendProto appends h's protocol field as a bulk string.
func appendProto(b []byte, h Header) []byte {
	if h.Track != 0 {
		var f [24]byte
		return resp.AppendBulk(b, protoField(f[:0], h))
	}
	switch {
	case h.NoTouch && h.Proto == 3:
		return append(b, "$2\r\n3n\r\n"...)
	case h.NoTouch:
		return append(b, "$2\r\n2n\r\n"...)
	case h.Proto == 3:
		return append(b, "$1\r\n3\r\n"...)
	}
	return append(b, "$1\r\n2\r\n"...)
}

// protoField appends h's protocol field: the digit, then the flags.
func protoField(b []byte, h Header) []byte {
	b = strconv.AppendUint(b, uint64(h.Proto), 10)
	if h.NoTouch {
		b = append(b, 'n')
	}
	if h.Track != 0 {
		b = append(b, 't')
		b = strconv.AppendUint(b, h.Track, 10)
	}
	return b
}

// parseProto reads a protocol field: 2 or 3, then the flags.
func parseProto(b []byte, h *Header) bool {
	if len(b) == 0 || (b[0] != '2' && b[0] != '3') {
		return false
	}
	h.Proto = int(b[0] - '0')
	for i := 1; i < len(b); i++ {
		switch b[i] {
		case 'n':
			h.NoTouch = true
		case 't':
			id, ok := redisnum.ParseUint(b[i+1:])
			if !ok || id == 0 {
				return false
			}
			h.Track = id
			return true
		default:
			return false
		}
	}
	return true
}

// ErrBadEnvelope is Parse's answer to fields that are not numbers in range.
var ErrBadEnvelope = errors.New("ERR bad envelope: TAIR.X <area> <table-version> <proto> <cmd> ...")

// ErrEnvelopeArity is Parse's answer to an envelope without a command.
var ErrEnvelopeArity = errors.New("ERR wrong number of arguments for 'tair.x' command")

// Parse reads the envelope args (args[0] is an envelope name, as KindOf
// tells) and returns its header and the command it carries. It does not
// allocate: the command is a subslice of args.
func Parse(args [][]byte) (Header, [][]byte, error) {
	kind, ok := KindOf(args[0])
	if !ok {
		return Header{}, nil, ErrBadEnvelope
	}
	if len(args) < Fields+1 {
		return Header{}, nil, ErrEnvelopeArity
	}
	area, ok1 := redisnum.ParseUint(args[1])
	ver, ok2 := redisnum.ParseUint(args[2])
	h := Header{Kind: kind, Area: uint16(area), Version: route.Version(ver)}
	if !ok1 || !ok2 || area > route.MaxArea || !parseProto(args[3], &h) {
		return Header{}, nil, ErrBadEnvelope
	}
	return h, args[Fields:], nil
}

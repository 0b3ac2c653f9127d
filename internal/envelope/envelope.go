// Package envelope is the contract between proxies and dataservers, kept in
// one place so that neither side writes or reads it by hand: the envelope a
// proxy wraps each command in, and the refusals that tell it to send the
// command again (NOTMASTER, TRYAGAIN) or that the outcome of a write is
// unknown (a TIMEOUT whose write may have applied).
//
// The envelope, a RESP array:
//
//	TAIR.X  <area> <table-version> <proto 2|3> <cmd> <args...>   to a bucket's master
//	TAIR.XR <area> <table-version> <proto 2|3> <cmd> <args...>   a read a slave may serve
//	TAIR.XF <area> <table-version> <proto 2|3> <cmd> <args...>   forwarded by a former master
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
	if h.Proto == 3 {
		b = append(b, "$1\r\n3\r\n"...)
	} else {
		b = append(b, "$1\r\n2\r\n"...)
	}
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
		strconv.AppendUint(nil, uint64(h.Proto), 10))
	return append(out, args...)
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
	proto, ok3 := redisnum.ParseUint(args[3])
	if !ok1 || !ok2 || !ok3 || area > route.MaxArea || (proto != 2 && proto != 3) {
		return Header{}, nil, ErrBadEnvelope
	}
	return Header{Kind: kind, Area: uint16(area), Version: route.Version(ver), Proto: int(proto)}, args[Fields:], nil
}

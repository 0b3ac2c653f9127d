// Package errs holds Tair's result codes and the one error type that carries
// them through engines, dataservers and proxies. Only the edges (resp/, the
// configserver's HTTP API) turn an Error into wire text, through Error.RESP.
package errs

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Code is a Tair return code (alibaba/tair src/common/define.hpp).
type Code int32

// Tair result codes used by this project.
const (
	OK                Code = 0
	KeyTooLong        Code = -5
	ValueTooLong      Code = -6
	DataNotExist      Code = -3998
	VersionError      Code = -3997
	TypeNotMatch      Code = -3996
	ItemEmpty         Code = -3994
	ServerCanNotWork  Code = -3987
	WriteNotOnMaster  Code = -3986
	MigrateBusy       Code = -3984
	InvalidArgument   Code = -3982
	Timeout           Code = -3989
	Locked            Code = -3975
	FlowLimit         Code = -3971
	Quota             Code = -3964
	CounterOutOfRange Code = -5114
	ReadOnly          Code = -5117
	NotSupported      Code = -20008
	Unknown           Code = -3999
	// ScriptConn is this project's, not Tair's: between a dataserver and
	// a proxy only (a script to send on a script connection), never a
	// client's reply.
	ScriptConn Code = -20100
)

// prefixes maps a code to its Redis error prefix (SPEC §5).
var prefixes = map[Code]string{
	KeyTooLong:        "KEYTOOLONG",
	ValueTooLong:      "VALUETOOLONG",
	VersionError:      "VERERROR",
	TypeNotMatch:      "WRONGTYPE",
	WriteNotOnMaster:  "NOTMASTER",
	ServerCanNotWork:  "CLUSTERDOWN",
	MigrateBusy:       "TRYAGAIN",
	Timeout:           "TIMEOUT",
	Locked:            "LOCKED",
	FlowLimit:         "FLOWLIMIT",
	Quota:             "QUOTA",
	CounterOutOfRange: "COUNTEROUTOFRANGE",
	ReadOnly:          "READONLY",
	NotSupported:      "NOTSUPPORTED",
	ScriptConn:        "TRYSCRIPTCONN",
}

// Prefix is the Redis error prefix for c ("ERR" when c has none of its own).
func (c Code) Prefix() string {
	if p, ok := prefixes[c]; ok {
		return p
	}
	return "ERR"
}

// Error is a Tair result with a human message and an optional cause.
type Error struct {
	Code Code
	Msg  string
	Err  error
}

// New returns an Error with code c and message msg.
func New(c Code, msg string) *Error { return &Error{Code: c, Msg: msg} }

// Newf is New with a format.
func Newf(c Code, format string, args ...any) *Error {
	return &Error{Code: c, Msg: fmt.Sprintf(format, args...)}
}

// Wrap returns an Error with code c caused by err.
func Wrap(c Code, err error) *Error { return &Error{Code: c, Msg: err.Error(), Err: err} }

func (e *Error) Error() string {
	return fmt.Sprintf("%s %s (tair %d)", e.Code.Prefix(), e.Msg, int32(e.Code))
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is an *Error with the same code, so that
// errors.Is(err, errs.ErrVersion) matches any version error.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// RESP renders e as the text of a RESP error reply, without the leading '-'
// and the trailing CRLF: "VERERROR version mismatch (tair -3997)".
// WRONGTYPE keeps Redis's exact text.
func (e *Error) RESP() string {
	if e.Code == TypeNotMatch {
		return "WRONGTYPE Operation against a key holding the wrong kind of value"
	}
	msg := strings.ReplaceAll(strings.ReplaceAll(e.Msg, "\r", " "), "\n", " ")
	return fmt.Sprintf("%s %s (tair %d)", e.Code.Prefix(), msg, int32(e.Code))
}

// ReplyCode reads the Tair code that ends an error reply
// ("-VERERROR version mismatch (tair -3997)\r\n" gives VersionError): the
// code of an error this package rendered, wherever it was made. Anything
// else (a value, an error without a code) gives OK.
func ReplyCode(reply []byte) Code {
	if len(reply) == 0 || reply[0] != '-' {
		return OK
	}
	end := len(reply)
	if end >= 2 && reply[end-2] == '\r' && reply[end-1] == '\n' {
		end -= 2
	}
	if end == 0 || reply[end-1] != ')' {
		return OK
	}
	i := bytes.LastIndex(reply[:end], []byte(" (tair "))
	if i < 0 {
		return OK
	}
	n, err := strconv.ParseInt(string(reply[i+len(" (tair "):end-1]), 10, 32)
	if err != nil {
		return OK
	}
	return Code(n)
}

// CodeOf returns the Code carried by err: OK for nil, Unknown for an error
// that is not an *Error.
func CodeOf(err error) Code {
	if err == nil {
		return OK
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return Unknown
}

// Sentinels to compare against with errors.Is.
var (
	ErrNotFound          = New(DataNotExist, "data not exist")
	ErrVersion           = New(VersionError, "version mismatch")
	ErrWrongType         = New(TypeNotMatch, "wrong type")
	ErrKeyTooLong        = New(KeyTooLong, "key too long")
	ErrValueTooLong      = New(ValueTooLong, "value too long")
	ErrNotMaster         = New(WriteNotOnMaster, "not master")
	ErrMigrateBusy       = New(MigrateBusy, "bucket is migrating")
	ErrTimeout           = New(Timeout, "timeout")
	ErrNotSupported      = New(NotSupported, "operation not supported by this engine")
	ErrCounterOutOfRange = New(CounterOutOfRange, "counter out of range")
	ErrLocked            = New(Locked, "key is locked")
	ErrQuota             = New(Quota, "area is over its quota")
	ErrFlowLimit         = New(FlowLimit, "area is over its flow limit")
	ErrReadOnly          = New(ReadOnly, "area is read-only")
	ErrInvalid           = New(InvalidArgument, "invalid argument")
)

// Quoted is a client's argument as Redis quotes it in an error reply
// ("unknown subcommand '%.128s'"): a C string printed with a precision,
// so it ends at the first NUL byte and after precision bytes.
func Quoted(arg []byte, precision int) string {
	if i := bytes.IndexByte(arg, 0); i >= 0 {
		arg = arg[:i]
	}
	return string(arg[:min(len(arg), max(precision, 0))])
}

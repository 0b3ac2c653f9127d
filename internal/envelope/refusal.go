package envelope

import (
	"bytes"
	"strconv"

	"github.com/tairkv/tair/internal/errs"
	"github.com/tairkv/tair/internal/route"
)

// Reason is what a refusal asks of the proxy.
type Reason uint8

const (
	// NotMaster: this node does not serve the bucket (as the envelope
	// asked) under its table; the proxy looks the bucket up again.
	NotMaster Reason = iota + 1
	// TryAgain: the bucket is frozen for a migration's last step; the
	// same node serves it again in milliseconds, or the table moves on.
	TryAgain
	// ScriptConn: a script that came on a pipelined connection and does
	// not run there (not cached on the node, or its runs take long); the
	// proxy sends it on a script connection (dataserver/script.go).
	ScriptConn
)

// Refusal is a dataserver's answer that it did not run a command. Its
// text (Err, Append) is the one reply a proxy decodes (Decode): the
// proxy never reads anything else out of an error's message.
type Refusal struct {
	Reason Reason
	// Bucket is the refused command's bucket, when HasBucket.
	Bucket    route.BucketID
	HasBucket bool
	// Table is the refusing node's table version (NotMaster).
	Table route.Version
	// LeaseLapsed: the table names this node master, but no configserver
	// confirmed it in time (NotMaster). Refreshing the table does not
	// help; the proxy retries for its whole time budget.
	LeaseLapsed bool
	// Note is for people only: why, beyond the reason (it ends the
	// message in parentheses).
	Note string
}

// NotMasterOf is the refusal of bucket b by a node whose table is v.
func NotMasterOf(b route.BucketID, v route.Version) *Refusal {
	return &Refusal{Reason: NotMaster, Bucket: b, HasBucket: true, Table: v}
}

// TryAgainOf is the refusal of bucket b while it is frozen for a move.
func TryAgainOf(b route.BucketID) *Refusal {
	return &Refusal{Reason: TryAgain, Bucket: b, HasBucket: true}
}

// ScriptConnOf is the refusal of a script for bucket b on a pipelined
// connection.
func ScriptConnOf(b route.BucketID) *Refusal {
	return &Refusal{Reason: ScriptConn, Bucket: b, HasBucket: true}
}

// leaseText is how a lapsed lease reads in a NOTMASTER reply.
const leaseText = ": master lease lapsed"

// Err is r as the error a dataserver answers with.
func (r *Refusal) Err() *errs.Error {
	var msg []byte
	var code errs.Code
	switch r.Reason {
	case TryAgain:
		code = errs.MigrateBusy
		msg = append(msg, "bucket "...)
		msg = strconv.AppendUint(msg, uint64(r.Bucket), 10)
		msg = append(msg, " is migrating"...)
	case ScriptConn:
		code = errs.ScriptConn
		msg = append(msg, "bucket "...)
		msg = strconv.AppendUint(msg, uint64(r.Bucket), 10)
		msg = append(msg, " runs this script on a script connection"...)
	default:
		code = errs.WriteNotOnMaster
		if r.HasBucket {
			msg = append(msg, "bucket "...)
			msg = strconv.AppendUint(msg, uint64(r.Bucket), 10)
			msg = append(msg, ' ')
		}
		msg = append(msg, "table "...)
		msg = strconv.AppendUint(msg, uint64(r.Table), 10)
		if r.LeaseLapsed {
			msg = append(msg, leaseText...)
		}
	}
	if r.Note != "" {
		msg = append(msg, " ("...)
		msg = append(msg, r.Note...)
		msg = append(msg, ')')
	}
	return errs.New(code, string(msg))
}

// Error makes a Refusal an error (the dataserver's reply text).
func (r *Refusal) Error() string { return r.Err().RESP() }

var (
	prefixNotMaster = []byte("-NOTMASTER ")
	prefixTryAgain  = []byte("-TRYAGAIN ")
	prefixScript    = []byte("-TRYSCRIPTCONN ")
)

// Decode reads a reply as a refusal: ok is false for any reply that is
// not one (a value, or an error that is the command's own answer).
func Decode(reply []byte) (r Refusal, ok bool) {
	var rest []byte
	switch {
	case bytes.HasPrefix(reply, prefixNotMaster):
		r.Reason, rest = NotMaster, reply[len(prefixNotMaster):]
	case bytes.HasPrefix(reply, prefixTryAgain):
		r.Reason, rest = TryAgain, reply[len(prefixTryAgain):]
	case bytes.HasPrefix(reply, prefixScript):
		r.Reason, rest = ScriptConn, reply[len(prefixScript):]
	default:
		return r, false
	}
	if b, tail, found := field(rest, "bucket "); found {
		r.Bucket, r.HasBucket, rest = route.BucketID(b), true, tail
	}
	if r.Reason == NotMaster {
		if v, tail, found := field(rest, "table "); found {
			r.Table, rest = route.Version(v), tail
		}
		if bytes.HasPrefix(rest, []byte(leaseText)) {
			r.LeaseLapsed, rest = true, rest[len(leaseText):]
		}
	}
	return r, true
}

// field reads "<name><decimal>" and the space after it from the front of b.
func field(b []byte, name string) (uint64, []byte, bool) {
	if !bytes.HasPrefix(b, []byte(name)) {
		return 0, b, false
	}
	b = b[len(name):]
	i := 0
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	if i == 0 || i > 19 {
		return 0, b, false
	}
	n, _ := strconv.ParseUint(string(b[:i]), 10, 64)
	b = b[i:]
	if len(b) > 0 && b[0] == ' ' {
		b = b[1:]
	}
	return n, b, true
}

// mayHaveApplied ends the message of every error that leaves a write's
// outcome unknown: it may have run, on this node or on its slaves.
const mayHaveApplied = "; the write may have applied"

// Unsure is the TIMEOUT answer to a write whose outcome is unknown:
// why, then the words clients (and the fault tests) look for.
func Unsure(why string) *errs.Error {
	return errs.New(errs.Timeout, why+mayHaveApplied)
}

package proxy

import (
	"fmt"

	"github.com/tairkv/tair/internal/envelope"
	"github.com/tairkv/tair/internal/errs"
	"github.com/tairkv/tair/internal/route"
	"github.com/tairkv/tair/resp"
)

// The proxy's own answers about the cluster, each an *errs.Error so that
// its reply carries the prefix and the Tair code (SPEC §5) the same way
// wherever it is made. Redis's own errors (syntax, arity, NOAUTH,
// CROSSSLOT ...) keep Redis's exact text instead.
var (
	// errNoTable: no bucket table has come from a configserver since
	// the proxy started.
	errNoTable = errs.New(errs.ServerCanNotWork, "the proxy has no bucket table yet")
	// errNoMaster: a request's bucket has no master in the table (a
	// failover in progress); giveUp names the bucket.
	errNoMaster = errs.New(errs.ServerCanNotWork, "bucket has no master")
	// errSomeBucketNoMaster: a command over every bucket found one
	// without a master.
	errSomeBucketNoMaster = errs.New(errs.ServerCanNotWork, "a bucket has no master")
	// errNoDataserver: the table names no dataserver at all.
	errNoDataserver = errs.New(errs.ServerCanNotWork, "no dataserver available")
)

// crossSlot is Redis Cluster's refusal of keys in different slots
// (buckets, here), in its exact text, which cluster clients know.
const crossSlot = "CROSSSLOT Keys in request don't hash to the same slot"

// bucketNoMaster is errNoMaster for bucket b.
func bucketNoMaster(b route.BucketID) *errs.Error {
	return errs.New(errs.ServerCanNotWork, fmt.Sprintf("bucket %d has no master", b))
}

// clusterDown is the answer to a request no dataserver could take: err
// says why (a lost or refused connection).
func clusterDown(err error) *errs.Error {
	if e, ok := err.(*errs.Error); ok && e.Code == errs.ServerCanNotWork {
		return e
	}
	return errs.Wrap(errs.ServerCanNotWork, err)
}

// timedOut is the answer to a request whose dataserver did not answer:
// a write's outcome is unknown then.
func timedOut(err error, write bool) *errs.Error {
	if write {
		return envelope.Unsure(err.Error())
	}
	return errs.Wrap(errs.Timeout, err)
}

// setErr answers r with err, without sending it anywhere.
func (r *request) setErr(err error) {
	r.reply = resp.AppendErr(r.reply[:0], err)
	r.local = true
}

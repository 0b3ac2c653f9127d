package engines

// GroupCommitter is offered by a persistent engine whose writes under
// SyncGroup return once committed, before the fsync that makes them
// durable: the caller acknowledges a write only after WaitDurable of a
// ticket taken after it, and one fsync serves every write committed
// before it started, whoever waits for it. The dataserver takes one
// ticket per batch of requests (and per replication batch it applies),
// so a pipeline of writes, or many connections' writes, share an fsync
// instead of paying one each.
type GroupCommitter interface {
	// CommitTicket names every write committed so far.
	CommitTicket() uint64
	// Durable reports whether the writes a ticket names are on disk
	// (without waiting).
	Durable(ticket uint64) bool
	// WaitDurable returns once they are, or with the error of the fsync
	// that should have made them so.
	WaitDurable(ticket uint64) error
}

// GroupCommitOf returns e's GroupCommitter, or nil when its writes are
// durable (or not meant to be) when they return.
func GroupCommitOf(e Engine) GroupCommitter {
	if g, ok := e.(interface{ GroupCommit() GroupCommitter }); ok {
		return g.GroupCommit()
	}
	return nil
}

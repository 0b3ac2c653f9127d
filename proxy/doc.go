// Package proxy is Tair's stateless RESP front door: it parses client
// requests, routes each key to its bucket's dataserver over pipelined
// backend connections, retries what the cluster asks it to retry
// (NOTMASTER, TRYAGAIN, lost connections), splits and merges multi-key
// commands, and answers connection-level commands itself.
//
// # What the proxy sends to dataservers
//
// Every forwarded command is wrapped in one RESP array:
//
//	TAIR.X  <area> <proxy-table-version> <2|3> <cmd> <args...>   to a bucket's master
//	TAIR.XR <area> <proxy-table-version> <2|3> <cmd> <args...>   a read a slave may serve (ReadFromSlave)
//
// and the dataserver replies in the RESP version given. Beyond the plain
// Redis/Tair commands the proxy relies on these forms (always inside the
// envelope, which gives the area and protocol):
//
//	DBSIZE                                   :n = the area's keys in the buckets the node is master of
//	FLUSHDB [ASYNC|SYNC]                     +OK, the area emptied on that node (sent to every node)
//	FLUSHALL [ASYNC|SYNC]                    +OK, every area emptied on that node (sent to every node)
//	SCANBUCKET <b> <cursor> [MATCH p] [COUNT n] [TYPE t]
//	                                         [next-cursor, [key...]] of bucket b, "0" when the bucket is done;
//	                                         NOTMASTER unless the node is b's master (or slave, under TAIR.XR)
//	MULTIEXEC <n> (<argc> <arg>...){n} [WATCH <m> (<key> <version>){m}]
//	                                         EXEC's reply: an array of n replies, atomic on one bucket; a null
//	                                         array when a watched key's version differs; CROSSSLOT otherwise
//	TAIR.KEYVER <key>...                     array of the keys' versions (0 = missing), for WATCH
//	TAIR.STAT [area], TAIR.DELALL area,
//	TAIR.HOTKEYS [area]                      sent to every node; replies merged (STAT: keys exact via DBSIZE,
//	                                         bytes divided by the copy count, other counters summed)
//	BLPOP/BRPOP/BLMOVE/BRPOPLPUSH/BLMPOP/BZPOPMIN/BZPOPMAX/BZMPOP
//	                                         one non-blocking attempt: the element(s), or a null reply
//
// Errors the proxy absorbs:
//
//	-NOTMASTER bucket <b> table <v> (tair -3986)   refetch the table (now), retry
//	-TRYAGAIN bucket <b> is migrating (tair -3984) retry after 1..5 ms
//	a lost or refused connection                   refetch the table, retry when the request was
//	                                               never written, or is not a write
//
// within RetryBudget (time) and RetryAttempts (count, applied only to a
// NOTMASTER from a node whose table is as new as the proxy's and whose
// lease holds: a master whose lease lapsed ("master lease lapsed") or
// that has yet to learn the proxy's table is a failover in progress, and
// TRYAGAIN a migration's freeze, both bounded by time alone); then the client gets the last NOTMASTER/TRYAGAIN reply, or
// -CLUSTERDOWN when no master could be reached. A write that may have
// reached a dataserver whose connection then broke is never sent twice:
// the client gets -TIMEOUT ... the write may have applied (tair -3989).
//
// # What the proxy sends to other proxies
//
// Pub/sub lives in the proxies (pubsub.go): a PUBLISH or SPUBLISH is
// delivered to this proxy's subscribers and sent to every live peer
// proxy over one pipelined connection per peer (pubsub_peer.go),
// authenticated as clients are, as
//
//	TAIR.PUBFWD PUBLISH|SPUBLISH <channel> <message>   :receivers on that proxy
//	TAIR.PUBFWD CHANNELS|SHARDCHANNELS [pattern]       its channels with subscribers
//	TAIR.PUBFWD NUMSUB|SHARDNUMSUB <channel>...        [count...] on that proxy
//	TAIR.PUBFWD PATTERNS                               its patterns (NUMPAT counts their union)
//	TAIR.PUBFWD NUMPAT                                 :its patterns
//
// answered for that proxy alone (never forwarded again); answers later
// than Config.PubSubPeerWait count 0. At most once, as Redis.
//
// # Request path
//
// Client connections are served on event loops (frontend.go; EventLoops,
// default GOMAXPROCS). A loop parses what a client sent and forwards each
// plain keyed command of one bucket (authenticated, outside MULTI)
// itself (or answers a GET from the hot-key cache), on the loop's own pipelined connection to the
// bucket's node, written once per loop round for every client served in
// it; replies come back on the same loop and are written in the client's
// order. Everything else goes, in a batch with the commands after it, to
// the session's goroutine (session.go slowLoop), which runs dispatch.go:
// read every command of the batch (at most MaxPipeline), route and send
// each at once, wait for the replies in order (retry.go). Commands that need the
// whole cluster or wait (SCAN, DBSIZE, FLUSHDB, EXEC, blocking pops,
// WATCH) are barriers: the commands before them are answered first. The
// loop hands a batch over only once the client's forwarded commands are
// answered and reads no more of the client until the batch's output is
// back, so a client's commands run and answer in order. The goroutine
// path and retries use BackendConns shared connections per dataserver
// (backend.go), each with a writer goroutine (writes all that is queued
// at once) and a reader goroutine (completes the requests written, in
// order); a session always uses the same connection per node. Both kinds
// of dataserver connection keep their requests in a pipeline
// (pipeline.go), which holds the rules: replies complete requests in the
// order sent, a request counts as written once handed to the socket, and
// a broken connection fails every request it holds. A retry keeps its
// request's place in the client's order; the requests sent after it may
// run first, as with any retry.
//
// # Multi-key commands over several buckets
//
// MGET, MSET, DEL, UNLINK, EXISTS, TOUCH and TAIR.INVALID are split per bucket (reads
// per master node) and merged in key order (multikey.go). The reads that
// combine whole values, SUNION, SINTER, SDIFF, SINTERCARD, ZUNION,
// ZINTER, ZDIFF, ZINTERCARD and PFCOUNT, are gathered (gather.go): each key's
// value is read from its bucket's master and the operation runs in the
// proxy with Redis's rules. A gathered read is not atomic across
// buckets: each key is read at its own moment, so writes between the
// reads may show in some of the keys and not in others. Keys of one
// bucket still go to the dataserver in one command. The other
// multi-key commands (the Atomic ones: the *STORE forms, MSETNX, RENAME,
// PFMERGE ...) over several buckets are refused with CROSSSLOT.
//
// # Limits
//
// Client requests are parsed by resp.RequestReader, which refuses a bulk
// over MaxBulkLen (CONFIG SET proto-max-bulk-len), a multibulk over
// MaxMultiBulkLen and an inline line over MaxInlineLen before reserving
// memory for them (unauthenticated clients: 10 arguments of 16 KiB, as
// Redis), replies "-ERR Protocol error: ..." and closes. A client that
// does not read its replies holds about MaxOutputBuffer of them: the
// forwarded commands in flight are bounded by a window that shrinks as
// replies grow, the proxy stops reading its commands while its unsent
// output is over the limit, and closes it when that lasts WriteTimeout.
// Commands that pile up unread (behind a blocking pop, say) are bounded
// by twice MaxBulkLen plus 1 MiB (Redis's client-query-buffer-limit).
package proxy

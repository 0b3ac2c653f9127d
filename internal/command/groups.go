package command

import "strings"

// Groups name the command families as Redis's COMMAND DOCS does (plus
// Tair's own), for COMMAND replies and the README's command table.

// groupOf lists the commands whose group their name does not tell.
var groupOf = map[string]string{}

func init() {
	for group, names := range map[string]string{
		"generic": "copy del dump exists expire expireat expiretime keys migrate object persist pexpire pexpireat " +
			"pexpiretime pttl randomkey rename renamenx restore scan sort sort_ro touch ttl type unlink wait",
		"string": "append decr decrby get getdel getex getrange getset incr incrby incrbyfloat lcs mget mset " +
			"msetnx psetex set setex setnx setrange strlen substr",
		"bitmap": "bitcount bitfield bitfield_ro bitop bitpos getbit setbit",
		"list": "blmove blmpop blpop brpop brpoplpush lindex linsert llen lmove lmpop lpop lpos lpush lpushx " +
			"lrange lrem lset ltrim rpop rpoplpush rpush rpushx",
		"set": "sadd scard sdiff sdiffstore sinter sintercard sinterstore sismember smembers smismember smove " +
			"spop srandmember srem sscan sunion sunionstore",
		"transactions": "discard exec multi unwatch watch",
		"connection":   "asking auth client echo hello ping quit readonly readwrite reset select",
		"server":       "command config dbsize flushall flushdb info lastsave memory role slowlog time",
		"cluster":      "cluster",
		"pubsub": "psubscribe publish pubsub punsubscribe spublish ssubscribe subscribe sunsubscribe " +
			"unsubscribe",
		"tairstring": "cas cad",
		"scripting":  "eval evalsha eval_ro evalsha_ro fcall fcall_ro function script",
	} {
		for _, n := range strings.Fields(names) {
			groupOf[n] = group
		}
	}
}

// Group is the family of the command named name (lower case): one of
// Redis's groups (generic, string, bitmap, hyperloglog, geo, list, set,
// sorted_set, hash, transactions, connection, server, cluster) or Tair's
// (tair, tairstring, tairhash).
func Group(name string) string {
	if g, ok := groupOf[name]; ok {
		return g
	}
	for _, p := range groupPrefixes {
		if strings.HasPrefix(name, p.prefix) {
			return p.group
		}
	}
	return ""
}

// groupPrefixes tell the other commands' groups by their name's prefix,
// tried in order ("exh" before "ex").
var groupPrefixes = []struct{ prefix, group string }{
	{"tair.", "tair"},
	{"exh", "tairhash"},
	{"ex", "tairstring"},
	{"geo", "geo"},
	{"x", "stream"},
	{"pf", "hyperloglog"},
	{"h", "hash"},
	{"z", "sorted_set"},
	{"bz", "sorted_set"},
}

// Refused names the Redis 7 commands this cluster does not run, with the
// reason a user reads in the README. A name here is never in the table.
var Refused = map[string]string{}

func init() {
	for reason, names := range map[string]string{
		"areas are Tair's namespaces; keys do not move between them":                 "move swapdb",
		"persistence belongs to the engine (ldb, kdb); backups are `tair ctl` work":  "save bgsave bgrewriteaof",
		"replication and failover are the cluster's own, run by the configserver":    "sync psync replicaof slaveof failover",
		"stop a process with a signal; the cluster is administered with `tair ctl`":  "shutdown",
		"passwords and users come from the proxy's configuration (AUTH, HELLO AUTH)": "acl",
		"not exposed by the proxy": "debug monitor latency lolwut module",
	} {
		for _, n := range strings.Fields(names) {
			Refused[n] = reason
		}
	}
}

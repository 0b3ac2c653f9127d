package exec

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tairkv/tair/engines/generic/memstore"
	"github.com/tairkv/tair/engines/ldb"
)

func TestKeyCommands(t *testing.T) { onEngines(t, testKeyCommands) }

func testKeyCommands(t *testing.T, engine string) {
	h := newHarnessOn(t, engine)
	// OBJECT FREQ after SET, SET, SET: made at LFU_INIT_VAL 5, the first
	// overwrite's increment is certain (6), the second's (p = 1/11) is
	// drawn as a miss. Persistent engines track no access.
	defer memstore.SetLFURandom(func() float64 { return 0.999 })()
	freq, idle := num(6), num(0)
	if engine == ldb.Name {
		freq = errReply("ERR access frequency not tracked: the ldb engine keeps no per-read state")
		idle = errReply("ERR idle time not tracked: the ldb engine keeps no per-read state")
	}
	h.run([]step{
		{"MSET a 1 b 2 c 3", ok},
		{"EXISTS a a b nope", num(3)},
		{"TOUCH a nope", num(1)},
		{"DEL a nope a", num(1)},
		{"UNLINK b c", num(2)},
		{"EXISTS a b c", num(0)},
		{"TYPE a", "+none\r\n"},
		{"SET {t}s v EX 100", ok},
		{"RENAME {t}s {t}d", ok},
		{"TTL {t}d", num(100)},
		{"RENAME {t}s {t}d", errReply("ERR no such key")},
		{"RENAME s d", errReply(ErrTextCrossSlot)},
		{"RENAMENX {t}d {t}d", num(0)},
		{"RENAME {t}d {t}d", ok},
		{"SET {t}e x", ok},
		{"RENAMENX {t}d {t}e", num(0)},
		{"COPY {t}d {t}e", num(0)},
		{"COPY {t}d {t}e REPLACE", num(1)},
		{"GET {t}e", bulk("v")},
		{"TTL {t}e", num(100)},
		{"COPY {t}d {t}d", errReply("ERR source and destination objects are the same")},
		{"COPY {t}d {t}d DB 1", num(1)},
		{"COPY {t}d {t}d DB 1024", errReply("ERR DB index is out of range")},
		{"COPY {t}d {t}d DB x", notInt},
		{"COPY {t}d {t}x FOO", syntax},
		{"COPY {t}nope {t}x", num(0)},
		{"SET n 123", ok},
		{"OBJECT ENCODING n", bulk("int")},
		{"SET n abc", ok},
		{"OBJECT ENCODING n", bulk("embstr")},
		{"SET n " + strings.Repeat("x", 45), ok},
		{"OBJECT ENCODING n", bulk("raw")},
		{"OBJECT FREQ n", freq},
		{"OBJECT IDLETIME n", idle},
		{"OBJECT REFCOUNT n", num(1)},
		{"OBJECT ENCODING nope", null},
		{"OBJECT FOO n", errReply("ERR unknown subcommand 'FOO'. Try OBJECT HELP.")},
		{"OBJECT ENCODING", errReply("ERR wrong number of arguments for 'object|encoding' command")},
		{"MEMORY USAGE nope", null},
		{"MEMORY USAGE n SAMPLES x", notInt},
		{"MEMORY USAGE n FOO", syntax},
		{"PERSIST nope", num(0)},
		{"EXPIRE n 10 NX XX", errReply("ERR NX and XX, GT or LT options at the same time are not compatible")},
		{"EXPIRE n 10 GT LT", errReply("ERR GT and LT options at the same time are not compatible")},
		{"EXPIRE n 10 FOO", errReply("ERR Unsupported option FOO")},
		{"EXPIRE n 9223372036854775807", errReply("ERR invalid expire time in 'expire' command")},
		{"TTL n", num(-1)},
		{"PTTL nope", num(-2)},
		{"EXPIRETIME n", num(-1)},
	})
	if got := h.line("MEMORY USAGE n"); !strings.HasPrefix(got, ":") || got == ":0\r\n" {
		t.Errorf("MEMORY USAGE n = %q", got)
	}
	if got := h.line("OBJECT HELP"); !strings.HasPrefix(got, "*15\r\n+OBJECT <subcommand>") {
		t.Errorf("OBJECT HELP = %q", got)
	}
	h.area = 1
	h.run([]step{{"GET {t}d", bulk("v")}, {"TTL {t}d", num(100)}})
}

// Data structures (registered by the ds files of this package) through
// the generic key commands.
func TestKeyCommandsOnObjects(t *testing.T) { onEngines(t, testKeyCommandsOnObjects) }

func testKeyCommandsOnObjects(t *testing.T, engine string) {
	if !Supported("hset") || !Supported("rpush") {
		t.Skip("hash/list commands not registered")
	}
	h := newHarnessOn(t, engine)
	h.run([]step{
		{"HSET {t}h f v", num(1)},
		{"TYPE {t}h", "+hash\r\n"},
		{"OBJECT ENCODING {t}h", bulk("listpack")},
		{"GET {t}h", wrongT},
		{"COPY {t}h {t}h2", num(1)},
		{"HSET {t}h2 f w", num(0)},
		{"HGET {t}h f", bulk("v")}, // a deep copy
		{"HGET {t}h2 f", bulk("w")},
		{"EXPIRE {t}h 100", num(1)},
		{"RENAME {t}h {t}h3", ok},
		{"HGET {t}h3 f", bulk("v")},
		{"TTL {t}h3", num(100)},
		{"EXISTS {t}h", num(0)},
		{"PERSIST {t}h3", num(1)},
		{"TTL {t}h3", num(-1)},
		{"PERSIST {t}h3", num(0)},
		{"SET {t}s x", ok},
		{"COPY {t}s {t}h3", num(0)},
		{"COPY {t}h3 {t}h4", num(1)},
		{"COPY {t}s {t}h4 REPLACE", num(1)},
		{"TYPE {t}h4", "+string\r\n"},
		{"HGET {t}h4 f", wrongT},
		{"GET {t}h3", wrongT},
		{"STRLEN {t}h3", wrongT},
		{"EXGET {t}h3", wrongT},
		{"HSET {t}h5 a 1", num(1)},
		{"RENAME {t}h5 {t}s", ok},
		{"TYPE {t}s", "+hash\r\n"},
		{"HGET {t}s a", bulk("1")},
		{"EXISTS {t}h5 {t}s", num(1)},
		{"DEL {t}s {t}h4", num(2)},
		{"SADD {t}is 1 2 3", num(3)},
		{"OBJECT ENCODING {t}is", bulk("intset")},
		{"SADD {t}is x", num(1)},
		{"OBJECT ENCODING {t}is", bulk("listpack")},
		{"SADD {t}is " + strings.Repeat("y", 65), num(1)},
		{"OBJECT ENCODING {t}is", bulk("hashtable")},
		{"DEL {t}is", num(1)},
		// hash-max-listpack-entries is 512, zset-max-listpack-entries 128
		{"HSET {t}big " + fieldValues(500), num(500)},
		{"OBJECT ENCODING {t}big", bulk("listpack")},
		{"HSET {t}big " + fieldValues(513), num(13)},
		{"OBJECT ENCODING {t}big", bulk("hashtable")},
		{"DEL {t}big", num(1)},
		{"RPUSH {t}l a b", num(2)},
		{"TYPE {t}l", "+list\r\n"},
		{"DEL {t}l {t}h2 {t}h3", num(3)},
		{"SET {t}l x", ok},
	})
}

// A replica applies what the master propagated: past expiries do not
// delete (the master's DEL does), lock checks are skipped, and nothing
// is propagated further (a slave passes its master's commands on as
// they came).
func TestKeyReplicaMode(t *testing.T) { onEngines(t, testKeyReplicaMode) }

func testKeyReplicaMode(t *testing.T, engine string) {
	h := newHarnessOn(t, engine)
	h.line("SET k v")
	out, prop := h.x.Exec(0, 2, true, [][]byte{[]byte("PEXPIREAT"), []byte("k"), []byte(ms(-time.Second))}, nil)
	if string(out) != num(1) || prop != nil {
		t.Fatalf("replica PEXPIREAT: %q %q", out, prop)
	}
	if got := h.line("GET k"); got != null { // expired by time, not deleted
		t.Fatalf("GET k = %q", got)
	}
	if got := h.line("EXPIRE nope 10"); got != num(0) || h.prop() != nil {
		t.Fatalf("EXPIRE nope: %q %q", got, h.prop())
	}
	h.line("SET {t}a 1")
	h.runProp([]propStep{{"RENAME {t}a {t}b", []string{"RENAME {t}a {t}b"}}})
}

// fieldValues is "f0 v f1 v ..." with n fields.
func fieldValues(n int) string {
	parts := make([]string, 0, 2*n)
	for i := 0; i < n; i++ {
		parts = append(parts, fmt.Sprintf("f%d", i), "v")
	}
	return strings.Join(parts, " ")
}

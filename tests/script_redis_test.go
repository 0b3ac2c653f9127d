package tests

import (
	"fmt"
	"testing"

	"github.com/tairkv/tair/cluster"
	"github.com/tairkv/tair/internal/testcluster"
	"github.com/tairkv/tair/internal/testutil"
)

const testLib = "#!lua name=lib1\nredis.register_function('f1', function(keys, args) return args[1] end)\n" +
	"redis.register_function{function_name='f2', callback=function(keys, args) return redis.call('get', keys[1]) end, flags={'no-writes'}, description='d2'}\n" +
	"redis.register_function('f3', function(keys, args) return redis.call('set', keys[1], args[1]) end)"

// scriptCompare: the scripting commands through the proxy against
// redis-server, replies byte for byte (RESP2 and RESP3).
var scriptCompare = [][]string{
	{"SCRIPT", "FLUSH"}, {"FUNCTION", "FLUSH"},
	{"EVAL", "return 1", "0"}, {"EVAL", "return {1, 'a', {ok='x'}}", "0"}, {"EVAL", "return redis.call('set', KEYS[1], ARGV[1])", "1", "k", "v"},
	{"EVAL", "return redis.call('get', KEYS[1])", "1", "k"}, {"EVAL", "return 1"}, {"EVAL", "return 1", "x"},
	{"EVAL", "return 1", "-1"}, {"EVAL", "return 1", "2", "a"}, {"EVAL", "return (", "0"}, {"EVAL", "return x", "0"},
	{"EVAL", "return redis.call('nosuch')", "0"}, {"EVALSHA", "ffffffffffffffffffffffffffffffffffffffff", "0"},
	{"EVALSHA", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db", "0"}, {"EVALSHA_RO", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db", "0"},
	{"EVAL_RO", "return redis.call('set', KEYS[1], 'x')", "1", "k"}, {"EVAL_RO", "return redis.call('get', KEYS[1])", "1", "k"},
	{"SCRIPT", "LOAD", "return 'loaded'"}, {"EVALSHA", "e2d2e1e1bbd14f1cf82f6e4c40d19f8e3dfbc6d5", "0"},
	{"SCRIPT", "EXISTS", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db", "ffffffffffffffffffffffffffffffffffffffff"},
	{"SCRIPT", "LOAD", "return ("}, {"SCRIPT", "LOAD"}, {"SCRIPT", "EXISTS"}, {"SCRIPT", "FLUSH", "FOO"},
	{"SCRIPT", "KILL"}, {"SCRIPT", "KILL", "x"}, {"SCRIPT", "FOO"}, {"SCRIPT", "HELP"},
	{"SCRIPT", "FLUSH", "ASYNC"}, {"SCRIPT", "EXISTS", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db"},
	{"EVAL", "redis.setresp(3) return redis.call('hgetall', KEYS[1])", "1", "h"},
	{"EVAL", "redis.call('hset', KEYS[1], 'a', '1') redis.setresp(3) return redis.call('hgetall', KEYS[1])", "1", "h"},
	{"EVAL", "return {double=1.5}", "0"}, {"EVAL", "return {map={a='b'}}", "0"}, {"EVAL", "return false", "0"},
	// functions
	{"FUNCTION", "LOAD", testLib}, {"FUNCTION", "LOAD", testLib}, {"FCALL", "f1", "0", "hello"},
	{"FCALL", "f3", "1", "fk", "fv"}, {"FCALL_RO", "f2", "1", "fk"}, {"FCALL_RO", "f1", "0", "x"}, {"FCALL", "nof", "0"},
	{"FCALL", "f1"}, {"FCALL", "f1", "x"}, {"FCALL", "f1", "-1"}, {"FCALL", "f1", "5"}, {"FCALL", "nof", "x"},
	{"FUNCTION", "LIST", "LIBRARYNAME", "zz*"}, {"FUNCTION", "LIST", "FOO"}, {"FUNCTION", "LIST", "LIBRARYNAME"},
	{"FUNCTION", "LIST", "WITHCODE", "WITHCODE"}, {"FUNCTION", "STATS"}, {"FUNCTION", "STATS", "x"}, {"FUNCTION", "DELETE", "nolib"}, {"FUNCTION", "LOAD", "x"},
	{"FUNCTION", "LOAD", "#!lua name=l3\nreturn 1"}, {"FUNCTION", "LOAD", "#!lua name=l4\nredis.call('ping')"},
	{"FUNCTION", "LOAD", "#!py name=x\n"}, {"FUNCTION", "LOAD", "#!lua x=y\n"}, {"FUNCTION", "LOAD", "#!lua\n"},
	{"FUNCTION", "LOAD", "#!lua name=lib2\nredis.register_function('f1', function() return 1 end)"},
	{"FUNCTION", "LOAD", "#!lua name=l6\nredis.register_function('f9', function() error('boom') end)"}, {"FCALL", "f9", "0"},
	{"FUNCTION", "LOAD", "REPLACE", "#!lua name=l6\nredis.register_function('f9', function() return 'new' end)"}, {"FCALL", "f9", "0"},
	{"FUNCTION", "LOAD", "FOO", "#!lua name=l6\nredis.register_function('f9', function() return 'new' end)"},
	{"FUNCTION", "KILL"}, {"FUNCTION", "DELETE", "l6"}, {"FCALL", "f9", "0"}, {"FUNCTION", "FLUSH", "SYNC"},
	{"FUNCTION", "FLUSH", "FOO"}, {"FUNCTION", "FLUSH", "A", "B"}, {"FUNCTION", "LIST"}, {"FUNCTION", "STATS"},
	// one function per library: Redis lists them in its dict's order
	{"FUNCTION", "LOAD", "#!lua name=one\nredis.register_function{function_name='o1', callback=function() return 1 end, description='x', flags={'no-writes', 'allow-stale'}}"},
	{"FUNCTION", "LIST"}, {"FUNCTION", "LIST", "WITHCODE"}, {"FUNCTION", "LIST", "LIBRARYNAME", "on*"},
	{"FUNCTION", "FOO"}, {"FUNCTION", "LOAD"}, {"FUNCTION", "DELETE"}, {"FUNCTION", "KILL", "x"}, {"FUNCTION", "HELP"},
	{"FUNCTION", "HELP", "x"}, {"SCRIPT", "HELP", "x"}, {"SCRIPT", "FLUSH", "A", "B"}, {"FUNCTION", "RESTORE"},
	{"FUNCTION", "DUMP", "x"}, {"SCRIPT", "DEBUG"}, {"FUNCTION", "REFRESH"},
	// DUMP and RESTORE: $DUMP is redis-server's last FUNCTION DUMP payload
	{"FUNCTION", "DUMP"}, {"FUNCTION", "RESTORE", "$DUMP"}, {"FUNCTION", "RESTORE", "$DUMP", "FOO"},
	{"FUNCTION", "RESTORE", "$DUMP", "REPLACE"}, {"FUNCTION", "RESTORE", "$DUMP", "APPEND"}, {"FUNCTION", "RESTORE", "junk"},
	{"FUNCTION", "RESTORE", "$DUMP", "FLUSH"}, {"FCALL", "o1", "0"}, {"FUNCTION", "FLUSH"}, {"FUNCTION", "DUMP"},
	{"FUNCTION", "RESTORE", "$DUMP"}, {"FUNCTION", "LOAD", "#!lua name=other\nredis.register_function('o1', function() return 2 end)"},
	{"FUNCTION", "LOAD", "#!lua name=one\nredis.register_function('o1', function() return 3 end)"},
	{"FUNCTION", "DUMP"}, {"FUNCTION", "DELETE", "one"},
	{"FUNCTION", "LOAD", "#!lua name=other\nredis.register_function('o1', function() return 2 end)"},
	{"FUNCTION", "RESTORE", "$DUMP"}, {"FUNCTION", "RESTORE", "$DUMP", "REPLACE"}, {"FUNCTION", "RESTORE", "$DUMP", "FLUSH"},
	{"FCALL", "o1", "0"}, {"SET", "kk", "v"}, {"DUMP", "kk"}, {"FUNCTION", "RESTORE", "$DUMP"},
	// redis.register_function's errors carry no position
	{"FUNCTION", "LOAD", "#!lua name=zz\nredis.register_function{function_name='f1', callback=function() return 1 end, flags={'bad'}}"},
	{"FUNCTION", "LOAD", "#!lua name=zz\nredis.register_function{function_name='f1', callback=function() return 1 end, flags=3}"},
	{"FUNCTION", "LOAD", "#!lua name=zz\nredis.register_function{function_name='f1', callback=function() return 1 end, foo=3}"},
	{"FUNCTION", "LOAD", "#!lua name=zz\nredis.register_function('f1')"}, {"FUNCTION", "LOAD", "#!lua name=zz\nredis.register_function(3)"},
	{"FUNCTION", "LOAD", "#!lua name=zz\nredis.register_function('f1', function() end) redis.register_function('f1', function() end)"},
	{"FUNCTION", "LOAD", "#!lua name=zz\nredis.register_function{function_name='f1'}"},
	{"FUNCTION", "LOAD", "#!lua name=zz\nredis.register_function('f1', function() end, 3)"},
	// EVALSHA of what is not a sha: NOSCRIPT before numkeys
	{"EVALSHA", "", "x"}, {"EVALSHA_RO", "abc", "-1"}, {"EVALSHA", "ffffffffffffffffffffffffffffffffffffffff", "x"},
	// a read-only script may call a writing container's read-only subcommand
	{"EVAL_RO", "return redis.pcall('xgroup', 'help')", "0"}, {"EVAL_RO", "return redis.pcall('xgroup', 'destroy', KEYS[1], 'g')", "1", "k"},
	// containers are checked by their subcommand, as in Redis
	{"EVAL", "return redis.pcall(unpack(ARGV))", "0", "xinfo", "0"}, {"EVAL", "return redis.pcall(unpack(ARGV))", "0", "xinfo", "stream"},
	{"EVAL", "return redis.pcall(unpack(ARGV))", "0", "xgroup", "foo"}, {"EVAL", "return redis.pcall(unpack(ARGV))", "0", "object"},
	{"EVAL", "return redis.pcall(unpack(ARGV))", "0", "object", "encoding"}, {"EVAL", "return redis.pcall(unpack(ARGV))", "0", "config", "get"},
	{"EVAL", "return redis.pcall(unpack(ARGV))", "0", "client", "list"}, {"EVAL", "return redis.pcall(unpack(ARGV))", "0", "memory", "usage"},
	{"EVAL", "return redis.pcall('ping', 'a', 'b')", "0"}, {"EVAL", "return redis.call('ping', 'a', 'b')", "0"}, {"EVAL", "return redis.call('ping', 'a')", "0"},
	// FUNCTION LOAD's options: every argument before the code
	{"FUNCTION", "LOAD", "0", "0", "0"}, {"FUNCTION", "LOAD", "REPLACE", "x", "#!lua name=zz\nredis.register_function('f1', function() return 1 end)"},
	{"FUNCTION", "LIST", "LIBRARYNAME", "0", "\x00\xff\r\n"}, {"FUNCTION", "LIST", "a\x00b"}, {"FUNCTION", "LOAD", "x\x00y", "#!lua name=zz\nreturn 1"},
	{"FUNCTION", "LOAD", "#!lua name=zz\nredis.register_function('f1', function() return 1 end)"},
	{"FUNCTION", "LOAD", "#!lua name=zz\nredis.register_function{function_name='f3', callback=function() return 1 end, flags={'bad-flag'}}"},
	{"FUNCTION", "LOAD", "#!lua name=zz\nreturn ("}, {"FUNCTION", "DELETE", "zz"},
	{"FUNCTION", "LOAD", "REPLACE", "REPLACE", "#!lua name=zz\nredis.register_function('f1', function() return 1 end)"}, {"FUNCTION", "DELETE", "zz"},
}

func TestScriptCommandsAgainstRedis(t *testing.T) {
	redisAddr := testutil.StartRedis(t)
	c := testcluster.New(t, testcluster.Options{Options: cluster.Options{DataServers: 1, Copies: 1, Buckets: 64}})
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			r, p := dialRaw(t, redisAddr), dialRaw(t, c.Proxies[0].Addr())
			hello := []string{"HELLO", fmt.Sprint(proto)}
			if _, err := r.do(hello); err != nil {
				t.Fatal(err)
			}
			if _, err := p.do(hello); err != nil {
				t.Fatal(err)
			}
			var dump string
			for _, args := range scriptCompare {
				if len(args) > 2 && args[2] == "$DUMP" {
					args = append([]string{args[0], args[1], dump}, args[3:]...)
				}
				want, err := r.do(args)
				if err != nil {
					t.Fatal(err)
				}
				got, err := p.do(args)
				if err != nil {
					t.Fatal(err)
				}
				if got != want {
					t.Errorf("%q\n  got: %q\nredis: %q", args, got, want)
				}
				if args[len(args)-1] == "DUMP" || args[0] == "DUMP" {
					dump = bulkBody(want)
				}
			}
		})
	}
}

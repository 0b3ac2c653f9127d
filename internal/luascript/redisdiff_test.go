package luascript

// The Lua layer against a real redis-server 7: the same scripts run by
// EVAL there and by Env.Run here (its commands on an executor), raw
// replies compared byte for byte, RESP2 and RESP3.

import (
	"bufio"
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/tairkv/tair/dataserver/exec"
	"github.com/tairkv/tair/engines"
	"github.com/tairkv/tair/engines/rdb"
	"github.com/tairkv/tair/internal/command"
	"github.com/tairkv/tair/internal/testutil"
	"github.com/tairkv/tair/resp"
)

// execCaller runs a script's commands on an executor.
type execCaller struct{ x *exec.Executor }

func (c execCaller) Call(_ *command.Spec, args [][]byte, proto int) []byte {
	out, _ := c.x.Exec(0, proto, false, args, nil)
	return out
}

type diffCase struct {
	// vmErr: a Lua runtime error whose wording is gopher-lua's, not
	// Lua 5.1's ("attempt to index local 't' (a nil value)"): the reply
	// is compared up to "user_script:<line>: " and from " script: ".
	vmErr bool
	body  string
	keys  []string
	args  []string
}

func sc(body string, kv ...string) diffCase {
	c := diffCase{body: body}
	for i, a := range kv {
		if a == "|" {
			c.keys, c.args = kv[:i], kv[i+1:]
			return c
		}
	}
	c.keys = kv
	return c
}

func vmErr(body string) diffCase { return diffCase{body: body, vmErr: true} }

// sameError compares two error replies but for the Lua VM's wording.
func sameError(got, want string) bool {
	cut := func(s string) (string, string, bool) {
		i := strings.Index(s, ": ")
		j := strings.LastIndex(s, " script: ")
		if !strings.HasPrefix(s, "-ERR user_script:") || i < 0 || j < i {
			return "", "", false
		}
		return s[:i], s[j:], true
	}
	g1, g2, ok1 := cut(got)
	w1, w2, ok2 := cut(want)
	return ok1 && ok2 && g1 == w1 && g2 == w2
}

var diffCases = []diffCase{
	// conversions Lua → reply
	sc("return 1"), sc("return -1"), sc("return 3.99"), sc("return -3.99"), sc("return 1e100"), sc("return -1e100"),
	sc("return 0/0"), sc("return 1/0"), sc("return 'x'"), sc("return ''"), sc("return true"), sc("return false"),
	sc("return nil"), sc("return {}"), sc("return {1,2,3}"), sc("return {1,2,nil,3}"), sc("return {1,{2,{3,'x'}},false,true}"),
	sc("return {ok='fine'}"), sc("return {ok=''}"), sc("return {ok='a\\nb'}"), sc("return {err='My err'}"),
	sc("return {err='ERR x\\ny'}"), sc("return {err=''}"), sc("return {ok=5}"), sc("return {err=5}"),
	sc("return {1, {ok='x'}, {err='E y'}, true, false, 'z', 2.5}"), sc("return {double=3.5}"), sc("return {double=1/0}"),
	sc("return {big_number='123456789012345678901234567890'}"), sc("return {map={a=1}}"), sc("return {set={a=true}}"),
	sc("return {verbatim_string={format='txt', string='hi'}}"), sc("return {a=1, 2}"), sc("return function() end"),
	sc("return redis.error_reply('X y')"), sc("return redis.error_reply('abc')"), sc("return redis.error_reply('')"),
	sc("return redis.error_reply('-WRONG z')"), sc("return redis.status_reply('PONG')"), sc("return redis.status_reply('')"),
	sc("return {redis.error_reply('E1 m')}"),
	// KEYS, ARGV
	sc("return KEYS", "a", "b", "|", "x", "y"), sc("return ARGV", "|", "1", "2"), sc("return #KEYS + #ARGV", "k", "|", "a"),
	sc("return {KEYS[1], ARGV[1], ARGV[2]}", "k", "|", "a"),
	// redis.call conversions RESP → Lua
	sc("return redis.call('set', KEYS[1], 'v')", "k"), sc("return redis.call('get', KEYS[1])", "k"),
	sc("return redis.call('get', 'nokey')"), sc("return type(redis.call('get', 'nokey'))"),
	sc("local r = redis.call('set', 'k', 'v') return type(r) .. r.ok"), sc("return redis.call('incr', 'n')"),
	sc("return redis.call('incrby', 'n', 5.7)"), sc("return redis.call('set', 'f', 1.5)"), sc("return redis.call('get', 'f')"),
	sc("return redis.call('set', 'f', 1e15)"), sc("return redis.call('get', 'f')"), sc("return redis.call('set', 'f', 0.1)"),
	sc("return redis.call('get', 'f')"), sc("redis.call('rpush', 'l', 'a', 'b', 'c') return redis.call('lrange', 'l', 0, -1)"),
	sc("return redis.call('hgetall', 'nohash')"), sc("redis.call('hset', 'h', 'f', 'v') return redis.call('hgetall', 'h')"),
	sc("redis.call('sadd', 's', 'm') return redis.call('smembers', 's')"),
	sc("return redis.call('zadd', 'z', 1.5, 'a')"), sc("return redis.call('zscore', 'z', 'a')"),
	sc("return redis.call('zrange', 'z', 0, -1, 'WITHSCORES')"),
	sc("return redis.call('exists', 'k', 'nokey')"), sc("return redis.call('type', 'k')"),
	sc("return redis.call('mget', 'k', 'nokey', 'n')"), sc("return redis.call('ping')"), sc("return redis.call('ping', 'x')"),
	sc("return redis.call('echo', 'e')"), sc("return #redis.call('time')"), sc("return type(redis.call('time')[1])"),
	// RESP3 inside scripts
	sc("redis.setresp(3) return redis.call('hgetall', 'h')"), sc("redis.setresp(3) return redis.call('smembers', 's')"),
	sc("redis.setresp(3) return redis.call('zscore', 'z', 'a')"), sc("redis.setresp(3) return redis.call('get', 'nokey')"),
	sc("redis.setresp(3) local r = redis.call('zscore', 'z', 'a') return {type(r), r.double}"),
	sc("redis.setresp(3) local r = redis.call('hgetall', 'h') return r.map.f"),
	sc("redis.setresp(3) return true"), sc("redis.setresp(3) return false"), sc("redis.setresp(3) return {true, false}"),
	sc("redis.setresp(3) return redis.call('exists', 'k')"), sc("redis.setresp(2) return true"),
	sc("redis.setresp(3) return redis.call('zrange', 'z', 0, -1, 'WITHSCORES')"),
	// errors
	sc("return redis.call('nosuch')"), sc("return redis.pcall('nosuch')"), sc("return redis.call('get')"),
	sc("return redis.pcall('get')"), sc("return redis.call('multi')"), sc("return redis.call('blpop', 'l', 0)"),
	sc("return redis.call('eval', 'return 1', 0)"), sc("return redis.call('subscribe', 'c')"),
	sc("return redis.call('incr', 'l')"), sc("return redis.pcall('incr', 'l')"), sc("return redis.call('set', 'k', 'v', 'ex', -1)"),
	sc("local t = redis.pcall('nosuch') return {type(t), t.err}"), sc("local ok, e = pcall(redis.call, 'incr', 'l') return {tostring(ok), e.err}"),
	sc("return redis.call()"), sc("return redis.pcall()"), sc("return redis.call(1)"), sc("return redis.call('set', {}, 1)"),
	sc("return redis.call('set', 'k', nil)"), sc("return redis.call('set', 'k', true)"),
	sc("error('boom')"), sc("error('x', 0)"), sc("error({err='X bad'})"), sc("error({err='ERR x'}, 0)"), sc("error()"),
	sc("error(5)"), sc("local function f() error({err='ERR in f'}) end\nf()"), sc("\n\nreturn redis.call('nosuch')"),
	sc("local x = 1\n\nerror('line 3')"), vmErr("local t = nil\nreturn t.x"), vmErr("return 1 + {}"), vmErr("return #5"),
	sc("local function f() return 1 + f() end return f()"), sc("local function g(n) return g(n + 1) + 1 end\nreturn g(1)"),
	sc("x = 5"), sc("return y"), sc("return os"), sc("return print"), sc("return require"), sc("return dofile"),
	sc("return loadfile"), sc("return getfenv"), sc("return setfenv"), sc("return newproxy"), sc("return module"),
	sc("return debug"), sc("return io"), sc("string.foo = 1"), sc("redis.call = nil"), sc("_G.x = 1"),
	sc("rawset(_G,'x',1)"), sc("return getmetatable(_G)"), sc("setmetatable(_G, nil)"), sc("KEYS[1] = 'x' return KEYS[1]", "k"),
	sc("return type(_G)"), sc("return _VERSION"), sc("return type(loadstring)"), sc("return loadstring('return 1')()"),
	sc("return type(coroutine)"), sc("return type(unpack)"), sc("return type(gcinfo)"), sc("return type(collectgarbage)"),
	sc("return {type(bit), type(struct), type(cjson), type(cmsgpack), type(string), type(table), type(math)}"),
	sc("getmetatable('').x = 1"), sc("getmetatable('').__index.upper = nil"), sc("return type(getmetatable('').__index)"),
	sc("return ('x'):upper()"), sc("local t = getmetatable('') t.__index = nil"), sc("return ('y'):upper()"),
	sc("return type(table.unpack)"), sc("return type(table.getn)"), sc("local t = {} t.x = 1 return t.x"),
	sc("return redis.setresp(4)"), sc("return redis.setresp()"), sc("return redis.set_repl(redis.REPL_ALL)"),
	sc("return redis.set_repl(7)"), sc("return redis.replicate_commands()"), sc("return redis.breakpoint()"),
	sc("return redis.debug('x')"), sc("return redis.log(redis.LOG_WARNING, 'hello', 1)"), sc("return redis.log('x', 'y')"),
	sc("return redis.log(1)"), sc("return redis.log(9, 'x')"),
	sc("return {redis.REPL_NONE, redis.REPL_AOF, redis.REPL_SLAVE, redis.REPL_REPLICA, redis.REPL_ALL}"),
	sc("return {redis.LOG_DEBUG, redis.LOG_VERBOSE, redis.LOG_NOTICE, redis.LOG_WARNING}"),
	sc("return redis.REDIS_VERSION"), sc("return redis.REDIS_VERSION_NUM"),
	sc("return redis.sha1hex('')"), sc("return redis.sha1hex('abc')"), sc("return redis.sha1hex(12)"), sc("return redis.sha1hex()"),
	// numbers and strings
	sc("return tostring(1e15)"), sc("return tostring(12345678901234567)"), sc("return tostring(0.1)"), sc("return tostring(-0.5)"),
	sc("return tostring(1/0)"), sc("return tostring(-1/0)"), sc("return tostring(100)"), sc("return tostring(true)"),
	sc("return string.format('%d', 3.7)"), sc("return string.format('%5.2f|%s|%d', 3.14159, 'x', 7)"),
	sc("return string.rep('ab', 3)"), sc("return string.rep('x', 0)"), sc("return string.len('abc')"),
	sc("return {string.byte('ABC', 1, 3)}"), sc("return string.char(72, 105)"), sc("return string.upper('abc')"),
	sc("return string.sub('hello', 2, -2)"), sc("return {string.find('hello world', 'o w')}"),
	sc("return string.gsub('hello', 'l', 'L')"), sc("return {string.match('key:123', '(%a+):(%d+)')}"),
	sc("local t = {} for w in string.gmatch('a b c', '%a') do t[#t+1] = w end return t"),
	sc("return table.concat({1, 2, 'x'}, ',')"), sc("local t = {3,1,2} table.sort(t) return t"),
	sc("local t = {1} table.insert(t, 2) table.insert(t, 1, 0) return t"), sc("local t = {1,2,3} table.remove(t, 1) return t"),
	sc("return {math.floor(3.7), math.ceil(3.2), math.abs(-2), math.max(1, 5, 3), math.min(4, 2)}"),
	sc("return math.fmod(7, 3)"), sc("return math.sqrt(16)"), sc("return math.pow(2, 10)"), sc("return tonumber('0x10')"),
	sc("return tonumber('  12  ')"), sc("return tonumber('1e2')"), sc("return tonumber('z', 36)"), sc("return tonumber('abc')"),
	sc("return select('#', 1, 2, 3)"), sc("return {select(2, 'a', 'b', 'c')}"), sc("return {unpack({1, 2, 3})}"),
	sc("local co = coroutine.create(function(a) local b = coroutine.yield(a + 1) return b * 2 end) local _, x = coroutine.resume(co, 1) local _, y = coroutine.resume(co, 10) return {x, y}"),
	sc("local ok, e = pcall(error, 'x') return {tostring(ok), e}"), sc("local ok, e = pcall(error, {err='E t'}) return e"),
	sc("return {xpcall(function() error('z') end, function(m) return 'handled: ' .. m end)}"),
	sc("return math.random(1000)"), sc("return math.random(1000)"), sc("return {math.random(), math.random(10, 20)}"),
	sc("return math.random(10, 1)"), sc("math.randomseed(42) return math.random(1000)"), sc("return math.random(0)"),
	// cjson
	sc("return cjson.encode({1,2,3})"), sc("return cjson.encode({a=1})"), sc("return cjson.encode({[1]=1, [3]=3})"),
	sc("return cjson.encode(3.14159265358979)"), sc("return cjson.encode('a/b\"\\n\\1')"), sc("return cjson.encode({})"),
	sc("return cjson.encode(cjson.decode('{}'))"), sc("return cjson.encode(cjson.decode('[]'))"), sc("return cjson.decode('bad')"),
	sc("return cjson.encode(function() end)"), sc("return cjson.encode({[1]=1,[100]=2})"), sc("return cjson.encode(1/0)"),
	sc("return cjson.encode(true)"), sc("return cjson.encode(nil)"), sc("return cjson.encode(cjson.null)"),
	sc("return cjson.decode('1e2')"), sc("return cjson.decode('\"\\\\u00e9\"')"), sc("return cjson.decode('[1,\"a\",true]')"),
	sc("return cjson.decode('{\"a\":[1,2,{\"b\":null}]}').a[2]"), sc("return cjson.decode('[1,2,{\"a\":null}]')[3].a == cjson.null"),
	sc("return cjson.decode('[1,2')"), sc("return cjson.decode('{\"a\" 1}')"), sc("return cjson.decode('{1:2}')"),
	sc("return cjson.decode('[1 2]')"), sc("return cjson.decode('1 2')"), sc("return cjson.decode('\"abc')"),
	sc("return cjson.decode('\"\\\\x\"')"), sc("return cjson.decode('')"), sc("return cjson.decode('-')"),
	sc("return cjson.decode('[1,]')"), sc("return cjson.decode('{\"a\":1,}')"), sc("return cjson.decode('{\"a\":1 \"b\":2}')"),
	sc("return cjson.decode('[[],{},[{}]]')[3][1] ~= nil"),
	sc("return cjson.decode(string.rep('[', 1001))"), sc("return #cjson.decode(string.rep('[', 1000) .. string.rep(']', 1000))"),
	sc("return cjson.encode({1, 'a', {b={true}}})"), sc("return cjson.encode({[1.5]=1})"), sc("return cjson.encode(1e20)"),
	sc("return cjson.encode(-0.000001)"), sc("return cjson.encode(12345678901234567)"), sc("return cjson.encode('\\127')"),
	sc("return cjson.decode(cjson.encode({x='y'})).x"), sc("return cjson.encode(cjson.decode('[1,null,3]'))"),
	sc("return cjson.encode()"), sc("return cjson.decode()"), sc("return cjson.encode({[true]=1})"),
	sc("local t = {} t[1] = t return pcall(cjson.encode, t)"),
	// cmsgpack
	sc("return cmsgpack.pack(1)"), sc("return cmsgpack.pack(-1, 127, 128, 255, 256, 65535, 65536, 4294967295, 4294967296)"),
	sc("return cmsgpack.pack(-32, -33, -128, -129, -32768, -32769, -2147483648, -2147483649)"),
	sc("return cmsgpack.pack(1.5, 0.1, 1e300, -2.25)"), sc("return cmsgpack.pack('abc', '', string.rep('x', 40))"),
	sc("return cmsgpack.pack(string.rep('y', 300))"), sc("return cmsgpack.pack({1,2,3})"), sc("return cmsgpack.pack({a=1})"),
	sc("return cmsgpack.pack({})"), sc("return cmsgpack.pack(true, false, nil)"), sc("return cmsgpack.pack({1,{2,{3}}})"),
	sc("return cmsgpack.pack({[1]=1, [3]=3})"),
	sc("return {cmsgpack.unpack(cmsgpack.pack(1, 'a', {1,2}, -5, 1.5))}"), sc("return cmsgpack.unpack(cmsgpack.pack({a='b'})).a"),
	sc("return cmsgpack.unpack('\\196')"), sc("return cmsgpack.unpack('\\193')"), sc("return cmsgpack.unpack('')"),
	sc("return {cmsgpack.unpack_one(cmsgpack.pack(1, 2, 3))}"), sc("return {cmsgpack.unpack_limit(cmsgpack.pack(1, 2, 3), 2)}"),
	sc("return {cmsgpack.unpack_one(cmsgpack.pack(1, 2, 3), 1)}"), sc("return {cmsgpack.unpack_one(cmsgpack.pack(1), 0)}"),
	sc("return cmsgpack.pack()"), sc("return {cmsgpack.unpack(cmsgpack.pack(cmsgpack.pack(1)))}"),
	// bit
	sc("return {bit.tobit(0xffffffff), bit.tobit(2^32 + 5), bit.tobit(-1), bit.tobit(1.5), bit.tobit(2.5)}"),
	sc("return {bit.bnot(0), bit.band(0xff, 0x0f, 0x3), bit.bor(1, 2, 4), bit.bxor(5, 3)}"),
	sc("return {bit.lshift(1, 31), bit.lshift(1, 32), bit.rshift(-1, 28), bit.arshift(-256, 4), bit.rshift(256, 4)}"),
	sc("return {bit.rol(0x12345678, 8), bit.ror(0x12345678, 8), bit.bswap(0x12345678)}"),
	sc("return {bit.tohex(255), bit.tohex(-1), bit.tohex(255, 2), bit.tohex(255, -4), bit.tohex(0x12345678, 12)}"),
	sc("return bit.band()"), sc("return bit.tobit('x')"), sc("return bit.tobit('12')"),
	// struct
	sc("return struct.pack('>i', 1)"), sc("return struct.pack('<i', 1)"), sc("return struct.pack('>I2', 65535)"),
	sc("return struct.pack('bBhHlL', -1, 255, -2, 65534, -3, 7)"), sc("return struct.pack('>d', 1.5)"), sc("return struct.pack('<f', 0.5)"),
	sc("return struct.pack('s', 'abc')"), sc("return struct.pack('c2', 'abc')"), sc("return struct.pack('c0', 'abc')"),
	sc("return struct.pack('!4 b i', 1, 2)"), sc("return struct.pack('x i', 7)"), sc("return struct.pack('z', 1)"),
	sc("return struct.pack('i33', 1)"), sc("return struct.pack('c5', 'ab')"), sc("return struct.pack('!3', 1)"),
	sc("return {struct.unpack('>i', struct.pack('>i', -5))}"), sc("return {struct.unpack('<I2', '\\255\\255')}"),
	sc("return {struct.unpack('s', 'ab\\0cd')}"), sc("return {struct.unpack('bc0', '\\3abcd')}"), sc("return {struct.unpack('i', 'ab')}"),
	sc("return {struct.unpack('>d', struct.pack('>d', 2.25))}"), sc("return {struct.unpack('s', 'abc')}"),
	sc("return {struct.unpack('<f>f<d>d', struct.pack('<f>f<d>d', 0.5, -2, 1.25, -0.75))}"), sc("return struct.pack('>f<d', 3, 4)"),
	sc("return {struct.unpack('b', '\\1\\2', 2)}"), sc("return {struct.unpack('b', '\\1', 0)}"),
	sc("return {struct.size('i'), struct.size('bhld'), struct.size('!8 b d'), struct.size('c10')}"),
	sc("return struct.size('s')"), sc("return struct.size('c0')"),
	// effects and writes
	sc("redis.call('del', 'w') for i = 1, 10 do redis.call('rpush', 'w', i) end return redis.call('llen', 'w')"),
	sc("redis.call('set', 'e', 'v', 'EX', 100) return redis.call('ttl', 'e')"),
	sc("return redis.call('hincrbyfloat', 'hf', 'x', 1.5)"),
}

func TestScriptsAgainstRedis(t *testing.T) {
	conn, rd := testutil.DialRedis(t)
	for _, proto := range []int{2, 3} {
		redisDo(t, conn, rd, "FLUSHALL")
		redisDo(t, conn, rd, "SCRIPT", "FLUSH")
		redisDo(t, conn, rd, "HELLO", strconv.Itoa(proto))
		eng := rdb.Open(engines.Options{MaxValueSize: 512 << 20})
		x := exec.New(eng, exec.Options{MaxValueSize: 512 << 20, Buckets: 1})
		env := NewEnv(nil)
		// Both generators from the same state: redis-server's has run the
		// first pass's math.random calls.
		redisDo(t, conn, rd, "EVAL", "math.randomseed(0)", "0")
		for _, c := range diffCases {
			args := []string{"EVAL", c.body, strconv.Itoa(len(c.keys))}
			args = append(append(args, c.keys...), c.args...)
			want := redisDo(t, conn, rd, args...)
			s, err := Compile([]byte(c.body))
			if err != nil {
				t.Errorf("RESP%d %q: compile: %v", proto, c.body, err)
				continue
			}
			got := env.Run(nil, s, &Run{Keys: bs(c.keys), Args: bs(c.args), Proto: proto, Caller: execCaller{x}, Name: s.Sha})
			if c.vmErr && sameError(string(got), want) {
				continue
			}
			if string(got) != want {
				t.Errorf("RESP%d %q\n  got: %q\nredis: %q", proto, c.body, got, want)
			}
		}
		eng.Close()
	}
}

func bs(l []string) [][]byte {
	out := make([][]byte, len(l))
	for i, s := range l {
		out[i] = []byte(s)
	}
	return out
}

func redisDo(t *testing.T, conn net.Conn, rd *bufio.Reader, args ...string) string {
	t.Helper()
	if _, err := conn.Write(resp.AppendCommand(nil, bs(args)...)); err != nil {
		t.Fatal(err)
	}
	r, err := testutil.ReadReply(rd)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

package tests

// One script (testdata/redis-compare.txt) against a plain redis-server and
// against the real proxy of an in-process cluster: over raw RESP (RESP2,
// and RESP3 after HELLO 3), comparing the raw reply bytes, and over
// go-redis (Protocol 2 and 3), comparing the decoded values and error
// texts. The script's header documents its format and marks.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tairkv/tair/cluster"
	"github.com/tairkv/tair/internal/route"
	"github.com/tairkv/tair/internal/testcluster"
	"github.com/tairkv/tair/internal/testutil"
	"github.com/tairkv/tair/resp"
)

const compareScript = "testdata/redis-compare.txt"

// scriptLine is one command of the script, or a directive.
type scriptLine struct {
	no    int      // line number in the file
	text  string   // the line as written (without its mark)
	mark  string   // "" (byte for byte), or one of the marks the script's header documents
	near  float64  // @near's tolerance
	args  []string // the command
	sleep time.Duration
}

// parseScript reads the script; a malformed line fails the test.
func parseScript(t *testing.T, path string) []scriptLine {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []scriptLine
	for i, raw := range strings.Split(string(data), "\n") {
		l := strings.TrimSpace(raw)
		if l == "" || l[0] == '#' {
			continue
		}
		sl := scriptLine{no: i + 1}
		if strings.HasPrefix(l, "!sleep ") {
			d, err := time.ParseDuration(strings.TrimSpace(l[len("!sleep "):]))
			if err != nil {
				t.Fatalf("%s:%d: %v", path, i+1, err)
			}
			sl.sleep = d
			sl.text = l
			out = append(out, sl)
			continue
		}
		if l[0] == '@' {
			sp := strings.IndexByte(l, ' ')
			if sp < 0 {
				t.Fatalf("%s:%d: a mark without a command", path, i+1)
			}
			sl.mark, l = l[1:sp], strings.TrimSpace(l[sp+1:])
			switch sl.mark {
			case "unordered", "pairs", "scan", "scan-pairs", "scan-all", "shape", "type":
			case "near":
				sp := strings.IndexByte(l, ' ')
				if sp < 0 {
					t.Fatalf("%s:%d: @near needs a tolerance", path, i+1)
				}
				if sl.near, err = strconv.ParseFloat(l[:sp], 64); err != nil {
					t.Fatalf("%s:%d: @near: %v", path, i+1, err)
				}
				l = strings.TrimSpace(l[sp+1:])
			default:
				t.Fatalf("%s:%d: unknown mark @%s", path, i+1, sl.mark)
			}
		}
		sl.text = l
		if sl.args, err = splitArgs(l); err != nil {
			t.Fatalf("%s:%d: %v", path, i+1, err)
		}
		if len(sl.args) == 0 {
			t.Fatalf("%s:%d: no command", path, i+1)
		}
		out = append(out, sl)
	}
	return out
}

// splitArgs splits a line on spaces; "double quotes" hold spaces or an
// empty argument, with \" \\ \n \r \t and \xHH escapes inside them.
func splitArgs(l string) ([]string, error) {
	var out []string
	for i := 0; i < len(l); {
		switch {
		case l[i] == ' ' || l[i] == '\t':
			i++
		case l[i] == '"':
			var b strings.Builder
			j := i + 1
			for ; j < len(l) && l[j] != '"'; j++ {
				if l[j] != '\\' {
					b.WriteByte(l[j])
					continue
				}
				j++
				if j == len(l) {
					return nil, errors.New("backslash at the end of the line")
				}
				switch l[j] {
				case '"', '\\':
					b.WriteByte(l[j])
				case 'n':
					b.WriteByte('\n')
				case 'r':
					b.WriteByte('\r')
				case 't':
					b.WriteByte('\t')
				case 'x':
					if j+2 >= len(l) {
						return nil, errors.New("short \\x escape")
					}
					v, err := strconv.ParseUint(l[j+1:j+3], 16, 8)
					if err != nil {
						return nil, fmt.Errorf("bad \\x escape: %v", err)
					}
					b.WriteByte(byte(v))
					j += 2
				default:
					return nil, fmt.Errorf("unknown escape \\%c", l[j])
				}
			}
			if j == len(l) {
				return nil, errors.New("unterminated quote")
			}
			if j+1 < len(l) && l[j+1] != ' ' && l[j+1] != '\t' {
				return nil, errors.New("closing quote must be followed by a space")
			}
			out = append(out, b.String())
			i = j + 1
		default:
			j := i
			for j < len(l) && l[j] != ' ' && l[j] != '\t' {
				if l[j] == '"' {
					return nil, errors.New("quote inside an argument")
				}
				j++
			}
			out = append(out, l[i:j])
			i = j
		}
	}
	return out, nil
}

func TestRedisCompareScriptParser(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{`SET k v`, []string{"SET", "k", "v"}},
		{`SET  "a b"  ""`, []string{"SET", "a b", ""}},
		{`ECHO "q\"uo\\te" "\x41\n"`, []string{"ECHO", `q"uo\te`, "A\n"}},
	} {
		got, err := splitArgs(c.in)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("splitArgs(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{`ECHO "x`, `ECHO "x"y`, `ECHO a"b`, `ECHO "\q"`} {
		if _, err := splitArgs(bad); err == nil {
			t.Errorf("splitArgs(%q) accepted", bad)
		}
	}
}

// startCompared starts what the differential tests compare: a
// redis-server and an in-process cluster of 3 dataservers, copy count 2
// (TAIR_COMPARE_ENGINE runs it on another engine than rdb). It returns
// their addresses (the cluster's first proxy) and the cluster's table.
func startCompared(t *testing.T) (redisAddr, proxyAddr string, tbl *route.Table) {
	t.Helper()
	redisAddr = testutil.StartRedis(t)
	c := testcluster.New(t, testcluster.Options{Options: cluster.Options{DataServers: 3, Copies: 2,
		Engine: os.Getenv("TAIR_COMPARE_ENGINE")}})
	return redisAddr, c.Proxies[0].Addr(), c.Table()
}

// TestRedisCompare runs the script against redis-server and the proxy.
func TestRedisCompare(t *testing.T) {
	script := parseScript(t, compareScript)
	redisAddr, proxyAddr, tbl := startCompared(t)
	// The script's spread keys (MSET mk:1 ... mk:8) must really span
	// buckets and dataservers, so that the proxy splits and merges them.
	masters := map[string]bool{}
	for i := 1; i <= 8; i++ {
		masters[tbl.Master(route.BucketOf([]byte(fmt.Sprintf("mk:%d", i)), tbl.Buckets))] = true
	}
	if len(masters) < 2 {
		t.Fatalf("mk:1..mk:8 all live on one dataserver (%v): the script's multi-key lines would not span nodes", masters)
	}
	t.Logf("%d script lines; redis-server %s, proxy %s", len(script), redisAddr, proxyAddr)
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("raw-RESP%d", proto), func(t *testing.T) {
			runRawCompare(t, script, redisAddr, proxyAddr, proto)
		})
	}
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("go-redis-RESP%d", proto), func(t *testing.T) {
			runGoRedisCompare(t, script, redisAddr, proxyAddr, proto)
		})
	}
}

// rawConn is a plain TCP client: RESP arrays out, one raw reply in.
type rawConn struct {
	c  net.Conn
	rd *bufio.Reader
}

func dialRaw(t *testing.T, addr string) *rawConn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &rawConn{c: c, rd: bufio.NewReader(c)}
}

func (r *rawConn) do(args []string) (string, error) {
	bs := make([][]byte, len(args))
	for i, a := range args {
		bs[i] = []byte(a)
	}
	_ = r.c.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := r.c.Write(resp.AppendCommand(nil, bs...)); err != nil {
		return "", err
	}
	return testutil.ReadReply(r.rd)
}

// scanAll runs a SCAN from cursor args[1] until the cursor comes back
// to 0 and returns a made-up reply: an array of every element returned,
// sorted (or the first reply that is not a SCAN reply).
func (r *rawConn) scanAll(args []string) (string, error) {
	args = append([]string(nil), args...)
	var all []string
	for i := 0; i < 100000; i++ {
		rep, err := r.do(args)
		if err != nil {
			return "", err
		}
		_, elems := rawElems(rep)
		if len(elems) != 2 {
			return rep, nil
		}
		_, keys := rawElems(elems[1])
		all = append(all, keys...)
		if args[1] = bulkBody(elems[0]); args[1] == "0" {
			sort.Strings(all)
			return fmt.Sprintf("*%d\r\n%s", len(all), strings.Join(all, "")), nil
		}
	}
	return "", errors.New("SCAN did not end")
}

// resetsProto reports whether a script command may change the
// connection's protocol (HELLO, RESET): the runner then restores its own.
func resetsProto(args []string) bool {
	return strings.EqualFold(args[0], "hello") || strings.EqualFold(args[0], "reset")
}

func runRawCompare(t *testing.T, script []scriptLine, redisAddr, proxyAddr string, proto int) {
	rc, pc := dialRaw(t, redisAddr), dialRaw(t, proxyAddr)
	setup := func(args ...string) {
		t.Helper()
		for _, c := range []*rawConn{rc, pc} {
			if _, err := c.do(args); err != nil {
				t.Fatalf("%q: %v", args, err)
			}
		}
	}
	setup("FLUSHALL")
	if proto == 3 {
		setup("HELLO", "3")
	}
	mismatches := 0
	dump := os.Getenv("TAIR_COMPARE_DUMP") != "" // log every reply
	for _, l := range script {
		if l.sleep > 0 {
			time.Sleep(l.sleep)
			continue
		}
		do := (*rawConn).do
		if l.mark == "scan-all" {
			do = (*rawConn).scanAll
		}
		want, err := do(rc, l.args)
		if err != nil {
			t.Fatalf("line %d %s: redis-server: %v", l.no, l.text, err)
		}
		got, err := do(pc, l.args)
		if err != nil {
			t.Fatalf("line %d %s: proxy: %v", l.no, l.text, err)
		}
		if dump {
			t.Logf("line %d: %s\n  redis: %q\n  proxy: %q", l.no, l.text, want, got)
		}
		if !rawEqual(l, want, got) {
			mismatches++
			t.Errorf("line %d: %s\n  redis: %q\n  proxy: %q", l.no, l.text, want, got)
		}
		if resetsProto(l.args) {
			setup("HELLO", strconv.Itoa(proto)) // back to this run's protocol
		}
	}
	if mismatches > 0 {
		t.Logf("%d mismatches", mismatches)
	}
}

// rawElems splits an aggregate reply into its header line and its
// elements (raw); a non-aggregate has no elements.
func rawElems(s string) (string, []string) {
	if s == "" || !strings.ContainsRune("*~%>", rune(s[0])) {
		return s, nil
	}
	rd := bufio.NewReader(strings.NewReader(s))
	head, _ := rd.ReadString('\n')
	n, err := strconv.Atoi(head[1 : len(head)-2])
	if err != nil || n < 0 {
		return s, nil
	}
	if s[0] == '%' {
		n *= 2
	}
	elems := make([]string, 0, n)
	for i := 0; i < n; i++ {
		e, err := testutil.ReadReply(rd)
		if err != nil {
			return s, nil
		}
		elems = append(elems, e)
	}
	return head, elems
}

// group joins elements k at a time (pairs) and sorts the groups.
func sortedGroups(elems []string, k int) []string {
	if len(elems)%k != 0 {
		return append([]string{"odd:"}, elems...)
	}
	var out []string
	for i := 0; i < len(elems); i += k {
		out = append(out, strings.Join(elems[i:i+k], ""))
	}
	sort.Strings(out)
	return out
}

func rawEqual(l scriptLine, want, got string) bool {
	if l.mark == "" || want == got {
		return want == got
	}
	if want == "" || got == "" || want[0] != got[0] {
		return false // the same RESP type, whatever the mark
	}
	switch l.mark {
	case "scan-all": // already collected and sorted
		return false
	case "type":
		return true
	case "shape":
		wh, we := rawElems(want)
		gh, ge := rawElems(got)
		if we == nil || ge == nil {
			// Scalars: the same type; errors the same text.
			return want[0] != '-' && want[0] != '!'
		}
		return wh == gh && len(we) == len(ge)
	case "near":
		w, err1 := strconv.ParseFloat(strings.TrimSpace(want[1:]), 64)
		g, err2 := strconv.ParseFloat(strings.TrimSpace(got[1:]), 64)
		if want[0] == '$' { // a bulk string holding a number
			w, err1 = strconv.ParseFloat(bulkBody(want), 64)
			g, err2 = strconv.ParseFloat(bulkBody(got), 64)
		}
		return err1 == nil && err2 == nil && math.Abs(w-g) <= l.near
	case "unordered", "pairs":
		wh, we := rawElems(want)
		gh, ge := rawElems(got)
		k := 1
		// RESP3 nests pairs as 2-element arrays (HRANDFIELD ... WITHVALUES)
		if l.mark == "pairs" && (len(we) == 0 || we[0][0] != '*') || want[0] == '%' {
			k = 2
		}
		return wh == gh && reflect.DeepEqual(sortedGroups(we, k), sortedGroups(ge, k))
	case "scan", "scan-pairs":
		wh, we := rawElems(want)
		gh, ge := rawElems(got)
		if wh != gh || len(we) != 2 || len(ge) != 2 || we[0] != ge[0] {
			return false
		}
		ih, ie := rawElems(we[1])
		jh, je := rawElems(ge[1])
		k := 1
		if l.mark == "scan-pairs" {
			k = 2
		}
		return ih == jh && reflect.DeepEqual(sortedGroups(ie, k), sortedGroups(je, k))
	}
	return false
}

func bulkBody(s string) string {
	i := strings.Index(s, "\r\n")
	if i < 0 {
		return ""
	}
	return strings.TrimSuffix(s[i+2:], "\r\n")
}

func runGoRedisCompare(t *testing.T, script []scriptLine, redisAddr, proxyAddr string, proto int) {
	ctx := context.Background()
	conn := func(addr string) *redis.Conn {
		cl := redis.NewClient(&redis.Options{Addr: addr, Protocol: proto, MaxRetries: -1, PoolSize: 1,
			ReadTimeout: 20 * time.Second, WriteTimeout: 20 * time.Second})
		t.Cleanup(func() { _ = cl.Close() })
		cn := cl.Conn() // one sticky connection: MULTI, WATCH and SELECT are per connection
		t.Cleanup(func() { _ = cn.Close() })
		return cn
	}
	rc, pc := conn(redisAddr), conn(proxyAddr)
	do := func(c *redis.Conn, args []string) (any, error) {
		as := make([]any, len(args))
		for i, a := range args {
			as[i] = a
		}
		cmd := redis.NewCmd(ctx, as...)
		_ = c.Process(ctx, cmd)
		return cmd.Val(), cmd.Err()
	}
	// scanAll: see rawConn.scanAll.
	scanAll := func(c *redis.Conn, args []string) (any, error) {
		args = append([]string(nil), args...)
		var all []any
		for i := 0; i < 100000; i++ {
			v, err := do(c, args)
			rep, ok := v.([]any)
			if err != nil || !ok || len(rep) != 2 {
				return v, err
			}
			keys, _ := rep[1].([]any)
			all = append(all, keys...)
			if args[1] = fmt.Sprint(rep[0]); args[1] == "0" {
				sort.Slice(all, func(i, j int) bool { return fmt.Sprint(all[i]) < fmt.Sprint(all[j]) })
				return all, nil
			}
		}
		return nil, errors.New("SCAN did not end")
	}
	for _, c := range []*redis.Conn{rc, pc} {
		if _, err := do(c, []string{"FLUSHALL"}); err != nil {
			t.Fatalf("FLUSHALL: %v", err)
		}
	}
	mismatches := 0
	for _, l := range script {
		if l.sleep > 0 {
			time.Sleep(l.sleep)
			continue
		}
		run := do
		if l.mark == "scan-all" {
			run = scanAll
		}
		wv, werr := run(rc, l.args)
		gv, gerr := run(pc, l.args)
		if !goEqual(l, wv, werr, gv, gerr) {
			mismatches++
			t.Errorf("line %d: %s\n  redis: %s\n  proxy: %s", l.no, l.text, showGo(wv, werr), showGo(gv, gerr))
		}
		if resetsProto(l.args) { // back to this run's protocol
			_, _ = do(rc, []string{"HELLO", strconv.Itoa(proto)})
			_, _ = do(pc, []string{"HELLO", strconv.Itoa(proto)})
		}
	}
	if mismatches > 0 {
		t.Logf("%d mismatches", mismatches)
	}
}

func showGo(v any, err error) string {
	if err != nil {
		return fmt.Sprintf("error %q", err.Error())
	}
	return fmt.Sprintf("%T %#v", v, v)
}

func goEqual(l scriptLine, wv any, werr error, gv any, gerr error) bool {
	if werr != nil || gerr != nil {
		return werr != nil && gerr != nil && werr.Error() == gerr.Error()
	}
	if l.mark == "" {
		return reflect.DeepEqual(wv, gv)
	}
	if reflect.TypeOf(wv) != reflect.TypeOf(gv) {
		return false
	}
	switch l.mark {
	case "scan-all": // already collected and sorted
		return reflect.DeepEqual(wv, gv)
	case "type":
		return true
	case "shape":
		w, g := reflect.ValueOf(wv), reflect.ValueOf(gv)
		switch w.Kind() {
		case reflect.Slice, reflect.Map:
			return w.Len() == g.Len()
		}
		return true
	case "near":
		w, ok1 := goNumber(wv)
		g, ok2 := goNumber(gv)
		return ok1 && ok2 && math.Abs(w-g) <= l.near
	case "unordered", "pairs":
		k := 1
		if w, ok := wv.([]any); ok && l.mark == "pairs" && (len(w) == 0 || reflect.TypeOf(w[0]) != reflect.TypeOf(w)) {
			k = 2 // RESP3 nests pairs as 2-element arrays (HRANDFIELD ... WITHVALUES)
		}
		return goSameGroups(wv, gv, k)
	case "scan", "scan-pairs":
		w, ok1 := wv.([]any)
		g, ok2 := gv.([]any)
		if !ok1 || !ok2 || len(w) != 2 || len(g) != 2 || !reflect.DeepEqual(w[0], g[0]) {
			return false
		}
		k := 1
		if l.mark == "scan-pairs" {
			k = 2
		}
		return goSameGroups(w[1], g[1], k)
	}
	return false
}

func goNumber(v any) (float64, bool) {
	switch x := v.(type) {
	case int64:
		return float64(x), true
	case float64:
		return x, true
	case string:
		f, err := strconv.ParseFloat(x, 64)
		return f, err == nil
	}
	return 0, false
}

// goSameGroups compares two decoded replies as multisets of k-element
// groups (maps compare as maps).
func goSameGroups(wv, gv any, k int) bool {
	w, ok1 := wv.([]any)
	g, ok2 := gv.([]any)
	if !ok1 || !ok2 {
		return reflect.DeepEqual(wv, gv)
	}
	if len(w) != len(g) || len(w)%k != 0 {
		return false
	}
	key := func(s []any) []string {
		var out []string
		for i := 0; i < len(s); i += k {
			var b bytes.Buffer
			for _, e := range s[i : i+k] {
				fmt.Fprintf(&b, "%T:%#v|", e, e)
			}
			out = append(out, b.String())
		}
		sort.Strings(out)
		return out
	}
	return reflect.DeepEqual(key(w), key(g))
}

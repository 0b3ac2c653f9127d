package exec

// Go native fuzz targets for command execution, one per engine, without a
// network: FuzzExecRDB, FuzzExecMDB, FuzzExecLDB, FuzzExecKDB.
//
// An input is a script: lines of space-separated arguments. A first word
// that names no command picks one by its first byte (so mutations keep
// reaching real handlers), and words of the form ~N stand for adversarial
// values (int64 bounds, NaN, star-heavy patterns, ...: see fuzzWords).
// Each input runs on an empty bucket as a master would (the executor on
// the engine), and every command it must propagate is replayed on a second
// engine as its slave would (replica=true). What must hold:
//   - no panic and no hang (the fuzz engine reports both);
//   - exactly one well-formed reply per command;
//   - the slave ends with the same records as the master: a command whose
//     propagation differs from what it did would make replicas diverge.
//
// `make test` runs each target for an execution budget (-fuzztime Nx);
// `make fuzz` as long as asked (FUZZTIME).

import (
	"bytes"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/vfs"

	"github.com/tairkv/tair/engines"
	"github.com/tairkv/tair/engines/kdb"
	"github.com/tairkv/tair/engines/ldb"
	"github.com/tairkv/tair/engines/mdb"
	"github.com/tairkv/tair/engines/rdb"
)

// fuzzWords are the values ~0 .. ~9, ~a .. ~z stand for.
var fuzzWords = []string{
	"9223372036854775807", "-9223372036854775808", "9223372036854775808", "-1", "0",
	"nan", "inf", "-inf", "1e308", "1e309",
	"", "4294967296", "2147483648", "-2147483649", strings.Repeat("a*", 24) + "b",
	strings.Repeat("a", 64), "\x00\xff\r\n", "1.5", "+1", " 1",
	"-0", "0x10", "1e-320", "17976931348623157e292", "(1", "[a",
	"-", "+", "+inf", "-nan", "536870912", "1048577",
	"*", "?*[", "\\", "withscores",
}

// fuzzCommands is every command the executor registers, sorted: a first
// word that names none picks one of these by its first byte.
// (Lazily: the package's init functions register them after package
// variables are initialised.)
var fuzzCommands = sync.OnceValue(func() []string {
	var names []string
	for name, r := range commands {
		if r.spec != nil {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names
})

// fuzzScript turns an input into at most 32 commands of at most 12
// arguments.
func fuzzScript(data []byte) [][][]byte {
	var script [][][]byte
	for _, line := range bytes.Split(data, []byte{'\n'}) {
		if len(script) == 32 {
			break
		}
		words := bytes.Fields(line)
		if len(words) == 0 {
			continue
		}
		if len(words) > 12 {
			words = words[:12]
		}
		args := make([][]byte, len(words))
		for i, w := range words {
			if len(w) == 2 && w[0] == '~' {
				idx := int(w[1]-'0') % len(fuzzWords)
				if w[1] >= 'a' {
					idx = (10 + int(w[1]-'a')) % len(fuzzWords)
				}
				w = []byte(fuzzWords[idx])
			}
			args[i] = w
		}
		if _, ok := lookup(args[0]); !ok {
			// Not a command: pick one by the word's first byte (an empty
			// word, e.g. a ~ that names "", picks the first).
			names := fuzzCommands()
			pick := 0
			if len(args[0]) > 0 {
				pick = int(args[0][0])
			}
			args[0] = []byte(names[pick%len(names)])
		}
		script = append(script, args)
	}
	return script
}

// fuzzSeeds are scripts over every family, edges included.
var fuzzSeeds = []string{
	"SET {t}k v\nGET {t}k\nAPPEND {t}k ~f\nSETRANGE {t}k ~0 x\nGETRANGE {t}k ~1 ~0\nINCR {t}k",
	"SET {t}n 10\nINCRBY {t}n ~0\nDECRBY {t}n ~1\nINCRBYFLOAT {t}n ~5\nINCRBYFLOAT {t}n ~9\nSETEX {t}e ~0 v\nEXPIRE {t}n ~1",
	"RPUSH {t}l a b c d\nLRANGE {t}l ~1 ~0\nLINDEX {t}l ~0\nLSET {t}l ~1 x\nLPOS {t}l a RANK ~1\nLTRIM {t}l ~0 ~1\nLPOP {t}l ~0\nLINSERT {t}l BEFORE a z",
	"SADD {t}s a b c\nSRANDMEMBER {t}s ~1\nSPOP {t}s ~0\nSMOVE {t}s {t}s2 a\nSINTERCARD 2 {t}s {t}s2 LIMIT ~3\nSSCAN {t}s 0 MATCH ~e COUNT ~0",
	"ZADD {t}z 1 a 2 b ~5 c\nZRANGE {t}z ~1 ~0 BYSCORE\nZRANGEBYSCORE {t}z ~7 ~6 LIMIT ~0 ~3\nZINCRBY {t}z ~6 a\nZRANGEBYLEX {t}z ~p ~q\nZRANDMEMBER {t}z ~1 WITHSCORES",
	"HSET {t}h f v g 1\nHINCRBY {t}h g ~0\nHINCRBYFLOAT {t}h g ~5\nHRANDFIELD {t}h ~1\nHSCAN {t}h 0 MATCH ~e\nHGETALL {t}h",
	"SET {t}a 1\nRENAME {t}a {t}b\nCOPY {t}b {t}c\nKEYS ~e\nEXPIREAT {t}c ~0\nPEXPIRE {t}b ~1\nTTL {t}b\nLCS {t}b {t}c IDX MINMATCHLEN ~0",
	"EXHSET {t}x f v EX ~0\nEXHINCRBY {t}x g ~0\nEXHGET {t}x f\nEXSET {t}y v ABS ~0\nEXINCRBY {t}y ~1\nEXGET {t}y",
	"MSET {t}a 1 {t}b 2\nMGET {t}a {t}b {t}c\nDEL {t}a {t}b\nSORT {t}l LIMIT ~1 ~0\nOBJECT ENCODING {t}a\nTYPE {t}l",
	"GEOADD {t}g 13.36 38.11 a 15.08 37.5 b ~h ~4 c\nGEOADD {t}g XX CH ~7 ~4 a\nGEORADIUS {t}g 15 37 ~8 km STOREDIST {t}d COUNT ~3\nGEOSEARCHSTORE {t}e {t}g FROMMEMBER b BYBOX ~h ~q mi COUNT ~4 ANY\nGEORADIUSBYMEMBER {t}g a ~i m WITHDIST WITHHASH DESC COUNT 2\nGEODIST {t}g a c ft\nGEOPOS {t}g a ~a\nGEOHASH {t}d b",
	"PFADD {t}p a b c\nPFCOUNT {t}p\nPFMERGE {t}q {t}p ~f\nPFCOUNT {t}p {t}q\nSETRANGE {t}p 20 ~g\nPFADD {t}p ~a\nPFDEBUG TODENSE {t}q\nGET {t}q",
	"SET {t}k v\nDUMP {t}k\nRESTORE {t}r ~0 ~g REPLACE\nRESTORE {t}k 0 x\nRESTORE {t}r 100 ~f ABSTTL IDLETIME ~1 FREQ ~2\nDUMP {t}r\nRESTORE {t}k ~1 ~h REPLACE",
	"XADD {t}x * f ~0\nXADD {t}x MAXLEN ~ ~1 * g ~2\nXGROUP CREATE {t}x g 0 MKSTREAM\nXREADGROUP GROUP g c COUNT ~1 STREAMS {t}x >\nXCLAIM {t}x g d ~0 ~3 FORCE RETRYCOUNT ~4\nXAUTOCLAIM {t}x g e ~0 0 COUNT ~1\nXDEL {t}x ~3\nXREADGROUP GROUP g c NOACK STREAMS {t}x 0\nXTRIM {t}x MINID ~ ~3\nXINFO STREAM {t}x FULL",
	"SETBIT {t}b ~v 1\nSETBIT {t}b 7 1\nGETBIT {t}b ~b\nBITCOUNT {t}b ~1 ~0 BIT\nBITPOS {t}b 0 ~3 ~0\nBITOP NOT {t}d {t}b\nBITOP XOR {t}d {t}b {t}d\nBITFIELD {t}b OVERFLOW FAIL INCRBY i64 ~u ~0 SET u63 #3 ~1 GET i8 ~c\nBITFIELD_RO {t}b GET u8 ~u\nGET {t}d",
}

// fuzzEngineOptions: values up to 1 MiB, so that growing one is refused
// long before it costs the fuzzer its memory.
var fuzzEngineOptions = engines.Options{MaxValueSize: 1 << 20}

func fuzzExec(f *testing.F, open func(t testing.TB) engines.Engine) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	p := newFuzzPair(f, open)
	f.Fuzz(func(t *testing.T, data []byte) {
		p.reset(t)
		for _, args := range fuzzScript(data) {
			p.run(t, args)
		}
		p.checkEqual(t)
	})
}

// newFuzzPair is a replPair for a fuzz target: engines from open, one
// bucket, values up to 1 MiB, a frozen clock.
func newFuzzPair(f *testing.F, open func(t testing.TB) engines.Engine) *replPair {
	p := &replPair{master: open(f), slave: open(f)}
	f.Cleanup(func() { p.master.Close(); p.slave.Close() })
	clock := time.Unix(1_800_000_000, 0)
	opts := Options{Buckets: 1, MaxValueSize: 1 << 20, Now: func() time.Time { return clock }}
	p.mx, p.sx = New(p.master, opts), New(p.slave, opts)
	return p
}

// dumpBucket renders bucket 0 as text, objects by their encoding; the
// bytes of an unordered object's encoding are sorted.
func dumpBucket(t *testing.T, e engines.Engine) string {
	var recs []string
	err := e.ForEach(0, func(r *engines.Record) error {
		val := r.Entry.Value
		if r.Entry.Object != nil {
			b, err := r.Entry.Object.MarshalBinary()
			if err != nil {
				return err
			}
			if b2, _ := r.Entry.Object.MarshalBinary(); !bytes.Equal(b, b2) || unordered(r.Entry.Type) {
				b = slices.Clone(b)
				slices.Sort(b)
			}
			val = b
		}
		recs = append(recs, fmt.Sprintf("%d/%q type=%v ver=%d exp=%d hid=%v flags=%d val=%q prefix=%d",
			r.Area, r.Key, r.Entry.Type, r.Entry.Version, r.Entry.ExpireAt, r.Entry.Hidden, r.Entry.Flags, val, len(r.Prefix)))
		for _, kv := range r.Prefix {
			recs = append(recs, fmt.Sprintf("  %q=%q ver=%d exp=%d", kv.Key, kv.Entry.Value, kv.Entry.Version, kv.Entry.ExpireAt))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(recs)
	return strings.Join(recs, "\n")
}

func FuzzExecRDB(f *testing.F) {
	fuzzExec(f, func(testing.TB) engines.Engine { return rdb.Open(fuzzEngineOptions) })
}

func FuzzExecMDB(f *testing.F) {
	fuzzExec(f, func(testing.TB) engines.Engine { return mdb.Open(fuzzEngineOptions) })
}

func FuzzExecLDB(f *testing.F) {
	fuzzExec(f, func(t testing.TB) engines.Engine {
		e, err := ldb.OpenFS(fuzzEngineOptions, vfs.NewMem())
		if err != nil {
			t.Fatal(err)
		}
		return e
	})
}

func FuzzExecKDB(f *testing.F) {
	fuzzExec(f, func(t testing.TB) engines.Engine {
		o := fuzzEngineOptions
		o.Dir = t.TempDir()
		e, err := kdb.Open(o)
		if err != nil {
			t.Fatal(err)
		}
		return e
	})
}

// unordered: every object type but lists and sorted sets is encoded in
// map order.
func unordered(t engines.ValueType) bool {
	return t != engines.TypeList && t != engines.TypeZSet
}

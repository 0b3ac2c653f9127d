// Package enginetest is the conformance suite every engine runs: the same
// cases (Run), the same randomized model comparison (RunModel) and, for
// persistent engines, the same restart check (RunPersistence). An engine
// passes by calling them from its own tests:
//
//	func TestConformance(t *testing.T) { enginetest.Run(t, open) }
//
// where open returns a fresh, empty engine with the given options (the
// suite sets Now to a fake clock and checks that expiry follows it).
package enginetest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"sync"
	"testing"
	"time"

	"github.com/tairkv/tair/engines"
	"github.com/tairkv/tair/internal/errs"
)

// OpenFunc returns a new empty engine opened with o; it should register
// the engine's Close with t.Cleanup (the suite closes it too; Close must be
// idempotent).
type OpenFunc func(t *testing.T, o engines.Options) engines.Engine

// MustOpen is open as an OpenFunc: an error fails t, and the engine is
// closed when t ends.
func MustOpen(open func(o engines.Options) (engines.Engine, error)) OpenFunc {
	return func(t *testing.T, o engines.Options) engines.Engine {
		e, err := open(o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = e.Close() })
		return e
	}
}

// RunInMemory runs the suites of an in-memory engine (rdb, mdb)
// registered as name, one subtest each: the conformance suite, the
// registry check and the model.
func RunInMemory[E engines.Engine](t *testing.T, name string, open func(o engines.Options) E) {
	fresh := func(t *testing.T, o engines.Options) engines.Engine {
		e := open(o)
		t.Cleanup(func() { _ = e.Close() })
		return e
	}
	t.Run("Conformance", func(t *testing.T) { Run(t, fresh) })
	t.Run("Registered", func(t *testing.T) { CheckRegistered(t, name, engines.Options{}, false) })
	t.Run("Model", func(t *testing.T) { RunModel(t, fresh, 20000) })
}

// CheckRegistered opens the engine registered as name with o and checks
// that it reports that name and whether it is persistent.
func CheckRegistered(t *testing.T, name string, o engines.Options, persistent bool) {
	t.Helper()
	e, err := engines.Open(name, o)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if e.Name() != name || e.Persistent() != persistent {
		t.Fatalf("Name %q Persistent %v", e.Name(), e.Persistent())
	}
}

// Clock is a fake clock for Options.Now; safe for concurrent use.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// Epoch is where every suite clock starts: a whole second, so that
// relative and absolute Tair expiries are easy to reason about.
var Epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// NewClock returns a clock at Epoch.
func NewClock() *Clock { return &Clock{t: Epoch} }

// Now returns the current fake time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// NowMs returns Now in unix milliseconds.
func (c *Clock) NowMs() int64 { return c.Now().UnixMilli() }

// BucketOf is the suite's bucket function (1023 buckets, like a default
// cluster); engines must not depend on it.
func BucketOf(key []byte) uint32 {
	h := fnv.New32a()
	h.Write(key)
	return h.Sum32() % 1023
}

// K returns the key s of area 0 with its bucket.
func K(s string) engines.Key { return AK(0, s) }

// AK returns the key s of area with its bucket.
func AK(area uint16, s string) engines.Key {
	return engines.Key{Bucket: BucketOf([]byte(s)), Area: area, Key: []byte(s)}
}

// TestObjectType is the ValueType of TestObject, outside the range the
// project uses so that its codec never clashes with a real one.
const TestObjectType engines.ValueType = 200

// TestObject is a minimal engines.Object: a list of strings, mutated in
// place by Update functions like the Redis structures are.
type TestObject struct {
	Elems []string
}

func (o *TestObject) Type() engines.ValueType { return TestObjectType }
func (o *TestObject) Len() int                { return len(o.Elems) }

// Size counts the element bytes plus a slice header each.
func (o *TestObject) Size() int {
	n := 24
	for _, e := range o.Elems {
		n += 16 + len(e)
	}
	return n
}

// MarshalBinary encodes the elements length-prefixed.
func (o *TestObject) MarshalBinary() ([]byte, error) {
	var b []byte
	for _, e := range o.Elems {
		b = binary.AppendUvarint(b, uint64(len(e)))
		b = append(b, e...)
	}
	return b, nil
}

func decodeTestObject(b []byte) (engines.Object, error) {
	o := &TestObject{}
	for len(b) > 0 {
		n, w := binary.Uvarint(b)
		if w <= 0 || n > uint64(len(b)-w) {
			return nil, fmt.Errorf("enginetest: corrupt test object")
		}
		o.Elems = append(o.Elems, string(b[w:w+int(n)]))
		b = b[w+int(n):]
	}
	return o, nil
}

func init() { engines.RegisterObjectCodec(TestObjectType, decodeTestObject) }

// objectElems returns the elements of an entry holding a TestObject.
func objectElems(t testing.TB, e engines.Entry) []string {
	t.Helper()
	o, ok := e.Object.(*TestObject)
	if !ok {
		t.Fatalf("entry holds %T (type %v), want *TestObject", e.Object, e.Type)
	}
	return o.Elems
}

// fixture is one engine under test with its clock.
type fixture struct {
	t   *testing.T
	e   engines.Engine
	clk *Clock
}

func newFixture(t *testing.T, open OpenFunc, mod func(*engines.Options)) *fixture {
	t.Helper()
	clk := NewClock()
	o := engines.Options{Now: clk.Now}
	if mod != nil {
		mod(&o)
	}
	o.Adjust()
	e := open(t, o)
	t.Cleanup(func() { _ = e.Close() })
	return &fixture{t: t, e: e, clk: clk}
}

// wantCode fails unless err carries code (errs.OK: nil).
func wantCode(t testing.TB, err error, code errs.Code) {
	t.Helper()
	if got := errs.CodeOf(err); got != code {
		t.Fatalf("error %v (code %d), want code %d", err, got, code)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
}

func (f *fixture) put(k engines.Key, v string, o engines.PutOptions) int64 {
	f.t.Helper()
	ver, err := f.e.Put(k, []byte(v), o)
	must(f.t, err)
	return ver
}

// wantGet checks a key's value and version.
func (f *fixture) wantGet(k engines.Key, v string, ver int64) engines.Entry {
	f.t.Helper()
	e, err := f.e.Get(k)
	if err != nil {
		f.t.Fatalf("Get(%q): %v, want %q v%d", k.Key, err, v, ver)
	}
	if string(e.Value) != v || e.Version != ver {
		f.t.Fatalf("Get(%q) = %q v%d, want %q v%d", k.Key, e.Value, e.Version, v, ver)
	}
	return e
}

func (f *fixture) wantMissing(k engines.Key) {
	f.t.Helper()
	e, err := f.e.Get(k)
	if !errors.Is(err, errs.ErrNotFound) {
		f.t.Fatalf("Get(%q) = %q v%d, %v; want not found", k.Key, e.Value, e.Version, err)
	}
}

func (f *fixture) wantCount(area uint16, n int64) {
	f.t.Helper()
	if got := f.e.Count(area); got != n {
		f.t.Fatalf("Count(%d) = %d, want %d", area, got, n)
	}
}

// kvString renders a prefix range for messages and comparisons.
func kvString(kvs []engines.KV) string {
	var b bytes.Buffer
	for i, kv := range kvs {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s=%s/v%d", kv.Key, kv.Entry.Value, kv.Entry.Version)
	}
	return b.String()
}

func itemsString(items [][]byte) string {
	var b bytes.Buffer
	b.WriteByte('[')
	for i, it := range items {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.Write(it)
	}
	b.WriteByte(']')
	return b.String()
}

func bs(ss ...string) [][]byte {
	out := make([][]byte, len(ss))
	for i, s := range ss {
		out[i] = []byte(s)
	}
	return out
}

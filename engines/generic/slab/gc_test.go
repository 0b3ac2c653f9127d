package slab

import (
	"bytes"
	"encoding/binary"
	"reflect"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/cespare/xxhash/v2"
)

// The records of these tests: a 16-byte key and a 32-byte value in one
// 48-byte block, indexed by the key's xxhash.
const (
	testKeyLen = 16
	testValLen = 32
)

func testKey(i int) (k [testKeyLen]byte) {
	copy(k[:], "key:")
	binary.BigEndian.PutUint64(k[8:], uint64(i))
	return k
}

func testValue(i int) (v [testValLen]byte) {
	for j := range v {
		v[j] = byte(i + j)
	}
	return v
}

// buildSlab stores n records in a new Arena and Index.
func buildSlab(n int) (*Arena, *Index) {
	a := New(Options{})
	x := NewIndex(0)
	for i := range n {
		k, v := testKey(i), testValue(i)
		h := a.Alloc(testKeyLen + testValLen)
		b := a.Bytes(h, testKeyLen+testValLen)
		copy(b, k[:])
		copy(b[testKeyLen:], v[:])
		x.Put(xxhash.Sum64(k[:]), h, func(o Handle) bool { return bytes.Equal(a.Bytes(o, testKeyLen), k[:]) })
	}
	return a, x
}

// lookupSlab returns the value stored for key i.
func lookupSlab(a *Arena, x *Index, i int) ([]byte, bool) {
	k := testKey(i)
	h, ok := x.Get(xxhash.Sum64(k[:]), func(o Handle) bool { return bytes.Equal(a.Bytes(o, testKeyLen), k[:]) })
	if !ok {
		return nil, false
	}
	return a.Bytes(h, testKeyLen+testValLen)[testKeyLen:], true
}

// hasPointers reports whether values of type t hold Go pointers, which
// the garbage collector would have to scan.
func hasPointers(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Pointer, reflect.UnsafePointer, reflect.Map, reflect.Slice, reflect.String,
		reflect.Interface, reflect.Chan, reflect.Func:
		return true
	case reflect.Array:
		return t.Len() > 0 && hasPointers(t.Elem())
	case reflect.Struct:
		for f := range t.Fields() {
			if hasPointers(f.Type) {
				return true
			}
		}
	}
	return false
}

// TestNoPointerBuffers asserts that every buffer the Arena and the Index
// allocate is pointer-free (the collector does not scan it), except the
// page tables and class lists, which hold one slice per page or class.
func TestNoPointerBuffers(t *testing.T) {
	if !hasPointers(reflect.TypeFor[[]byte]()) || !hasPointers(reflect.TypeFor[struct {
		_ int
		s string
	}]()) || hasPointers(reflect.TypeFor[[4]uint64]()) {
		t.Fatal("hasPointers is wrong")
	}
	perPage := map[string]bool{"Arena.pages": true, "Arena.big": true, "Arena.partial": true}
	for _, typ := range []reflect.Type{reflect.TypeFor[Arena](), reflect.TypeFor[Index]()} {
		for f := range typ.Fields() {
			name := typ.Name() + "." + f.Name
			elem := f.Type
			if f.Type.Kind() == reflect.Slice {
				elem = f.Type.Elem()
				if perPage[name] {
					if elem.Kind() != reflect.Slice {
						t.Fatalf("%s: %v, want a slice of slices", name, f.Type)
					}
					elem = elem.Elem()
				}
			}
			if hasPointers(elem) {
				t.Errorf("%s (%v): %v holds pointers", name, f.Type, elem)
			}
		}
	}
	for _, typ := range []reflect.Type{reflect.TypeFor[slot](), reflect.TypeFor[pageMeta](), reflect.TypeFor[Handle]()} {
		if hasPointers(typ) {
			t.Errorf("%v holds pointers", typ)
		}
	}
}

// heapObjects counts the heap objects the garbage collector visits when
// it marks v: one per non-nil pointer, slice or string, recursing into
// the elements of slices whose element type holds pointers.
func heapObjects(v reflect.Value) int {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return 0
		}
		return 1 + heapObjects(v.Elem())
	case reflect.Slice:
		if v.IsNil() {
			return 0
		}
		n := 1
		if hasPointers(v.Type().Elem()) {
			for i := range v.Len() {
				n += heapObjects(v.Index(i))
			}
		}
		return n
	case reflect.String:
		if v.Len() == 0 {
			return 0
		}
		return 1
	case reflect.Struct:
		n := 0
		for i := range v.NumField() {
			n += heapObjects(v.Field(i))
		}
		return n
	case reflect.Array:
		n := 0
		for i := range v.Len() {
			n += heapObjects(v.Index(i))
		}
		return n
	case reflect.Map, reflect.Chan, reflect.Func, reflect.UnsafePointer:
		if v.IsNil() {
			return 0
		}
		return 1 << 30 // not expected: fail the bound below
	}
	return 0
}

// TestGCWorkIndependentOfEntries stores 1,000 and 1,000,000 records and
// checks that the heap objects the collector marks grow only by the pages
// added: none per record. The time of a collection is logged.
func TestGCWorkIndependentOfEntries(t *testing.T) {
	const small, large = 1000, 1000000
	a1, x1 := buildSlab(small)
	a2, x2 := buildSlab(large)
	objects := func(a *Arena, x *Index) int {
		return heapObjects(reflect.ValueOf(a)) + heapObjects(reflect.ValueOf(x))
	}
	o1, o2 := objects(a1, x1), objects(a2, x2)
	pages1, pages2 := len(a1.pages), len(a2.pages)
	if o2-o1 != pages2-pages1 {
		t.Fatalf("heap objects: %d for %d records, %d for %d: %d more, pages %d more", o1, small, o2, large, o2-o1, pages2-pages1)
	}
	// 48-byte blocks: 21,674 per 1 MiB page (less its live bitmap).
	if want := (large + 21673) / 21674; pages2 != want {
		t.Fatalf("%d pages for %d records, want %d", pages2, large, want)
	}
	if x2.Len() != large || a2.Stats().Blocks != large || a2.Stats().InUse != large*48 {
		t.Fatalf("Len %d, stats %+v", x2.Len(), a2.Stats())
	}
	for i := 0; i < large; i += 997 {
		v, ok := lookupSlab(a2, x2, i)
		if want := testValue(i); !ok || !bytes.Equal(v, want[:]) {
			t.Fatalf("record %d: %x, %v", i, v, ok)
		}
	}
	runtime.GC()
	start := time.Now()
	runtime.GC()
	t.Logf("%d records: %d heap objects to mark (%d pages), index %d MiB, arena %d MiB; runtime.GC took %v",
		large, o2, pages2, x2.Bytes()>>20, a2.Stats().Reserved>>20, time.Since(start))
	runtime.KeepAlive(a1)
	runtime.KeepAlive(x1)
	runtime.KeepAlive(a2)
	runtime.KeepAlive(x2)
}

// TestConcurrentReads runs lookups, Bytes, Cap, Range and Stats from
// several goroutines on an Index in the middle of a growth: under -race
// this fails if any read writes.
func TestConcurrentReads(t *testing.T) {
	a, x := buildSlab(20000)
	for i := 20000; x.old == nil; i++ {
		k := testKey(i)
		h := a.Alloc(testKeyLen + testValLen)
		copy(a.Bytes(h, testKeyLen), k[:])
		x.Put(xxhash.Sum64(k[:]), h, func(o Handle) bool { return bytes.Equal(a.Bytes(o, testKeyLen), k[:]) })
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := g; i < 20000; i += 4 {
				v, ok := lookupSlab(a, x, i)
				if want := testValue(i); !ok || !bytes.Equal(v, want[:]) {
					t.Errorf("record %d: %x, %v", i, v, ok)
					return
				}
			}
			n := 0
			x.Range(func(h Handle) bool { n += a.Cap(h); return true })
			if n != x.Len()*48 || a.Stats().InUse != int64(n) {
				t.Errorf("Range summed %d bytes, stats %+v", n, a.Stats())
			}
		})
	}
	wg.Wait()
	if x.old == nil {
		t.Fatal("reads moved entries")
	}
}

package enginetest

import (
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tairkv/tair/engines"
	"github.com/tairkv/tair/internal/errs"
)

// RunModel drives an engine and a plain in-test model of SPEC §2 with the
// same random operation sequences (ops operations per seed, a fake clock
// advancing so that expiry is exercised) and compares every result, then
// the whole contents (ForEach, Count) at checkpoints. The seeds are fixed
// so that failures reproduce; TAIR_MODEL_SEED=n runs seed n instead.
//
// The engine must not evict (quota unlimited): the model keeps everything.
func RunModel(t *testing.T, open OpenFunc, ops int) {
	seeds := []uint64{1, 2, 3}
	if s := os.Getenv("TAIR_MODEL_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("TAIR_MODEL_SEED: %v", err)
		}
		seeds = []uint64{n}
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			runModel(t, open, ops, seed)
		})
	}
}

type mkey struct {
	area uint16
	key  string
}

// mrec is the model's record: a string or items, with Tair metadata.
type mrec struct {
	typ    engines.ValueType
	val    string
	items  []string
	ver    int64
	exp    int64
	hidden bool
	flags  uint32
}

type model struct {
	now    int64
	plain  map[mkey]*mrec
	prefix map[mkey]map[string]*mrec
}

func (m *model) live(r *mrec) bool {
	return r != nil && !(r.exp != 0 && m.now > r.exp)
}

func (m *model) get(k mkey) *mrec {
	if r := m.plain[k]; m.live(r) {
		return r
	}
	return nil
}

func (m *model) pget(k mkey, skey string) *mrec {
	if r := m.prefix[k][skey]; m.live(r) {
		return r
	}
	return nil
}

func applyExpire(x engines.Expire, cur int64) int64 {
	switch x.Mode {
	case engines.ExpireKeep:
		return cur
	case engines.ExpireAt:
		return x.At
	}
	return 0
}

// put is the model of Put and PrefixPut on the slot *slot.
func (m *model) put(cur *mrec, v string, o engines.PutOptions) (*mrec, int64, errs.Code) {
	exists := cur != nil
	if (o.Cond == engines.CondIfMissing && exists) || (o.Cond == engines.CondIfExists && !exists) {
		return cur, 0, errs.OK
	}
	var ver, exp int64
	if exists {
		if o.Version != 0 && o.Version != cur.ver {
			return cur, 0, errs.VersionError
		}
		ver, exp = cur.ver, cur.exp
	}
	n := &mrec{typ: engines.TypeString, val: v, ver: ver + 1, exp: applyExpire(o.Expire, exp), flags: o.Flags}
	return n, n.ver, errs.OK
}

// nextExpiry returns the earliest expiry after now, or 0.
func (m *model) nextExpiry() int64 {
	var at int64
	consider := func(r *mrec) {
		if r != nil && r.exp > m.now && (at == 0 || r.exp < at) {
			at = r.exp
		}
	}
	for _, r := range m.plain {
		consider(r)
	}
	for _, sk := range m.prefix {
		for _, r := range sk {
			consider(r)
		}
	}
	return at
}

func (m *model) count(area uint16) int64 {
	var n int64
	for k, r := range m.plain {
		if k.area == area && m.live(r) {
			n++
		}
	}
	for k, sk := range m.prefix {
		if k.area != area {
			continue
		}
		for _, r := range sk {
			if m.live(r) {
				n++
				break
			}
		}
	}
	return n
}

// dump renders the model's live records of bucket like dump does.
func (m *model) dump(bucket uint32) []string {
	var out []string
	ent := func(r *mrec) string {
		v := r.val
		if r.typ == engines.TypeItems {
			v = string(encodeItemsForDump(r.items))
		}
		return fmt.Sprintf("%v:%q v%d exp%d f%d h%v", r.typ, v, r.ver, r.exp, r.flags, r.hidden)
	}
	for k, r := range m.plain {
		if BucketOf([]byte(k.key)) == bucket && m.live(r) {
			out = append(out, fmt.Sprintf("a%d %q = %s", k.area, k.key, ent(r)))
		}
	}
	for k, sk := range m.prefix {
		if BucketOf([]byte(k.key)) != bucket {
			continue
		}
		var skeys []string
		for s, r := range sk {
			if m.live(r) {
				skeys = append(skeys, s)
			}
		}
		if len(skeys) == 0 {
			continue
		}
		sort.Strings(skeys)
		var b strings.Builder
		fmt.Fprintf(&b, "a%d %q prefix:", k.area, k.key)
		for _, s := range skeys {
			fmt.Fprintf(&b, " %q=%s", s, ent(sk[s]))
		}
		out = append(out, b.String())
	}
	sort.Strings(out)
	return out
}

// encodeItemsForDump is the engines' item encoding (generic.EncodeItems),
// restated here so that the model does not share code with the engine.
func encodeItemsForDump(items []string) []byte {
	var b []byte
	b = appendUvarint(b, uint64(len(items)))
	for _, it := range items {
		b = appendUvarint(b, uint64(len(it)))
		b = append(b, it...)
	}
	return b
}

func appendUvarint(b []byte, v uint64) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

func itemWindow(n, off, cnt int) (int, int) {
	lo := off
	if off < 0 {
		lo = max(n+off, 0)
	}
	lo = min(lo, n)
	hi := min(n, lo+cnt)
	return lo, hi
}

// modelRun is one seed's run.
type modelRun struct {
	t   *testing.T
	rnd *rand.Rand
	clk *Clock
	e   engines.Engine
	m   *model
	log []string
	op  int
}

func (r *modelRun) fail(format string, args ...any) {
	r.t.Helper()
	start := max(0, len(r.log)-25)
	r.t.Fatalf("op %d: %s\nlast ops:\n  %s", r.op, fmt.Sprintf(format, args...), strings.Join(r.log[start:], "\n  "))
}

func (r *modelRun) logf(format string, args ...any) {
	r.log = append(r.log, fmt.Sprintf("%d: ", r.op)+fmt.Sprintf(format, args...))
	if len(r.log) > 200 {
		r.log = r.log[100:]
	}
}

func (r *modelRun) checkCode(what string, err error, want errs.Code) {
	r.t.Helper()
	if got := errs.CodeOf(err); got != want {
		r.fail("%s: error %v (code %d), model says code %d", what, err, got, want)
	}
}

var (
	modelKeys   = []string{"k0", "k1", "k2", "k3", "k4", "k5", "k6", "k7", "{t}a", "{t}b"}
	modelPkeys  = []string{"p0", "p1", "p2", "k0"} // k0 is also a plain key
	modelSkeys  = []string{"", "a", "a\x00", "b", "ba", "c", "\xff"}
	modelValues = []string{"", "0", "1", "7", "-3", "9223372036854775806", "x", "abc", "01"}
)

func (r *modelRun) key() (engines.Key, mkey) {
	area := uint16(r.rnd.IntN(2))
	k := modelKeys[r.rnd.IntN(len(modelKeys))]
	return AK(area, k), mkey{area, k}
}

func (r *modelRun) pkey() (engines.Key, mkey) {
	area := uint16(r.rnd.IntN(2))
	k := modelPkeys[r.rnd.IntN(len(modelPkeys))]
	return AK(area, k), mkey{area, k}
}

func (r *modelRun) skey() string { return modelSkeys[r.rnd.IntN(len(modelSkeys))] }

func (r *modelRun) value() string { return modelValues[r.rnd.IntN(len(modelValues))] }

// version picks a version to send: mostly 0 or right, sometimes wrong.
func (r *modelRun) version(cur *mrec) int64 {
	switch r.rnd.IntN(5) {
	case 0, 1:
		return 0
	case 2:
		if cur != nil {
			return cur.ver
		}
		return 1
	case 3:
		return int64(1 + r.rnd.IntN(4))
	}
	if cur != nil {
		return cur.ver + 1
	}
	return 3
}

func (r *modelRun) expire() engines.Expire {
	switch r.rnd.IntN(6) {
	case 0, 1:
		return engines.Expire{Mode: engines.ExpireNever}
	case 2:
		return engines.Expire{Mode: engines.ExpireKeep}
	case 3, 4:
		return engines.Expire{Mode: engines.ExpireAt, At: r.m.now + int64(1+r.rnd.IntN(3000))}
	}
	// Relative Tair seconds through TairExpire, as the dataserver does.
	return engines.TairExpire(int64(1+r.rnd.IntN(3)), r.clk.Now())
}

func (r *modelRun) cond() engines.Cond {
	switch r.rnd.IntN(8) {
	case 0:
		return engines.CondIfMissing
	case 1:
		return engines.CondIfExists
	}
	return engines.CondAlways
}

func runModel(t *testing.T, open OpenFunc, ops int, seed uint64) {
	clk := NewClock()
	o := engines.Options{Now: clk.Now}
	o.Adjust()
	e := open(t, o)
	t.Cleanup(func() { _ = e.Close() })
	r := &modelRun{
		t: t, rnd: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), clk: clk, e: e,
		m: &model{now: clk.NowMs(), plain: map[mkey]*mrec{}, prefix: map[mkey]map[string]*mrec{}},
	}
	for r.op = 0; r.op < ops; r.op++ {
		r.step()
		if r.op%1000 == 999 {
			r.checkAll()
		}
	}
	r.checkAll()
}

// checkAll compares the whole contents and the counts.
func (r *modelRun) checkAll() {
	r.t.Helper()
	buckets := map[uint32]bool{}
	for _, k := range append(append([]string(nil), modelKeys...), modelPkeys...) {
		buckets[BucketOf([]byte(k))] = true
	}
	for b := range buckets {
		got := dump(r.t, r.e, b)
		want := r.m.dump(b)
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			r.fail("bucket %d contents:\n%s\nmodel:\n%s", b, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
	for a := uint16(0); a < 2; a++ {
		if got, want := r.e.Count(a), r.m.count(a); got != want {
			r.fail("Count(%d) = %d, model %d", a, got, want)
		}
	}
	all := make([]uint32, 0, len(buckets))
	for b := range buckets {
		all = append(all, b)
	}
	CheckKeyCounts(r.t, r.e, all, r.clk.NowMs())
}

func (r *modelRun) checkEntry(what string, got engines.Entry, err error, want *mrec) {
	r.t.Helper()
	if want == nil {
		r.checkCode(what, err, errs.DataNotExist)
		return
	}
	if err != nil {
		r.fail("%s: %v, model has %+v", what, err, *want)
	}
	v := want.val
	if want.typ == engines.TypeItems {
		v = string(encodeItemsForDump(want.items))
	}
	if got.Type != want.typ || string(got.Value) != v || got.Version != want.ver || got.ExpireAt != want.exp ||
		got.Hidden != want.hidden || got.Flags != want.flags {
		r.fail("%s = %v %q v%d exp%d h%v f%d, model %v %q v%d exp%d h%v f%d", what,
			got.Type, got.Value, got.Version, got.ExpireAt, got.Hidden, got.Flags,
			want.typ, v, want.ver, want.exp, want.hidden, want.flags)
	}
}

func (r *modelRun) step() {
	m := r.m
	switch op := r.rnd.IntN(100); {
	case op < 4: // time passes; often exactly to a record's expiry, the boundary
		d := time.Duration(r.rnd.IntN(1500)) * time.Millisecond
		if r.rnd.IntN(2) == 0 {
			if at := m.nextExpiry(); at > m.now {
				d = time.Duration(at-m.now) * time.Millisecond
			}
		}
		r.clk.Advance(d)
		m.now = r.clk.NowMs()
		r.logf("advance %v", d)

	case op < 20:
		ek, k := r.key()
		r.logf("get %v", k)
		got, err := r.e.Get(ek)
		r.checkEntry(fmt.Sprintf("Get(%v)", k), got, err, m.get(k))

	case op < 36:
		ek, k := r.key()
		cur := m.get(k)
		v := r.value()
		o := engines.PutOptions{Version: r.version(cur), Expire: r.expire(), Cond: r.cond(), Flags: uint32(r.rnd.IntN(2))}
		r.logf("put %v %q %+v", k, v, o)
		n, ver, code := m.put(cur, v, o)
		got, err := r.e.Put(ek, []byte(v), o)
		r.checkCode("Put", err, code)
		if got != ver {
			r.fail("Put version %d, model %d", got, ver)
		}
		m.plain[k] = n

	case op < 42:
		ek, k := r.key()
		cur := m.get(k)
		ver := r.version(cur)
		r.logf("remove %v v%d", k, ver)
		code := removeCode(cur, ver)
		if code == errs.OK {
			delete(m.plain, k)
		}
		r.checkCode("Remove", r.e.Remove(ek, ver), code)

	case op < 52:
		ek, k := r.key()
		cur := m.get(k)
		delta := int64(r.rnd.IntN(11) - 5)
		o := engines.IncrOptions{Init: int64(r.rnd.IntN(3)), Version: r.version(cur), Expire: r.expire()}
		if r.rnd.IntN(3) == 0 {
			o.Min, o.Max, o.HasMin, o.HasMax = -4, 8, r.rnd.IntN(2) == 0, r.rnd.IntN(2) == 0
		}
		r.logf("incr %v %d %+v", k, delta, o)
		want, wver, code := m.incr(k, cur, delta, o)
		got, gver, err := r.e.Incr(ek, delta, o)
		r.checkCode("Incr", err, code)
		if got != want || gver != wver {
			r.fail("Incr = %d v%d, model %d v%d", got, gver, want, wver)
		}

	case op < 55:
		ek, k := r.key()
		hide := r.rnd.IntN(2) == 0
		r.logf("hide %v %v", k, hide)
		code := errs.OK
		if cur := m.get(k); cur == nil {
			code = errs.DataNotExist
		} else {
			c := *cur
			c.hidden = hide
			m.plain[k] = &c
		}
		r.checkCode("SetHidden", r.e.SetHidden(ek, hide), code)

	case op < 60: // Update: append "!" to a string, delete "x", keep the rest
		ek, k := r.key()
		r.logf("update %v", k)
		cur := m.get(k)
		var want *mrec
		switch {
		case cur == nil:
			want = &mrec{typ: engines.TypeString, val: "new", ver: 1}
		case cur.typ == engines.TypeString && cur.val == "x":
			want = nil
		case cur.typ == engines.TypeString:
			c := *cur
			c.val += "!"
			c.ver++
			want = &c
		default:
			want = cur
		}
		got, err := r.e.Update(ek, func(c engines.Entry, exists bool) (engines.Entry, engines.Action, error) {
			switch {
			case !exists:
				return engines.Entry{Type: engines.TypeString, Value: []byte("new")}, engines.Store, nil
			case c.Type == engines.TypeString && string(c.Value) == "x":
				return c, engines.Delete, nil
			case c.Type == engines.TypeString:
				c.Value = append(append([]byte(nil), c.Value...), '!')
				return c, engines.Store, nil
			}
			return c, engines.Keep, nil
		})
		if want == nil {
			if err != nil || got.Version != 0 {
				r.fail("Update delete = %+v %v", got, err)
			}
			delete(m.plain, k)
		} else {
			r.checkEntry("Update", got, err, want)
			m.plain[k] = want
		}

	case op < 66:
		ek, k := r.key()
		cur := m.get(k)
		maxCount := 1 + r.rnd.IntN(5)
		items := make([]string, 1+r.rnd.IntN(3))
		for i := range items {
			items[i] = fmt.Sprint(r.op, ".", i)
		}
		o := engines.PutOptions{Version: r.version(cur), Expire: r.expire(), Cond: r.cond()}
		r.logf("itemadd %v %d %v %+v", k, maxCount, items, o)
		want, code := m.itemAdd(k, cur, maxCount, items, o)
		got, err := r.e.ItemAdd(ek, maxCount, bs(items...), o)
		r.checkCode("ItemAdd", err, code)
		if got != want {
			r.fail("ItemAdd = %d, model %d", got, want)
		}

	case op < 72:
		ek, k := r.key()
		off, cnt := r.rnd.IntN(9)-4, r.rnd.IntN(5)
		r.logf("itemget %v %d %d", k, off, cnt)
		cur := m.get(k)
		got, err := r.e.ItemGet(ek, off, cnt)
		code := itemsCode(cur)
		r.checkCode("ItemGet", err, code)
		if code == errs.OK {
			lo, hi := itemWindow(len(cur.items), off, cnt)
			if w := "[" + strings.Join(cur.items[lo:hi], " ") + "]"; itemsString(got) != w {
				r.fail("ItemGet = %s, model %s", itemsString(got), w)
			}
		}

	case op < 76:
		ek, k := r.key()
		off, cnt := r.rnd.IntN(9)-4, r.rnd.IntN(4)
		withGet := r.rnd.IntN(2) == 0
		r.logf("itemdel %v %d %d get=%v", k, off, cnt, withGet)
		cur := m.get(k)
		var got [][]byte
		var err error
		if withGet {
			got, err = r.e.ItemGetDelete(ek, off, cnt)
		} else {
			var n int
			n, err = r.e.ItemDelete(ek, off, cnt)
			got = make([][]byte, n)
		}
		code := itemsCode(cur)
		r.checkCode("ItemDelete", err, code)
		if code == errs.OK {
			lo, hi := itemWindow(len(cur.items), off, cnt)
			if len(got) != hi-lo {
				r.fail("ItemDelete removed %d, model %d", len(got), hi-lo)
			}
			if withGet {
				if w := "[" + strings.Join(cur.items[lo:hi], " ") + "]"; itemsString(got) != w {
					r.fail("ItemGetDelete = %s, model %s", itemsString(got), w)
				}
			}
			if lo < hi {
				c := *cur
				c.items = append(append([]string(nil), cur.items[:lo]...), cur.items[hi:]...)
				c.ver++
				if len(c.items) == 0 {
					delete(m.plain, k)
				} else {
					m.plain[k] = &c
				}
			}
		}

	case op < 78:
		ek, k := r.key()
		r.logf("itemcount %v", k)
		cur := m.get(k)
		n, err := r.e.ItemCount(ek)
		code := itemsCode(cur)
		r.checkCode("ItemCount", err, code)
		if code == errs.OK {
			if n != len(cur.items) {
				r.fail("ItemCount = %d, model %d", n, len(cur.items))
			}
		}

	case op < 86:
		ek, k := r.pkey()
		s := r.skey()
		cur := m.pget(k, s)
		v := r.value()
		o := engines.PutOptions{Version: r.version(cur), Expire: r.expire(), Cond: r.cond()}
		r.logf("pput %v %q %q %+v", k, s, v, o)
		n, ver, code := m.put(cur, v, o)
		got, err := r.e.PrefixPut(ek, []byte(s), []byte(v), o)
		r.checkCode("PrefixPut", err, code)
		if got != ver {
			r.fail("PrefixPut version %d, model %d", got, ver)
		}
		if n != nil {
			if m.prefix[k] == nil {
				m.prefix[k] = map[string]*mrec{}
			}
			m.prefix[k][s] = n
		}

	case op < 90:
		ek, k := r.pkey()
		s := r.skey()
		r.logf("pget %v %q", k, s)
		got, err := r.e.PrefixGet(ek, []byte(s))
		r.checkEntry(fmt.Sprintf("PrefixGet(%v, %q)", k, s), got, err, m.pget(k, s))

	case op < 93:
		ek, k := r.pkey()
		s := r.skey()
		cur := m.pget(k, s)
		ver := r.version(cur)
		r.logf("pdel %v %q v%d", k, s, ver)
		code := removeCode(cur, ver)
		if code == errs.OK {
			delete(m.prefix[k], s)
		}
		r.checkCode("PrefixRemove", r.e.PrefixRemove(ek, []byte(s), ver), code)

	case op < 98:
		ek, k := r.pkey()
		o := engines.RangeOptions{Limit: r.rnd.IntN(4), Reverse: r.rnd.IntN(2) == 0}
		if r.rnd.IntN(2) == 0 {
			o.Start = []byte(r.skey())
		}
		if r.rnd.IntN(2) == 0 {
			o.End = []byte(r.skey())
		}
		r.logf("prange %v %q %q limit %d rev %v", k, o.Start, o.End, o.Limit, o.Reverse)
		got, err := r.e.PrefixRange(ek, o)
		r.checkCode("PrefixRange", err, errs.OK)
		var skeys []string
		for s, rec := range m.prefix[k] {
			if m.live(rec) && (len(o.Start) == 0 || s >= string(o.Start)) && (len(o.End) == 0 || s <= string(o.End)) {
				skeys = append(skeys, s)
			}
		}
		sort.Strings(skeys)
		if o.Reverse {
			for i, j := 0, len(skeys)-1; i < j; i, j = i+1, j-1 {
				skeys[i], skeys[j] = skeys[j], skeys[i]
			}
		}
		if o.Limit > 0 && len(skeys) > o.Limit {
			skeys = skeys[:o.Limit]
		}
		var want []engines.KV
		for _, s := range skeys {
			rec := m.prefix[k][s]
			want = append(want, engines.KV{Key: []byte(s), Entry: engines.Entry{Value: []byte(rec.val), Version: rec.ver}})
		}
		if kvString(got) != kvString(want) {
			r.fail("PrefixRange = %q, model %q", kvString(got), kvString(want))
		}

	case op < 99:
		ek, k := r.pkey()
		r.logf("premoveall %v", k)
		want := 0
		for _, rec := range m.prefix[k] {
			if m.live(rec) {
				want++
			}
		}
		delete(m.prefix, k)
		got, err := r.e.PrefixRemoveAll(ek)
		if err != nil || got != want {
			r.fail("PrefixRemoveAll = %d %v, model %d", got, err, want)
		}

	default:
		if r.rnd.IntN(4) == 0 {
			r.bucketOp()
			return
		}
		if r.rnd.IntN(10) != 0 {
			area := uint16(r.rnd.IntN(2))
			r.logf("count %d", area)
			if got, want := r.e.Count(area), m.count(area); got != want {
				r.fail("Count(%d) = %d, model %d", area, got, want)
			}
			return
		}
		area := uint16(r.rnd.IntN(2))
		r.logf("deletearea %d", area)
		want := m.count(area)
		for k := range m.plain {
			if k.area == area {
				delete(m.plain, k)
			}
		}
		for k := range m.prefix {
			if k.area == area {
				delete(m.prefix, k)
			}
		}
		got, err := r.e.DeleteArea(area)
		if err != nil || got != want {
			r.fail("DeleteArea(%d) = %d %v, model %d", area, got, err, want)
		}
	}
}

// removeCode is the code a remove of cur at version ver answers (OK:
// the record goes).
func removeCode(cur *mrec, ver int64) errs.Code {
	switch {
	case cur == nil:
		return errs.DataNotExist
	case ver != 0 && ver != cur.ver:
		return errs.VersionError
	}
	return errs.OK
}

// itemsCode is the code a read or delete of cur's items answers.
func itemsCode(cur *mrec) errs.Code {
	switch {
	case cur == nil:
		return errs.DataNotExist
	case cur.typ != engines.TypeItems:
		return errs.TypeNotMatch
	}
	return errs.OK
}

// incr is the model of Incr.
func (m *model) incr(k mkey, cur *mrec, delta int64, o engines.IncrOptions) (int64, int64, errs.Code) {
	base := o.Init
	var ver, exp int64
	c := mrec{typ: engines.TypeString}
	if cur != nil {
		if cur.typ != engines.TypeString {
			return 0, 0, errs.TypeNotMatch
		}
		if o.Version != 0 && o.Version != cur.ver {
			return 0, 0, errs.VersionError
		}
		n, err := strconv.ParseInt(cur.val, 10, 64)
		if err != nil || strconv.FormatInt(n, 10) != cur.val {
			return 0, 0, errs.InvalidArgument
		}
		base, ver, exp = n, cur.ver, cur.exp
		c = *cur
	}
	v := base + delta
	if (delta > 0 && v < base) || (delta < 0 && v > base) {
		return 0, 0, errs.InvalidArgument
	}
	if (o.HasMin && v < o.Min) || (o.HasMax && v > o.Max) {
		return 0, 0, errs.CounterOutOfRange
	}
	c.val = strconv.FormatInt(v, 10)
	c.ver = ver + 1
	c.exp = applyExpire(o.Expire, exp)
	m.plain[k] = &c
	return v, c.ver, errs.OK
}

// itemAdd is the model of ItemAdd.
func (m *model) itemAdd(k mkey, cur *mrec, maxCount int, items []string, o engines.PutOptions) (int, errs.Code) {
	exists := cur != nil
	if (o.Cond == engines.CondIfMissing && exists) || (o.Cond == engines.CondIfExists && !exists) {
		if exists && cur.typ == engines.TypeItems {
			return len(cur.items), errs.OK
		}
		return 0, errs.OK
	}
	c := mrec{typ: engines.TypeItems, flags: o.Flags}
	if exists {
		if cur.typ != engines.TypeItems {
			return 0, errs.TypeNotMatch
		}
		if o.Version != 0 && o.Version != cur.ver {
			return 0, errs.VersionError
		}
		c = *cur
	}
	all := append(append([]string(nil), c.items...), items...)
	if len(all) > maxCount {
		all = all[len(all)-maxCount:]
	}
	c.items = all
	c.ver++
	c.exp = applyExpire(o.Expire, c.exp)
	m.plain[k] = &c
	return len(all), errs.OK
}

// bucketOp deletes a bucket, or moves it out and back in (ForEach, then
// DeleteBucket, then Restore of every record) which must change nothing.
func (r *modelRun) bucketOp() {
	m := r.m
	names := append(append([]string(nil), modelKeys...), modelPkeys...)
	b := BucketOf([]byte(names[r.rnd.IntN(len(names))]))
	if r.rnd.IntN(3) == 0 {
		r.logf("deletebucket %d", b)
		for k := range m.plain {
			if BucketOf([]byte(k.key)) == b {
				delete(m.plain, k)
			}
		}
		for k := range m.prefix {
			if BucketOf([]byte(k.key)) == b {
				delete(m.prefix, k)
			}
		}
		if err := r.e.DeleteBucket(b); err != nil {
			r.fail("DeleteBucket(%d): %v", b, err)
		}
		return
	}
	r.logf("migrate bucket %d out and back", b)
	var recs []*engines.Record
	err := r.e.ForEach(b, func(rec *engines.Record) error {
		c := *rec
		c.Key = append([]byte(nil), rec.Key...)
		c.Prefix = append([]engines.KV(nil), rec.Prefix...)
		recs = append(recs, &c)
		return nil
	})
	if err != nil {
		r.fail("ForEach(%d): %v", b, err)
	}
	if err := r.e.DeleteBucket(b); err != nil {
		r.fail("DeleteBucket(%d): %v", b, err)
	}
	for _, rec := range recs {
		if err := r.e.Restore(b, rec); err != nil {
			r.fail("Restore(%d, %q): %v", b, rec.Key, err)
		}
	}
	// Restored versions must continue: the model is unchanged, checked now.
	got, want := dump(r.t, r.e, b), m.dump(b)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		r.fail("bucket %d after migration:\n%s\nmodel:\n%s", b, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

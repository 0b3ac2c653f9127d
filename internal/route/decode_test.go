package route

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"reflect"
	"testing"
)

// decodePlain decodes with encoding/json alone.
func decodePlain(b []byte, t *Table) error {
	type plain Table
	return json.Unmarshal(b, (*plain)(t))
}

func randomTable(rng *rand.Rand) *Table {
	nodes := []string{"127.0.0.1:41001", "127.0.0.1:41002", "10.0.0.3:5191", "h4:1"}
	pick := func() string {
		if rng.Intn(10) == 0 {
			return ""
		}
		return nodes[rng.Intn(len(nodes))]
	}
	q := rng.Intn(40)
	t := &Table{Version: Version(rng.Uint64()), Buckets: uint32(q), Copies: rng.Intn(4)}
	if rng.Intn(5) > 0 {
		t.Serving = [][]string{}
		for b := 0; b < q; b++ {
			row := []string{}
			for c := rng.Intn(4); c > 0; c-- {
				row = append(row, pick())
			}
			t.Serving = append(t.Serving, row)
		}
	}
	if rng.Intn(2) == 0 {
		t.Destination = cloneRows(t.Serving)
		if len(t.Destination) > 0 {
			t.Destination[0] = append(t.Destination[0], pick())
		}
	}
	for i := rng.Intn(5); i > 0; i-- {
		t.Migrating = append(t.Migrating, Move{Bucket: BucketID(rng.Uint32()), From: pick(), To: pick()})
	}
	for i := rng.Intn(3); i > 0; i-- {
		m, s := nodes[rng.Intn(len(nodes))], nodes[rng.Intn(len(nodes))]
		t.SetBehind(m, s, true)
		t.SetBehindEpoch(m, s, rng.Uint64())
	}
	if rng.Intn(2) == 0 {
		t.Incarnations = map[string]int64{}
		for _, n := range nodes[:rng.Intn(len(nodes))] {
			t.Incarnations[n] = rng.Int63() - rng.Int63n(10)
		}
	}
	return t
}

// Every field of a Table takes the fast path: a field added to Table and
// not to tableDecoder would send every table through encoding/json.
func TestTableDecodeKnowsEveryField(t *testing.T) {
	full := &Table{Version: 1, Buckets: 1, Copies: 2, Serving: [][]string{{"a", "b"}}, Destination: [][]string{{"a", "b"}},
		Migrating: []Move{{Bucket: 0, From: "a", To: "c"}}, Behind: map[string][]string{"a": {"b"}},
		BehindEpoch: map[string]uint64{"a b": 3}, Incarnations: map[string]int64{"a": 9}}
	v := reflect.ValueOf(full).Elem()
	for i := 0; i < v.NumField(); i++ {
		if v.Field(i).IsZero() {
			t.Fatalf("the test's table leaves %s empty: set it", v.Type().Field(i).Name)
		}
	}
	data, err := json.Marshal(full)
	if err != nil {
		t.Fatal(err)
	}
	if d := (tableDecoder{b: data}); !d.table() {
		t.Fatalf("a table with every field took the slow path: %s", data)
	}
}

// The fast path decodes what encoding/json encodes exactly as
// encoding/json decodes it, rows and all.
func TestTableDecodeMatchesEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < 2000; i++ {
		tb := randomTable(rng)
		data, err := json.Marshal(tb)
		if err != nil {
			t.Fatal(err)
		}
		if i%3 == 0 {
			if data, err = json.MarshalIndent(tb, "", "  "); err != nil {
				t.Fatal(err)
			}
		}
		d := tableDecoder{b: data}
		if !d.table() {
			t.Fatalf("table %d took the slow path: %s", i, data)
		}
		var fast, plain Table
		if err := fast.UnmarshalJSON(data); err != nil {
			t.Fatal(err)
		}
		if err := decodePlain(data, &plain); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(&fast, &plain) {
			t.Fatalf("table %d: fast %+v\nplain %+v\nfrom %s", i, fast, plain, data)
		}
	}
}

// Rows share a backing array, but an append to one does not reach the
// next; only the fields present are set; other input falls back.
func TestTableDecodeEdges(t *testing.T) {
	var tb Table
	if err := json.Unmarshal([]byte(`{"version":3,"buckets":2,"serving":[["a","b"],["c","d"]]}`), &tb); err != nil {
		t.Fatal(err)
	}
	tb.Serving[0] = append(tb.Serving[0], "x")
	if fmt.Sprint(tb.Serving) != "[[a b x] [c d]]" {
		t.Fatalf("rows after an append: %v", tb.Serving)
	}
	tb.Copies = 7
	if err := json.Unmarshal([]byte(`{"version":4}`), &tb); err != nil {
		t.Fatal(err)
	}
	if tb.Version != 4 || tb.Copies != 7 || len(tb.Serving) != 2 {
		t.Fatalf("a partial table changed other fields: %+v", tb)
	}
	for _, in := range []string{
		`{"version":1,"serving":[["a\u003cb"]]}`, // an escape
		`{"Version":1}`,                          // a key in another case
		`{"version":1,"copies":-1}`,
		`{"version":1,"incarnations":{"a":-0}}`,
		`{"version":1,"incarnations":{"a":- 5}}`,
		`{"version":1,"incarnations":{"a":-5}}`,
		`{"version":1,"incarnations":{"a":-9223372036854775808}}`,
		`{"version":1,"incarnations":{"a":9223372036854775808}}`,
		`{"version":1.5}`,
		`{"version":18446744073709551616}`,
		`{"buckets":4294967296}`,
		`{"version":1,"serving":null}`,
		`{"version":1,"serving":[null]}`,
		`{"version":1,"behind":{"a":null}}`,
		`{"version":1,"serving":[["é"]]}`,
		`{"version":1,"extra":{"a":[1,2]}}`,
		`{"version":1} x`,
		`{"version":01}`,
		`null`,
		`[]`,
	} {
		var fast, plain Table
		errF := json.Unmarshal([]byte(in), &fast)
		errP := decodePlain([]byte(in), &plain)
		if (errF == nil) != (errP == nil) || !reflect.DeepEqual(fast, plain) {
			t.Errorf("%s: fast %+v (%v), plain %+v (%v)", in, fast, errF, plain, errP)
		}
	}
}

func FuzzTableDecode(f *testing.F) {
	rng := rand.New(rand.NewSource(2))
	for i := 0; i < 20; i++ {
		data, _ := json.Marshal(randomTable(rng))
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var fast, plain Table
		errF := json.Unmarshal(data, &fast)
		errP := decodePlain(data, &plain)
		if (errF == nil) != (errP == nil) {
			t.Fatalf("%q: fast error %v, plain error %v", data, errF, errP)
		}
		if errF == nil && !reflect.DeepEqual(fast, plain) {
			t.Fatalf("%q: fast %+v, plain %+v", data, fast, plain)
		}
	})
}

func BenchmarkTableDecode(b *testing.B) {
	nodes := []string{"127.0.0.1:41001", "127.0.0.1:41002", "127.0.0.1:41003", "127.0.0.1:41004"}
	t := Table{Version: 12345, Buckets: DefaultBuckets, Copies: 2}
	for q := 0; q < DefaultBuckets; q++ {
		t.Serving = append(t.Serving, []string{nodes[q%4], nodes[(q+1)%4]})
		t.Destination = append(t.Destination, []string{nodes[q%4], nodes[(q+2)%4]})
	}
	for i := 0; i < 64; i++ {
		t.Migrating = append(t.Migrating, Move{Bucket: BucketID(i), From: nodes[0], To: nodes[1]})
	}
	data, _ := json.Marshal(&t)
	for _, c := range []struct {
		name string
		fn   func([]byte, *Table) error
	}{
		{"UnmarshalJSON", func(b []byte, t *Table) error { return t.UnmarshalJSON(b) }},
		{"json.Unmarshal", func(b []byte, t *Table) error { return json.Unmarshal(b, t) }},
		{"encoding-json-alone", decodePlain},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				var t Table
				if err := c.fn(data, &t); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

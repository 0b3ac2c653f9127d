package route

import (
	"fmt"
	"strings"
	"testing"
)

func TestHashTag(t *testing.T) {
	cases := []struct{ key, tag string }{
		{"user:1", "user:1"},
		{"{user}:1", "user"},
		{"a{user}b", "user"},
		{"{}x", "{}x"},   // empty tag: whole key, as Redis
		{"{a}{b}", "a"},  // first tag wins
		{"x{y", "x{y"},   // unterminated
		{"x}y{", "x}y{"}, // no tag
	}
	for _, c := range cases {
		if got := string(HashTag([]byte(c.key))); got != c.tag {
			t.Errorf("HashTag(%q) = %q, want %q", c.key, got, c.tag)
		}
	}
}

func TestBucketOf(t *testing.T) {
	if BucketOf([]byte("{user}:1"), 1023) != BucketOf([]byte("{user}:2"), 1023) {
		t.Fatal("keys with one hash tag must share a bucket")
	}
	// Spread: 100k keys over 1023 buckets, each bucket within 40% of the mean.
	counts := make([]int, 1023)
	for i := 0; i < 100000; i++ {
		counts[BucketOf([]byte(fmt.Sprintf("key:%d", i)), 1023)]++
	}
	mean := 100000.0 / 1023
	for b, n := range counts {
		if float64(n) < mean*0.6 || float64(n) > mean*1.4 {
			t.Fatalf("bucket %d has %d keys, mean %.1f", b, n, mean)
		}
	}
	if BucketOf([]byte("k"), 0) != BucketOf([]byte("k"), DefaultBuckets) {
		t.Fatal("q=0 must mean the default")
	}
}

func TestTable(t *testing.T) {
	tb := &Table{Version: 7, Buckets: 3, Copies: 2, Serving: [][]string{{"a", "b"}, {"b", ""}, {"c", "a"}},
		Migrating: []Move{{Bucket: 2, From: "c", To: "b"}}}
	if err := tb.Validate(); err != nil {
		t.Fatal(err)
	}
	if tb.Master(0) != "a" || tb.Master(5) != "" {
		t.Fatal("Master")
	}
	if got := tb.Slaves(1); len(got) != 0 {
		t.Fatalf("lost copies must not be slaves: %v", got)
	}
	if !tb.IsSlave(2, "a") || tb.IsSlave(2, "c") || !tb.IsMaster(2, "c") {
		t.Fatal("IsSlave/IsMaster")
	}
	if m, ok := tb.MoveOf(2); !ok || m.To != "b" {
		t.Fatal("MoveOf")
	}
	if got := strings.Join(tb.Nodes(), ","); got != "a,b,c" {
		t.Fatalf("Nodes = %s", got)
	}
	c := tb.Clone()
	c.Serving[0][0] = "z"
	c.Migrating[0].To = "z"
	if tb.Serving[0][0] != "a" || tb.Migrating[0].To != "b" {
		t.Fatal("Clone must be deep")
	}
	if !strings.Contains(tb.String(), "migrating bucket 2: c -> b") {
		t.Fatalf("String:\n%s", tb.String())
	}
	bad := &Table{Buckets: 2, Serving: [][]string{{"a"}}}
	if bad.Validate() == nil {
		t.Fatal("Validate must refuse a short table")
	}
}

func TestBehind(t *testing.T) {
	tb := &Table{}
	if tb.IsBehind("m", "s") {
		t.Fatal("empty table: behind")
	}
	tb.SetBehind("m", "s2", true)
	tb.SetBehind("m", "s1", true)
	tb.SetBehind("m", "s1", true)
	if got := tb.Behind["m"]; len(got) != 2 || got[0] != "s1" || got[1] != "s2" {
		t.Fatalf("behind m = %v", got)
	}
	c := tb.Clone()
	c.SetBehind("m", "s1", false)
	if !tb.IsBehind("m", "s1") || c.IsBehind("m", "s1") || !c.IsBehind("m", "s2") {
		t.Fatalf("clone shares Behind: %v / %v", tb.Behind, c.Behind)
	}
	c.SetBehind("m", "s2", false)
	if c.Behind != nil {
		t.Fatalf("cleared table keeps %v", c.Behind)
	}
}

func TestBehindEpoch(t *testing.T) {
	tb := &Table{}
	tb.SetBehindEpoch("m", "s", 5) // not marked: nothing to cover
	if tb.BehindCovers("m", "s", 0) || tb.BehindEpoch != nil {
		t.Fatalf("epoch recorded for an unmarked pair: %v", tb.BehindEpoch)
	}
	tb.SetBehind("m", "s", true)
	if !tb.BehindCovers("m", "s", 0) || tb.BehindCovers("m", "s", 1) {
		t.Fatal("a mark without an epoch covers episode 0 only")
	}
	tb.SetBehindEpoch("m", "s", 7)
	tb.SetBehindEpoch("m", "s", 3) // never shrinks
	if !tb.BehindCovers("m", "s", 7) || tb.BehindCovers("m", "s", 8) {
		t.Fatalf("epoch 7: %v", tb.BehindEpoch)
	}
	c := tb.Clone()
	c.SetBehindEpoch("m", "s", 9)
	if tb.BehindCovers("m", "s", 9) {
		t.Fatal("Clone shares BehindEpoch")
	}
	tb.SetBehind("m", "s", false)
	tb.SetBehind("m", "s", true)
	if tb.BehindCovers("m", "s", 1) || tb.BehindEpoch != nil {
		t.Fatalf("a cleared mark kept its epoch: %v", tb.BehindEpoch)
	}
}

func TestAccountsIncarnation(t *testing.T) {
	tb := &Table{}
	if !tb.Accounts("a", 7) {
		t.Fatal("a table without incarnations is served by every node")
	}
	tb.Incarnations = map[string]int64{"a": 7}
	if !tb.Accounts("a", 7) || tb.Accounts("a", 8) || tb.Accounts("b", 7) {
		t.Fatal("Accounts: want only a's incarnation 7")
	}
	c := tb.Clone()
	c.Incarnations["a"] = 9
	if tb.Incarnations["a"] != 7 {
		t.Fatal("Clone shares the incarnations")
	}
}

package difffuzz

import (
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tairkv/tair/internal/command"
	"github.com/tairkv/tair/internal/testutil"
)

// seqLen is the number of random commands in one sequence (after setup).
const seqLen = 60

// shortSeeds is the default run's seeds per engine (about a minute for
// the four engines on two cores); -short runs fewer.
func shortSeeds() int64 {
	if testing.Short() {
		return 10
	}
	return 40
}

func engines() []string {
	if e := os.Getenv("TAIR_DIFFFUZZ_ENGINES"); e != "" {
		return strings.Split(e, ",")
	}
	return []string{"rdb", "mdb", "ldb", "kdb"}
}

func newPair(t *testing.T, redisAddr, engine string) *pair {
	up := startTair(t, engine)
	rc, err := dial("redis", redisAddr)
	if err != nil {
		t.Fatal(err)
	}
	tc, err := dial("tair", up.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rc.close(); tc.close() })
	return &pair{engine: engine, redis: rc, tair: tc, up: up}
}

// TestDiffFuzz: the short mode runs fixed seeds; TAIR_DIFFFUZZ_TIME runs
// fresh seeds for that long (split over the engines), starting at
// TAIR_DIFFFUZZ_SEED (else the clock); TAIR_DIFFFUZZ_SEED alone runs that
// one seed.
func TestDiffFuzz(t *testing.T) {
	redisAddr := testutil.StartRedis(t)
	var total time.Duration
	if s := os.Getenv("TAIR_DIFFFUZZ_TIME"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("TAIR_DIFFFUZZ_TIME: %v", err)
		}
		total = d
	}
	first, one := int64(1), false
	if s := os.Getenv("TAIR_DIFFFUZZ_SEED"); s != "" {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("TAIR_DIFFFUZZ_SEED: %v", err)
		}
		first, one = v, total == 0
	} else if total > 0 {
		first = time.Now().UnixNano() % 1_000_000_000
	}
	if total > 0 {
		t.Logf("long mode: %v from seed %d", total, first)
	}
	engs := engines()
	for _, engine := range engs {
		t.Run(engine, func(t *testing.T) {
			p := newPair(t, redisAddr, engine)
			deadline := time.Now().Add(total / time.Duration(len(engs)))
			failed := map[string]bool{}
			p.normalised = map[string]int{}
			runs := 0
			for seed := first; ; seed++ {
				if one && seed > first || total == 0 && !one && seed >= first+shortSeeds() ||
					total > 0 && time.Now().After(deadline) {
					break
				}
				runs++
				seq := generate(seed, seqLen)
				d, err := p.run(seq)
				if err != nil {
					t.Fatalf("seed %d: %v", seed, err)
				}
				if d == nil {
					continue
				}
				if d.broken {
					t.Fatalf("seed %d: %s\nsequence:\n%s", seed, d, formatSeq(engine, seq[:d.step+1]))
				}
				name := strings.ToLower(d.cmd[0])
				if failed[name] {
					continue // one report per command
				}
				failed[name] = true
				small, sd := p.shrink(seq, d, 90*time.Second)
				t.Errorf("seed %d: %s\nshrunk reproducer (testdata/regress/NAME.txt):\n%s", seed, sd, formatSeq(engine, small))
				if len(failed) >= 8 {
					t.Fatalf("too many differences, stopping")
				}
			}
			t.Logf("%s: %d sequences", engine, runs)
			for why, n := range p.normalised {
				t.Logf("normalised %d x: %s", n, why)
			}
		})
	}
}

// TestRegress replays every testdata/regress/*.txt against redis-server
// and the engines it names (all when none).
func TestRegress(t *testing.T) {
	files, err := filepath.Glob("testdata/regress/*.txt")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Skip("no regression files")
	}
	byEngine := map[string][]string{}
	for _, f := range files {
		engs, _, err := readRegress(f)
		if err != nil {
			t.Fatal(err)
		}
		if len(engs) == 0 {
			engs = engines()
		}
		for _, e := range engs {
			byEngine[e] = append(byEngine[e], f)
		}
	}
	redisAddr := testutil.StartRedis(t)
	var names []string
	for e := range byEngine {
		names = append(names, e)
	}
	sort.Strings(names)
	for _, engine := range names {
		t.Run(engine, func(t *testing.T) {
			p := newPair(t, redisAddr, engine)
			for _, f := range byEngine[engine] {
				_, seq, _ := readRegress(f)
				d, err := p.run(seq)
				if err != nil {
					t.Fatalf("%s: %v", f, err)
				}
				if d != nil {
					t.Errorf("%s: %s", f, d)
					if d.broken {
						return
					}
				}
			}
		})
	}
}

// TestGeneratorCoversTable: every command of the proxy's table is drawn,
// skipped with a reason, or a Tair extension.
func TestGeneratorCoversTable(t *testing.T) {
	for _, s := range command.All() {
		if _, ok := gens[s.Name]; ok {
			continue
		}
		if _, ok := skipped[s.Name]; ok {
			continue
		}
		if tairOnly(s.Name) {
			continue
		}
		t.Errorf("command %q is neither drawn nor skipped with a reason", s.Name)
	}
	for n := range gens {
		if command.Lookup([]byte(n)) == nil {
			t.Errorf("generator draws %q, which the proxy's table does not have", n)
		}
	}
}

// TestFormatRoundTrip: the regression format reads back what it wrote,
// and a seed always draws the same sequence.
func TestFormatRoundTrip(t *testing.T) {
	for seed := int64(0); seed < 50; seed++ {
		seq := generate(seed, seqLen)
		again := generate(seed, seqLen)
		if formatSeq("rdb", seq) != formatSeq("rdb", again) {
			t.Fatalf("seed %d draws two sequences", seed)
		}
		for _, c := range seq {
			back, err := parseLine(formatCmd(c))
			if err != nil {
				t.Fatalf("%q: %v", formatCmd(c), err)
			}
			if strings.Join(back, "\x01") != strings.Join(c, "\x01") || len(back) != len(c) {
				t.Fatalf("%q read back as %q", c, back)
			}
		}
	}
}

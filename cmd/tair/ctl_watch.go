package main

// `tair ctl migrations [--watch]` and `tair ctl node drain ADDR --wait`:
// the migration plan's progress, redrawn in place with bars on a
// terminal, as plain lines (a frame each time it changes) elsewhere, as
// one JSON document per poll with --json.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/tairkv/tair/internal/route"
	"github.com/tairkv/tair/internal/wire"
)

// moveProgress is one running move as --watch shows it: the API's
// MigrationProgress with the source (from the table's migrating list)
// and the rate and share measured here.
type moveProgress struct {
	Bucket   route.BucketID `json:"bucket"`
	From     string         `json:"from"`
	To       string         `json:"to"`
	KeysSent int64          `json:"keys_sent"`
	// Percent estimates the share of the bucket sent: keys sent over the
	// source's keys per bucket copy, at most 99 until the move is done
	// (100); -1 when the source holds no keys to estimate with.
	Percent    float64 `json:"percent"`
	KeysPerSec float64 `json:"keys_per_sec"`
	Done       bool    `json:"done"`
	Failed     string  `json:"failed,omitempty"`
}

// progress is one poll of --watch or --wait (and its --json document).
type progress struct {
	Migrations wire.MigrationStatus `json:"migrations"`
	Moves      []moveProgress       `json:"moves"`
	KeysPerSec float64              `json:"keys_per_sec"`
	// Node is the drained node (--wait), Copies the copies it still
	// holds (the table's, and while it is alive those it reports).
	Node   *wire.NodeStatus `json:"node,omitempty"`
	Copies int              `json:"copies"`
	// Finished: nothing runs or waits, and a drained node holds nothing.
	Finished bool `json:"finished"`
	// Error is a failed poll after the first (the watch goes on).
	Error string `json:"error,omitempty"`
}

type moveKey struct {
	bucket route.BucketID
	to     string
}

type keySample struct {
	keys int64
	at   time.Time
}

// progressWatch polls the configserver and shows each poll.
type progressWatch struct {
	e      *ctlEnv
	cmd    *cobra.Command
	w      io.Writer
	term   bool // draw bars in place (w is a terminal)
	width  int
	drain  string // the node a --wait follows ("": migrations --watch)
	start  int    // its copies at the first poll
	prev   map[moveKey]keySample
	from   map[moveKey]string // the running moves' sources, from the tables read
	last   string             // plain mode: the last frame printed
	drawn  int                // terminal mode: lines of the last frame
	stuck  time.Time
	polled bool
}

func newProgressWatch(e *ctlEnv, cmd *cobra.Command, drain string) *progressWatch {
	p := &progressWatch{e: e, cmd: cmd, w: cmd.OutOrStdout(), drain: drain, start: -1, prev: map[moveKey]keySample{},
		from: map[moveKey]string{}}
	p.term, p.width = terminalWidth(p.w)
	return p
}

// terminalWidth says whether w is a terminal, and its width.
func terminalWidth(w io.Writer) (bool, int) {
	f, ok := w.(*os.File)
	if !ok {
		return false, 0
	}
	if _, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS); err != nil {
		return false, 0
	}
	width := 80
	if ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ); err == nil && ws.Col > 0 {
		width = int(ws.Col)
	}
	return true, width
}

// errStuck: a drained node holds copies that no move is planned for.
var errStuck = errors.New("stuck")

// stuckAfter is how long a drain may show copies left and no move
// before --wait gives up.
var stuckAfter = 10 * time.Second

// run polls every interval until the plan is finished (and the drained
// node holds nothing), ctx ends (Ctrl-C), or timeout (0: none) passes.
func (p *progressWatch) run(ctx context.Context, interval, timeout time.Duration) error {
	var deadline <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		deadline = t.C
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	var last progress
	for {
		pr, err := p.poll(ctx)
		switch {
		case err != nil && ctx.Err() != nil:
			return p.interrupted(last)
		case err != nil && !p.polled:
			return err
		case err != nil:
			// A failover or a slow answer: shown, and polled again.
			pr = last
			pr.Error = err.Error()
		default:
			p.polled = true
			last = pr
		}
		if err := p.show(pr); err != nil {
			return err
		}
		if pr.Finished {
			return p.finish(pr)
		}
		if err == nil && p.drain != "" && len(pr.Migrations.Running) == 0 && len(pr.Migrations.Pending) == 0 {
			if p.stuck.IsZero() {
				p.stuck = time.Now()
			} else if time.Since(p.stuck) > stuckAfter {
				return fmt.Errorf("node %s still holds %s and no move is planned for them (%w); see `tair ctl nodes`",
					p.drain, copies(pr.Copies), errStuck)
			}
		} else if err == nil {
			p.stuck = time.Time{}
		}
		select {
		case <-ctx.Done():
			return p.interrupted(last)
		case <-deadline:
			p.endFrame()
			m := last.Migrations
			if p.drain != "" {
				return fmt.Errorf("timed out after %v: node %s still holds %s (%d moves running, %d pending)",
					timeout, p.drain, copies(last.Copies), len(m.Running), len(m.Pending))
			}
			return fmt.Errorf("timed out after %v: %d moves running, %d pending", timeout, len(m.Running), len(m.Pending))
		case <-tick.C:
		}
	}
}

// interrupted ends a watch stopped by Ctrl-C: a watch of migrations
// just stops; a drain is not finished, so --wait fails.
func (p *progressWatch) interrupted(last progress) error {
	p.endFrame()
	if p.drain == "" {
		return nil
	}
	return fmt.Errorf("stopped waiting: node %s still holds %s (the drain goes on)", p.drain, copies(last.Copies))
}

// copies is "1 copy" or "n copies".
func copies(n int) string {
	if n == 1 {
		return "1 copy"
	}
	return fmt.Sprintf("%d copies", n)
}

// poll reads the plan (and the drained node) and measures the rates.
func (p *progressWatch) poll(ctx context.Context) (progress, error) {
	c, cancel := p.e.ctx(ctx)
	defer cancel()
	cl := p.e.client()
	var pr progress
	// The table first: it names the running moves' sources, and one
	// read before the plan still lists the moves done meanwhile (a move
	// started meanwhile is named at the next poll).
	t, err := cl.Table(c, 0, 0)
	if err != nil {
		return pr, err
	}
	for _, mv := range t.Migrating {
		p.from[moveKey{mv.Bucket, mv.To}] = mv.From
	}
	if err := cl.Get(c, "/v1/migrations", &pr.Migrations); err != nil {
		return pr, err
	}
	m := &pr.Migrations
	for _, r := range m.Running {
		if _, ok := p.from[moveKey{r.Bucket, r.To}]; !ok {
			// Started since: a newer table names it.
			if t, err = cl.Table(c, 0, 0); err != nil {
				return pr, err
			}
			for _, mv := range t.Migrating {
				p.from[moveKey{mv.Bucket, mv.To}] = mv.From
			}
			break
		}
	}
	var nodes []wire.NodeStatus
	if p.drain != "" || len(m.Running) > 0 {
		if err := cl.Get(c, "/v1/nodes", &nodes); err != nil {
			return pr, err
		}
	}
	if p.drain != "" {
		for i := range nodes {
			if nodes[i].Addr == p.drain {
				pr.Node = &nodes[i]
			}
		}
		if pr.Node == nil {
			return pr, fmt.Errorf("unknown node %q (removed?)", p.drain)
		}
		n := pr.Node
		pr.Copies = n.Masters + n.Slaves
		if n.Alive {
			pr.Copies = max(pr.Copies, n.HeldMasters+n.HeldSlaves)
		}
		if p.start < 0 {
			p.start = pr.Copies
		}
	}
	if len(m.Running) > 0 {
		var stats map[string]map[uint16]wire.AreaStats
		if err := cl.Get(c, "/v1/stats", &stats); err != nil {
			return pr, err
		}
		pr.Moves = p.moves(m.Running, nodes, stats)
		for _, mv := range pr.Moves {
			pr.KeysPerSec += mv.KeysPerSec
		}
	}
	pr.Finished = len(m.Running) == 0 && len(m.Pending) == 0 && (p.drain == "" || pr.Copies == 0)
	return pr, nil
}

// moves adds to the running moves their source, rate and estimated share.
func (p *progressWatch) moves(running []wire.MigrationProgress, nodes []wire.NodeStatus,
	stats map[string]map[uint16]wire.AreaStats) []moveProgress {
	now := time.Now()
	// The source's keys per bucket copy it holds, to estimate a move's
	// share (the API does not say how many keys a bucket has).
	perCopy := map[string]float64{}
	for _, n := range nodes {
		var keys int64
		for _, s := range stats[n.Addr] {
			keys += s.Keys
		}
		if copies := n.HeldMasters + n.HeldSlaves; copies > 0 && keys > 0 {
			perCopy[n.Addr] = float64(keys) / float64(copies)
		}
	}
	seen := map[moveKey]keySample{}
	out := make([]moveProgress, 0, len(running))
	for _, r := range running {
		k := moveKey{r.Bucket, r.To}
		mv := moveProgress{Bucket: r.Bucket, From: p.from[k], To: r.To, KeysSent: r.KeysSent, Done: r.Done, Failed: r.Failed, Percent: -1}
		switch {
		case r.Done:
			mv.Percent = 100
		case perCopy[mv.From] > 0:
			mv.Percent = min(99, 100*float64(r.KeysSent)/perCopy[mv.From])
		}
		if prev, ok := p.prev[k]; ok && now.After(prev.at) && r.KeysSent >= prev.keys {
			mv.KeysPerSec = float64(r.KeysSent-prev.keys) / now.Sub(prev.at).Seconds()
		}
		seen[k] = keySample{r.KeysSent, now}
		out = append(out, mv)
	}
	p.prev = seen
	// Forget the sources of moves no longer running.
	for k := range p.from {
		if _, ok := seen[k]; !ok {
			delete(p.from, k)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Bucket < out[j].Bucket })
	return out
}

// maxMoveLines bounds the running moves a frame lists.
const maxMoveLines = 10

// show prints one poll: JSON, a frame in place, or a plain frame when it
// differs from the last.
func (p *progressWatch) show(pr progress) error {
	if p.e.json {
		return writeJSONLine(p.w, pr)
	}
	lines := p.frame(pr)
	if p.term {
		var b strings.Builder
		if p.drawn > 0 {
			// Back to the first line of the last frame, and clear it.
			fmt.Fprintf(&b, "\x1b[%dF\x1b[J", p.drawn)
		}
		for _, l := range lines {
			b.WriteString(clip(l, p.width-1))
			b.WriteByte('\n')
		}
		p.drawn = len(lines)
		_, err := io.WriteString(p.w, b.String())
		return err
	}
	text := strings.Join(lines, "\n") + "\n"
	if text == p.last {
		return nil
	}
	p.last = text
	_, err := io.WriteString(p.w, text)
	return err
}

// endFrame leaves the last frame on the screen as it is.
func (p *progressWatch) endFrame() { p.drawn = 0 }

func (p *progressWatch) finish(pr progress) error {
	p.endFrame()
	if p.e.json {
		return nil
	}
	m := pr.Migrations
	if p.drain != "" {
		_, err := fmt.Fprintf(p.w, "node %s holds no copy: `tair ctl node remove %s` takes it out\n", p.drain, p.drain)
		return err
	}
	_, err := fmt.Fprintf(p.w, "done: %d/%d moves\n", m.Completed, m.Total)
	return err
}

// frame is one poll's lines: the drained node, the plan's totals, the
// running moves (with bars on a terminal).
func (p *progressWatch) frame(pr progress) []string {
	m := pr.Migrations
	var lines []string
	if p.drain != "" && pr.Node != nil {
		n := pr.Node
		text := fmt.Sprintf("node %s: %d of %d copies left (%d masters, %d slaves)", p.drain, pr.Copies, p.start, n.Masters, n.Slaves)
		if !n.Alive {
			text += ", down"
		}
		if p.term {
			frac := 1.0
			if p.start > 0 {
				frac = 1 - float64(pr.Copies)/float64(p.start)
			}
			text = fmt.Sprintf("drain  %s %5.1f%%  %s", bar(frac, 24), 100*frac, text)
		}
		lines = append(lines, text)
	}
	frac := 1.0
	if m.Total > 0 {
		frac = float64(m.Completed) / float64(m.Total)
	}
	totals := fmt.Sprintf("%d/%d done, %d running, %d pending", m.Completed, m.Total, len(m.Running), len(m.Pending))
	if m.Paused {
		totals += ", paused"
	}
	if pr.KeysPerSec > 0 {
		totals += fmt.Sprintf(", %s keys/s", rate(pr.KeysPerSec))
	}
	if p.term {
		lines = append(lines, fmt.Sprintf("moves  %s %5.1f%%  %s", bar(frac, 24), 100*frac, totals))
	} else {
		lines = append(lines, fmt.Sprintf("moves %.1f%%: %s", 100*frac, totals))
	}
	for i, mv := range pr.Moves {
		if i == maxMoveLines {
			lines = append(lines, fmt.Sprintf("  and %d more running", len(pr.Moves)-maxMoveLines))
			break
		}
		state := fmt.Sprintf("%d keys sent", mv.KeysSent)
		if mv.KeysPerSec > 0 {
			state += fmt.Sprintf(", %s keys/s", rate(mv.KeysPerSec))
		}
		switch {
		case mv.Failed != "":
			state += ", failed: " + mv.Failed
		case mv.Done:
			state += ", done"
		}
		pct := "?"
		switch {
		case mv.Done:
			pct = "100%"
		case mv.Percent >= 0:
			pct = fmt.Sprintf("~%.0f%%", mv.Percent)
		}
		from := mv.From
		if from == "" {
			from = "?"
		}
		if p.term {
			frac := max(mv.Percent, 0) / 100
			lines = append(lines, fmt.Sprintf("  bucket %-5d %s %4s  %s -> %s  %s", mv.Bucket, bar(frac, 12), pct, from, mv.To, state))
		} else {
			lines = append(lines, fmt.Sprintf("  bucket %d %s -> %s: %s, %s", mv.Bucket, from, mv.To, pct, state))
		}
	}
	if pr.Error != "" {
		lines = append(lines, "  (last poll failed: "+pr.Error+")")
	}
	return lines
}

// bar draws frac (0..1) of width cells.
func bar(frac float64, width int) string {
	frac = min(max(frac, 0), 1)
	full := int(frac*float64(width) + 0.5)
	return "[" + strings.Repeat("█", full) + strings.Repeat("░", width-full) + "]"
}

// rate shows a per-second figure briefly (1234 -> 1.2k).
func rate(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.1fM", v/1e6)
	case v >= 1e4:
		return fmt.Sprintf("%.0fk", v/1e3)
	case v >= 1e3:
		return fmt.Sprintf("%.1fk", v/1e3)
	}
	return fmt.Sprintf("%.0f", v)
}

// clip cuts s to width runes (a line longer than the terminal would wrap
// and break the redraw).
func clip(s string, width int) string {
	if width <= 0 || utf8.RuneCountInString(s) <= width {
		return s
	}
	r := []rune(s)
	return string(r[:width])
}

// watchContext ends at Ctrl-C or SIGTERM.
func watchContext(cmd *cobra.Command) (context.Context, context.CancelFunc) {
	parent := cmd.Context()
	if parent == nil {
		parent = context.Background()
	}
	return signal.NotifyContext(parent, os.Interrupt, syscall.SIGTERM)
}

func migrationsCmd(e *ctlEnv) *cobra.Command {
	var watch bool
	var interval time.Duration
	cmd := &cobra.Command{
		Use:   "migrations",
		Short: "show the migration plan's progress (--watch: follow it until nothing runs or waits)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if watch {
				ctx, stop := watchContext(cmd)
				defer stop()
				return newProgressWatch(e, cmd, "").run(ctx, interval, 0)
			}
			c, cancel := e.ctx(cmd.Context())
			defer cancel()
			cl := e.client()
			// The running moves' sources are in the table (the API's
			// MigrationProgress lacks them): one read before the plan
			// has the moves done meanwhile, one after those started.
			from := map[moveKey]string{}
			readFrom := func() error {
				t, err := cl.Table(c, 0, 0)
				if err != nil {
					return err
				}
				for _, mv := range t.Migrating {
					from[moveKey{mv.Bucket, mv.To}] = mv.From
				}
				return nil
			}
			if !e.json {
				if err := readFrom(); err != nil {
					return err
				}
			}
			var m wire.MigrationStatus
			if err := cl.Get(c, "/v1/migrations", &m); err != nil {
				return err
			}
			for _, r := range m.Running {
				if _, ok := from[moveKey{r.Bucket, r.To}]; !ok && !e.json {
					if err := readFrom(); err != nil {
						return err
					}
					break
				}
			}
			return e.print(cmd, m, func(w io.Writer) error {
				pct := 100.0
				if m.Total > 0 {
					pct = 100 * float64(m.Completed) / float64(m.Total)
				}
				fmt.Fprintf(w, "progress %d/%d moves (%.1f%%), paused=%v\n", m.Completed, m.Total, pct, m.Paused)
				for _, r := range m.Running {
					src := from[moveKey{r.Bucket, r.To}]
					if src == "" {
						src = "?"
					}
					state := ""
					switch {
					case r.Failed != "":
						state = ", failed: " + r.Failed
					case r.Done:
						state = ", done"
					}
					fmt.Fprintf(w, "running bucket %d: %s -> %s, %d keys sent%s\n", r.Bucket, src, r.To, r.KeysSent, state)
				}
				for _, mv := range m.Pending {
					fmt.Fprintf(w, "pending bucket %d: %s -> %s\n", mv.Bucket, mv.From, mv.To)
				}
				return nil
			})
		},
	}
	cmd.Flags().BoolVarP(&watch, "watch", "w", false, "redraw the progress until nothing runs or waits (Ctrl-C stops)")
	cmd.Flags().DurationVar(&interval, "interval", time.Second, "time between polls of --watch")
	return cmd
}

func drainCmd(e *ctlEnv) *cobra.Command {
	var wait bool
	var interval, timeout time.Duration
	cmd := &cobra.Command{
		Use:   "drain ADDR",
		Short: "move every copy off a dataserver (then remove it); --wait follows it until the node holds nothing",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := e.admin(cmd, &wire.AdminRequest{Op: "node-drain", Node: args[0]}); err != nil || !wait {
				return err
			}
			ctx, stop := watchContext(cmd)
			defer stop()
			return newProgressWatch(e, cmd, args[0]).run(ctx, interval, timeout)
		},
	}
	cmd.Flags().BoolVar(&wait, "wait", false, "follow the drain with a progress display until the node holds no copy")
	cmd.Flags().DurationVar(&timeout, "timeout", 30*time.Minute, "with --wait: fail when the node still holds copies after this long")
	cmd.Flags().DurationVar(&interval, "interval", time.Second, "with --wait: time between polls")
	return cmd
}

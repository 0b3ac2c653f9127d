package main

// `tair ctl shell`: tairclient's shell over a proxy. Lines are split as
// redis-cli splits them (quotes, escapes); on a terminal it edits lines
// and recalls history (~/.tair_history, or $TAIR_HISTORY); -l runs one
// line and -q the lines of a file, as tairclient's options did.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/chzyer/readline"
	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/tairkv/tair/internal/route"
	"github.com/tairkv/tair/resp"
)

func shellCmd(e *ctlEnv) *cobra.Command {
	var line, file string
	var area int
	cmd := &cobra.Command{
		Use:   "shell",
		Short: "tairclient-style shell: put/get/remove/incr/decr/stat/delall, or any Redis command",
		Long: `tairclient-style shell over the proxy.

  put KEY VALUE [VERSION [EXPIRE]]   TAIR.PUTV (version 0 = any)
  get KEY                            TAIR.GETV: value and version
  remove KEY                         DEL
  incr KEY [N] / decr KEY [N]        TAIR.INCR / TAIR.DECR
  stat                               TAIR.STAT of the current area
  delall                             TAIR.DELALL of the current area
  area N                             switch to area N (SELECT)
  help, quit, exit
  anything else                      sent as a Redis command

Arguments are split as redis-cli splits them: "double quotes" (with \n,
\t, \", \\ and \xHH escapes) and 'single quotes' keep spaces in one
argument. On a terminal, lines are edited and recalled with the arrow
keys; the history is kept in ~/.tair_history ($TAIR_HISTORY).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if area < 0 || area > route.MaxArea {
				return fmt.Errorf("area must be 0..%d", route.MaxArea)
			}
			sh := &shell{e: e, out: cmd.OutOrStdout(), area: area}
			defer sh.close()
			switch {
			case cmd.Flags().Changed("line"):
				return sh.runLines(cmd.Context(), []string{line})
			case file != "":
				data, err := os.ReadFile(file)
				if err != nil {
					return err
				}
				return sh.runLines(cmd.Context(), strings.Split(string(data), "\n"))
			}
			return sh.interactive(cmd.Context(), cmd.InOrStdin())
		},
	}
	cmd.Flags().StringVarP(&line, "line", "l", "", "run this one line and exit")
	cmd.Flags().StringVarP(&file, "file", "q", "", "run each line of this file and exit")
	cmd.Flags().IntVarP(&area, "area", "a", 0, "the area to start in")
	return cmd
}

// errShellFailed: some line of -l or -q failed (exit status 1; each
// failure was printed where it happened).
type errShellFailed struct{ failed, total int }

func (e errShellFailed) Error() string {
	return fmt.Sprintf("%d of %d shell commands failed", e.failed, e.total)
}

type shell struct {
	e    *ctlEnv
	out  io.Writer
	area int
	r    *redis.Client
}

func (s *shell) close() {
	if s.r != nil {
		_ = s.r.Close()
	}
}

func (s *shell) client() *redis.Client {
	if s.r == nil {
		s.r = s.e.redis(s.area)
	}
	return s.r
}

func (s *shell) prompt() string { return fmt.Sprintf("tair[%d]> ", s.area) }

// runLines runs -l's line or -q's file: blank lines and # comments are
// skipped; a failed line is printed and the rest still run.
func (s *shell) runLines(ctx context.Context, lines []string) error {
	failed, total := 0, 0
	for _, l := range lines {
		if t := strings.TrimSpace(l); t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		total++
		quit, err := s.exec(ctx, l)
		if err != nil {
			failed++
		}
		if quit {
			break
		}
	}
	if failed > 0 {
		return errShellFailed{failed, total}
	}
	return nil
}

// interactive reads lines until EOF or quit: with line editing and
// history on a terminal, plainly (no prompt, no history) otherwise.
func (s *shell) interactive(ctx context.Context, in io.Reader) error {
	if f, ok := in.(*os.File); ok && isTerminal(f) {
		return s.readline(ctx, f)
	}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		if quit, _ := s.exec(ctx, sc.Text()); quit {
			return nil
		}
	}
	return sc.Err()
}

func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// historyPath is the shell's history file: $TAIR_HISTORY, else
// ~/.tair_history ("" when there is no home).
func historyPath() string {
	if p := os.Getenv("TAIR_HISTORY"); p != "" {
		return p
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".tair_history")
}

// readline runs the shell on the terminal tty: the prompt shows the area,
// the arrow keys edit and recall lines, each line entered is appended to
// the history file. Ctrl-C clears the line; Ctrl-D on an empty one quits.
func (s *shell) readline(ctx context.Context, tty *os.File) error {
	fd := int(tty.Fd())
	var saved *readline.State
	var out io.Writer = tty
	if isTTY, _ := terminalWidth(s.out); isTTY {
		out = s.out
	}
	rl, err := readline.NewEx(&readline.Config{
		Prompt:       s.prompt(),
		HistoryFile:  historyPath(),
		HistoryLimit: 1000,
		// Saved by the loop below, before the line runs: readline's own
		// save hands the line over first and appends it after, so a
		// "quit" could end the process before it reached the file.
		DisableAutoSaveHistory: true,
		InterruptPrompt:        "^C",
		EOFPrompt:              "exit",
		Stdin:                  tty,
		Stdout:                 out,
		Stderr:                 out,
		FuncIsTerminal:         func() bool { return true },
		FuncMakeRaw: func() error {
			st, err := readline.MakeRaw(fd)
			saved = st
			return err
		},
		FuncExitRaw: func() error {
			if saved == nil {
				return nil
			}
			return readline.Restore(fd, saved)
		},
		FuncGetWidth: func() int {
			if ws, err := unix.IoctlGetWinsize(fd, unix.TIOCGWINSZ); err == nil && ws.Col > 0 {
				return int(ws.Col)
			}
			return 80
		},
	})
	if err != nil {
		return err
	}
	defer rl.Close()
	for {
		line, err := rl.Readline()
		switch {
		case errors.Is(err, readline.ErrInterrupt):
			continue
		case errors.Is(err, io.EOF):
			return nil
		case err != nil:
			return err
		}
		_ = rl.SaveHistory(line) // a history file that cannot be written does not stop the shell
		quit, _ := s.exec(ctx, line)
		if quit {
			return nil
		}
		rl.SetPrompt(s.prompt())
	}
}

// tairclient verbs mapped onto proxy commands.
var shellVerbs = map[string]string{
	"put": "tair.putv", "get": "tair.getv", "remove": "del", "incr": "tair.incr",
	"decr": "tair.decr", "stat": "tair.stat", "delall": "tair.delall",
}

const shellHelp = "put KEY VALUE [VERSION [EXPIRE]] | get KEY | remove KEY | incr KEY [N] | decr KEY [N] | stat | delall | area N | quit | any Redis command"

// exec runs one line and prints its result; err is set when it failed
// (printed as "(error) ..."), quit when it asked to leave.
func (s *shell) exec(ctx context.Context, line string) (quit bool, err error) {
	fail := func(err error) (bool, error) {
		if s.e.json {
			_ = writeJSONLine(s.out, map[string]string{"error": err.Error()})
		} else {
			fmt.Fprintln(s.out, "(error)", err)
		}
		return false, err
	}
	fields, err := splitArgs(line)
	if err != nil {
		return fail(err)
	}
	if len(fields) == 0 {
		return false, nil
	}
	verb := strings.ToLower(fields[0])
	rest := fields[1:]
	switch verb {
	case "quit", "exit":
		return true, nil
	case "help":
		fmt.Fprintln(s.out, shellHelp)
		return false, nil
	case "area", "select":
		if len(rest) != 1 {
			return fail(fmt.Errorf("usage: area N"))
		}
		n, err := strconv.Atoi(rest[0])
		if err != nil || n < 0 || n > route.MaxArea {
			return fail(fmt.Errorf("area must be 0..%d", route.MaxArea))
		}
		if n != s.area {
			s.close()
			s.r, s.area = nil, n
		}
		return false, s.show(nil, "OK")
	}
	args := []any{}
	if m, ok := shellVerbs[verb]; ok {
		args = append(args, m)
		switch verb {
		case "put":
			if len(rest) < 2 || len(rest) > 4 {
				return fail(fmt.Errorf("usage: put KEY VALUE [VERSION [EXPIRE]]"))
			}
			if len(rest) == 2 {
				rest = append(rest, "0")
			}
			if len(rest) == 4 {
				rest = []string{rest[0], rest[1], rest[2], "EX", rest[3]}
			}
		case "get", "remove":
			if len(rest) != 1 {
				return fail(fmt.Errorf("usage: %s KEY", verb))
			}
		case "incr", "decr":
			if len(rest) < 1 || len(rest) > 2 {
				return fail(fmt.Errorf("usage: %s KEY [N]", verb))
			}
			if len(rest) == 1 {
				rest = append(rest, "1")
			}
		case "delall", "stat":
			if len(rest) != 0 {
				return fail(fmt.Errorf("usage: %s (of the current area; `area N` changes it)", verb))
			}
			rest = []string{strconv.Itoa(s.area)}
		}
	} else {
		args = append(args, fields[0])
	}
	for _, f := range rest {
		args = append(args, f)
	}
	c, cancel := s.e.ctx(ctx)
	defer cancel()
	res, err := s.client().Do(c, args...).Result()
	switch {
	case errors.Is(err, redis.Nil):
		return false, s.show(nil, "(nil)")
	case err != nil:
		return fail(err)
	case verb == "stat":
		st, err := parseStat(s.area, res)
		if err != nil {
			return fail(err)
		}
		if s.e.json {
			return false, writeJSONLine(s.out, st)
		}
		_, err = fmt.Fprint(s.out, formatStat(st))
		return false, err
	}
	return false, s.show(res, "")
}

// show prints a reply as redis-cli does (or as JSON: strings, numbers,
// arrays, null); text, when set, is shown instead (and "OK" is JSON's
// "OK", "(nil)" its null).
func (s *shell) show(res any, text string) error {
	if s.e.json {
		switch text {
		case "OK":
			res = "OK"
		case "(nil)":
			res = nil
		}
		return writeJSONLine(s.out, jsonReply(res))
	}
	if text != "" {
		_, err := fmt.Fprintln(s.out, text)
		return err
	}
	_, err := io.WriteString(s.out, formatReply(res, ""))
	return err
}

// jsonReply makes a go-redis reply encodable (maps keyed by strings).
func jsonReply(v any) any {
	switch x := v.(type) {
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = jsonReply(e)
		}
		return out
	case map[any]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[fmt.Sprint(k)] = jsonReply(e)
		}
		return out
	case redis.Error:
		return map[string]string{"error": x.Error()}
	case string:
		if !utf8.ValidString(x) {
			// Binary: the bytes as a JSON array is unreadable; Go's
			// quoting keeps every byte visible.
			return strconv.Quote(x)
		}
		return x
	}
	return v
}

// formatReply renders a reply as redis-cli does: "string", (integer) n,
// (nil), numbered arrays (nested ones indented).
func formatReply(v any, indent string) string {
	switch x := v.(type) {
	case nil:
		return "(nil)\n"
	case string:
		if x == "OK" || x == "PONG" || x == "QUEUED" {
			// Status replies come as plain strings from go-redis.
			return x + "\n"
		}
		return strconv.Quote(x) + "\n"
	case int64:
		return fmt.Sprintf("(integer) %d\n", x)
	case float64:
		return fmt.Sprintf("(double) %v\n", x)
	case bool:
		if x {
			return "(integer) 1\n"
		}
		return "(integer) 0\n"
	case redis.Error:
		return "(error) " + x.Error() + "\n"
	case []any:
		if len(x) == 0 {
			return "(empty array)\n"
		}
		var b strings.Builder
		width := len(strconv.Itoa(len(x)))
		for i, e := range x {
			if i > 0 {
				b.WriteString(indent)
			}
			head := fmt.Sprintf("%*d) ", width, i+1)
			b.WriteString(head)
			b.WriteString(formatReply(e, indent+strings.Repeat(" ", len(head))))
		}
		return b.String()
	case map[any]any:
		keys := make([]string, 0, len(x))
		vals := map[string]any{}
		for k, e := range x {
			keys = append(keys, fmt.Sprint(k))
			vals[fmt.Sprint(k)] = e
		}
		sort.Strings(keys)
		flat := make([]any, 0, 2*len(keys))
		for _, k := range keys {
			flat = append(flat, k, vals[k])
		}
		return formatReply(flat, indent)
	}
	return fmt.Sprintln(v)
}

// splitArgs splits a line as redis-cli (sdssplitargs) does: blanks
// separate arguments; "double quotes" take \n \r \t \b \a \\ \" and
// \xHH escapes; 'single quotes' take \' only; a closing quote must end
// the argument; an unbalanced quote is an error.
func splitArgs(line string) ([]string, error) {
	fields, err := resp.SplitArgs([]byte(line))
	if err != nil {
		return nil, errors.New("unbalanced quotes")
	}
	args := make([]string, len(fields))
	for i, f := range fields {
		args[i] = string(f)
	}
	return args, nil
}

// Package proccpu reads the CPU time of processes from /proc, for the
// bench drivers that print where a run's CPU went (bench/recovery,
// bench/hotkey): on a machine whose cores the cluster and its load
// share, that is what bounds a ratio.
package proccpu

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Proc is a process to read, by the name a table prints.
type Proc struct {
	Name string
	PID  int
}

// Parse reads a name=pid,... list (the drivers' -pids flag); entries that
// are not name=pid are skipped.
func Parse(list string) []Proc {
	var out []Proc
	for _, f := range strings.Split(list, ",") {
		if name, v, ok := strings.Cut(strings.TrimSpace(f), "="); ok {
			if pid, err := strconv.Atoi(v); err == nil {
				out = append(out, Proc{name, pid})
			}
		}
	}
	return out
}

// Seconds returns each process's user+system CPU seconds so far, by name;
// a process it cannot read (gone, or no /proc) is left out.
func Seconds(procs []Proc) map[string]float64 {
	out := map[string]float64{}
	for _, p := range procs {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.PID))
		if err != nil {
			continue
		}
		// Fields after the command (in parentheses): utime and stime
		// are the 12th and 13th, in clock ticks (USER_HZ, 100 a second
		// on every Linux Go supports).
		i := strings.LastIndexByte(string(b), ')')
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 13 {
			continue
		}
		u, _ := strconv.ParseFloat(f[11], 64)
		st, _ := strconv.ParseFloat(f[12], 64)
		out[p.Name] = (u + st) / 100
	}
	return out
}

//go:build tair_testhooks

package dataserver

import "os"

// Built with -tags tair_testhooks only (cmd/tair's process tests):
// TAIR_TEST_WEDGE=<cmd> wedges the event loop that runs <cmd> for ever,
// as a bug would.
func init() {
	if wedge := os.Getenv("TAIR_TEST_WEDGE"); wedge != "" {
		fn := func(point, cmd string) {
			if point == "run" && cmd == wedge {
				select {}
			}
		}
		testHook.Store(&fn)
	}
}

package testutil

import "go.uber.org/goleak"

// Goroutines of third-party libraries that live as long as the process
// (or until an expiry of their own), which goleak.VerifyTestMain must not
// count as leaks of the package under test. Each names the function on
// top of such a goroutine's stack (where it waits), so a goroutine of ours
// running inside the library (a task an ants worker runs) is still found.
var (
	// GnetPool: gnet's default worker pool (ants), created when gnet's
	// pkg/pool/goroutine is initialised and never released: a purger of
	// idle workers, a clock, and idle workers, which gnet's event loops
	// hand their asynchronous closes to and which expire only after the
	// pool's idle time (ants' default: 1 s; 10 s in gnet's pool).
	GnetPool = []goleak.Option{
		goleak.IgnoreTopFunction("github.com/panjf2000/ants/v2.(*poolCommon).purgeStaleWorkers"),
		goleak.IgnoreTopFunction("github.com/panjf2000/ants/v2.(*poolCommon).ticktock"),
		goleak.IgnoreTopFunction("github.com/panjf2000/ants/v2.(*goWorker).run.func1"), // idle: waits for a task
	}
)

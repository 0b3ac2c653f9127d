package console_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/tairkv/tair/internal/testutil"
)

// TestMain fails the package's tests when a goroutine they started is
// still running after the last one (goleak). gnet's worker pool lives as
// long as the process.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, testutil.GnetPool...)
}

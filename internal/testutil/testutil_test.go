package testutil

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// fatalTB records Fatalf instead of ending the test.
type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Helper() {}
func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
}

func TestEventuallyErrReportsTheLastError(t *testing.T) {
	f := &fatalTB{TB: t}
	n := 0
	start := time.Now()
	EventuallyErr(f, 100*time.Millisecond, func() error {
		n++
		return fmt.Errorf("try %d", n)
	})
	if took := time.Since(start); took < 100*time.Millisecond {
		t.Errorf("gave up after %v, before the 100ms timeout", took)
	}
	if want := fmt.Sprintf("try %d", n); !strings.HasSuffix(f.msg, want) || !strings.Contains(f.msg, fmt.Sprintf("(%d tries)", n)) {
		t.Errorf("failure %q does not end with the last error %q and its count", f.msg, want)
	}
	if n < 3 {
		t.Errorf("cond called %d times in 100ms, want it polled", n)
	}
}

func TestEventuallyErrReturnsOnceCondHolds(t *testing.T) {
	f := &fatalTB{TB: t}
	n := 0
	EventuallyErr(f, 5*time.Second, func() error {
		if n++; n < 3 {
			return errors.New("not yet")
		}
		return nil
	})
	if f.msg != "" || n != 3 {
		t.Errorf("failed with %q after %d calls, want success on the third", f.msg, n)
	}
}

func TestEventuallyKeepsItsMessage(t *testing.T) {
	f := &fatalTB{TB: t}
	Eventually(f, 30*time.Millisecond, func() bool { return false }, "never %s", "true")
	if f.msg != "after 30ms: never true" {
		t.Errorf("failure %q", f.msg)
	}
}

package defaults

import (
	"testing"
	"time"
)

func TestUnsetAndNotPositive(t *testing.T) {
	s, n, d := "", int64(-5), time.Duration(0)
	Unset(&s, "x")
	NotPositive(&n, 7)
	NotPositive(&d, time.Second)
	if s != "x" || n != 7 || d != time.Second {
		t.Fatalf("unset fields: %q %d %v, want x 7 1s", s, n, d)
	}
	s, n, d = "given", -5, 3*time.Second
	Unset(&s, "x")
	Unset(&n, 7) // a negative value is given: Unset keeps it
	NotPositive(&d, time.Second)
	if s != "given" || n != -5 || d != 3*time.Second {
		t.Fatalf("given fields changed: %q %d %v", s, n, d)
	}
}

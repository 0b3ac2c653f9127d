package testcluster

import (
	"os"
	"path/filepath"
	"testing"
)

// A failed test's process output is saved whole, under a path made of the
// test's and the process's names with separators replaced.
func TestSaveOutput(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	path, err := saveOutput("TestChaos/seed=1", "dataserver 127.0.0.1:1234", "line 1\nline 2\n")
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(os.TempDir(), "tair-test-logs", "TestChaos_seed=1", "dataserver_127.0.0.1_1234.log")
	if path != want {
		t.Fatalf("saved at %s, want %s", path, want)
	}
	b, err := os.ReadFile(path)
	if err != nil || string(b) != "line 1\nline 2\n" {
		t.Fatalf("read back %q, %v", b, err)
	}
}

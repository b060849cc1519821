package state

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestLock: a held state dir is a HeldError naming the holder's pid; after
// Unlock the dir can be taken again; the lock file is not a segment.
func TestLock(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	first, err := Lock(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Lock(dir)
	var held *HeldError
	if !errors.As(err, &held) || held.PID != os.Getpid() || held.Dir != dir {
		t.Fatalf("second Lock: %v, want a HeldError naming pid %d", err, os.Getpid())
	}
	if want := "(pid " + strconv.Itoa(os.Getpid()) + ")"; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q lacks %q", err, want)
	}
	if err := first.Unlock(); err != nil {
		t.Fatal(err)
	}
	again, err := Lock(dir)
	if err != nil {
		t.Fatalf("Lock after Unlock: %v", err)
	}
	defer again.Unlock()
	loaded, err := Read(dir, "boot")
	if err != nil || len(loaded.Damaged) != 0 {
		t.Errorf("the lock file read as lineage: %v %+v", err, loaded)
	}
}

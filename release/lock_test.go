package release

import (
	"strings"
	"testing"
	"time"
)

// One actor at a time: a second release of the same copy waits for the
// first, and reads, under the lock, that the first detached it.
func TestCopyLock(t *testing.T) {
	dir := t.TempDir()
	first, err := lockCopy(dir, 9, 0x80000001)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 1)
	go func() {
		second, err := lockCopy(dir, 9, 0x80000001)
		if err != nil {
			got <- err.Error()
			return
		}
		defer second.unlock()
		got <- second.previous()
	}()
	select {
	case s := <-got:
		t.Fatalf("the second took the lock while the first held it: %q", s)
	case <-time.After(200 * time.Millisecond):
	}
	first.done()
	first.unlock()
	if s := <-got; !strings.HasPrefix(s, "released by mntleak[") {
		t.Errorf("the second read %q, want who released it", s)
	}
	// A plan made after the act reads the same note without the lock.
	if s := releasedBy(dir, 9, 0x80000001); !strings.HasPrefix(s, "released by mntleak[") {
		t.Errorf("releasedBy read %q, want who released it", s)
	}
	if s := releasedBy(dir, 9, 0x80000003); s != "" {
		t.Errorf("releasedBy of a copy never released: %q", s)
	}
	other, err := lockCopy(dir, 9, 0x80000002) // another copy: its own lock
	if err != nil || other.previous() != "" {
		t.Fatalf("another copy's lock: %v, %q", err, other.previous())
	}
	other.unlock()
}

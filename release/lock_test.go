package release

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mntleak/mntleak/event"
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
		r, _ := second.previous()
		got <- r.String()
	}()
	select {
	case s := <-got:
		t.Fatalf("the second took the lock while the first held it: %q", s)
	case <-time.After(200 * time.Millisecond):
	}
	first.begin(Record{MntNS: 4026532177, NSID: 9, MountID: 85, Unique: 0x80000001, Where: "/vol", Dev: event.MakeDev(0, 38)})
	first.done()
	first.unlock()
	want := "mount 85 (unique 2147483649) at /vol is gone from mnt:[4026532177] (id 9): released by mntleak[" + strconv.Itoa(os.Getpid()) + "] at "
	if s := <-got; !strings.HasPrefix(s, want) {
		t.Errorf("the second read %q, want %q...", s, want)
	}
	// A plan made after the act reads the same record without the lock.
	if r, ok := released(dir, 9, 0x80000001); !ok || !strings.HasPrefix(r.String(), want) {
		t.Errorf("released read %q, %v, want %q...", r, ok, want)
	}
	if r, ok := released(dir, 9, 0x80000003); ok {
		t.Errorf("released of a copy never released: %q", r)
	}
	other, err := lockCopy(dir, 9, 0x80000002) // another copy: its own lock
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := other.previous(); ok {
		t.Fatalf("another copy's lock has a record: %q", r)
	}
	other.unlock()
}

// A release that finds the copy gone, by its mount id or its device, while
// the first release still holds the lock (it detached the copy, and has not
// yet written that it did), waits for it and says who took the copy. An
// act that failed leaves no record.
func TestReleasedWaitsForTheAct(t *testing.T) {
	dir := t.TempDir()
	dev := event.MakeDev(0, 38)
	first, err := lockCopy(dir, 9, 0x80000001)
	if err != nil {
		t.Fatal(err)
	}
	first.begin(Record{MntNS: 4026532177, NSID: 9, MountID: 85, Unique: 0x80000001, Where: "/vol", Dev: dev})
	byMount, byDev := make(chan Record, 1), make(chan []Record, 1)
	go func() {
		r, _ := ReleasedMount(dir, 9, 85, "/vol")
		byMount <- r
	}()
	go func() { byDev <- ReleasedDevice(dir, dev) }()
	time.Sleep(200 * time.Millisecond)
	select {
	case r := <-byMount:
		t.Fatalf("ReleasedMount did not wait for the act under way: %q", r)
	case rs := <-byDev:
		t.Fatalf("ReleasedDevice did not wait for the act under way: %q", rs)
	default:
	}
	first.done()
	first.unlock()
	if r := <-byMount; r.Unique != 0x80000001 || r.Released.IsZero() {
		t.Errorf("ReleasedMount: %+v, want the finished record", r)
	}
	if rs := <-byDev; len(rs) != 1 || rs[0].Unique != 0x80000001 {
		t.Errorf("ReleasedDevice: %+v, want the one record", rs)
	}
	for _, miss := range []struct {
		ns    uint64
		id    int
		where string
	}{{9, 86, ""}, {10, 85, ""}, {9, 85, "/other"}} {
		if r, ok := ReleasedMount(dir, miss.ns, miss.id, miss.where); ok {
			t.Errorf("ReleasedMount(%d, %d, %q) = %q, want none", miss.ns, miss.id, miss.where, r)
		}
	}

	failed, err := lockCopy(dir, 9, 0x80000005)
	if err != nil {
		t.Fatal(err)
	}
	failed.begin(Record{MntNS: 4026532177, NSID: 9, MountID: 87, Unique: 0x80000005, Where: "/w", Dev: dev})
	failed.abort()
	failed.unlock()
	if r, ok := ReleasedMount(dir, 9, 87, ""); ok {
		t.Errorf("an act that failed left %q", r)
	}
	if rs := ReleasedDevice(dir, dev); len(rs) != 1 {
		t.Errorf("ReleasedDevice after a failed act: %+v, want the one release", rs)
	}
}

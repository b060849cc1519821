package privtest

import (
	"testing"
	"time"

	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/state"
)

// TestWaitLogged: the wait returns once the log holds every event asked
// for, written while it waits, and fails when one never comes.
func TestWaitLogged(t *testing.T) {
	boot, err := state.BootID()
	if err != nil {
		t.Skip("no boot id:", err)
	}
	dir := t.TempDir()
	l, err := state.Open(dir, boot, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	write := func(ev *event.Event) {
		if err := l.Append(ev); err != nil {
			t.Error(err)
		}
		if err := l.Flush(); err != nil {
			t.Error(err)
		}
	}
	go func() {
		time.Sleep(200 * time.Millisecond)
		write(&event.Event{Kind: event.KindUnshare, MntNSBefore: 1, MntNSAfter: 7})
		time.Sleep(200 * time.Millisecond)
		write(&event.Event{Kind: event.KindUmount, Target: "/vol"})
	}()
	t0 := time.Now()
	WaitLogged(t, dir, 10*time.Second, Made(7), Unmounted("/vol"))
	if d := time.Since(t0); d < 400*time.Millisecond {
		t.Errorf("returned after %v, before the unmount was written", d)
	}
	r := Record(t, func(tb testing.TB) { WaitLogged(tb, dir, 300*time.Millisecond, Made(8)) })
	if !r.Failed() {
		t.Error("waiting for a namespace never made did not fail")
	}
}

package privtest

import (
	"slices"
	"testing"
	"time"

	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/state"
)

// WaitLogged returns once the daemon's state log in dir holds, for each
// of wants, an event it matches (at most d): the daemon writes the log
// about once a second, and later still when it lags behind the events.
// A test that reads the log, or stops the daemon and starts another on
// it, waits for what it needs there instead of for a guessed time.
func WaitLogged(t testing.TB, dir string, d time.Duration, wants ...func(*event.Event) bool) {
	t.Helper()
	boot, err := state.BootID()
	if err != nil {
		t.Fatal(err)
	}
	WaitFor(t, d, "state log in "+dir+" holding what the test needs", func() bool {
		events, _, err := state.Load(dir, boot) // a line being written reads as damage: read again
		if err != nil {
			t.Fatalf("read the state log in %s: %v", dir, err)
		}
		for _, want := range wants {
			if !slices.ContainsFunc(events, want) {
				return false
			}
		}
		return true
	})
}

// Unmounted matches a successful unmount of target.
func Unmounted(target string) func(*event.Event) bool {
	return func(ev *event.Event) bool { return ev.Kind == event.KindUmount && ev.Ret == 0 && ev.Target == target }
}

// Made matches the creation of mount namespace ns (an unshare or a fork
// into a new one).
func Made(ns uint32) func(*event.Event) bool {
	return func(ev *event.Event) bool {
		return (ev.Kind == event.KindUnshare && ev.Ret == 0 && ev.MntNSAfter == ns) ||
			(ev.Kind == event.KindNewNSFork && ev.ChildMntNS == ns)
	}
}

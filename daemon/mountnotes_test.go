package daemon

import (
	"testing"
	"time"

	"github.com/mntleak/mntleak/correlate"
	"github.com/mntleak/mntleak/event"
)

// TestDrainedForOnlyWhatTheLastDrainHolds: an event skips the drain of
// the mount notes only when it is a syscall's stamped drainMargin before
// the last drain began, and the watch has no note of its own waiting.
func TestDrainedForOnlyWhatTheLastDrainHolds(t *testing.T) {
	const at = uint64(10 * time.Second) // the last drain began
	ms := uint64(time.Millisecond)
	call := func(mono uint64) *event.Event {
		return &event.Event{Kind: event.KindMount, SyscallNr: 165, MonoNS: mono}
	}
	exit := &event.Event{Kind: event.KindExit, SyscallNr: -1, MonoNS: at - ms}
	mw := &mountWatch{}
	p := &pipeline{mono: func() uint64 { return at + ms }, drainedAt: at, mounts: mw}
	for _, c := range []struct {
		what string
		ev   *event.Event
		want bool
	}{
		{"a call stamped a millisecond before", call(at - ms), true},
		{"a call stamped just past the margin before", call(at - uint64(drainMargin) - 1), true},
		{"a call stamped within the margin", call(at - uint64(drainMargin) + 1), false},
		{"a call stamped after the drain began", call(at + 1), false},
		{"an exit stamped before (teardown notes come after its stamp)", exit, false},
	} {
		if got := p.drainedFor(c.ev); got != c.want {
			t.Errorf("%s: drainedFor %v, want %v", c.what, got, c.want)
		}
	}
	mw.said = []event.MountNote{{NS: 4026532000, Watch: event.WatchOn}}
	if p.drainedFor(call(at - ms)) {
		t.Errorf("with a watch note waiting: drainedFor true, want a drain")
	}
	mw.said = nil
	p.mono = nil
	if p.drainedFor(call(at - ms)) {
		t.Errorf("without the tracer's clock: drainedFor true, want a drain for every event")
	}
}

// TestSyncAsksForTheLiveOnlyWhenDue: the list of live namespaces (a walk
// of the whole lineage) is asked for only when a sync is due, a
// namespace's creation or syncInterval of event time, not for every
// event.
func TestSyncAsksForTheLiveOnlyWhenDue(t *testing.T) {
	at := time.Unix(1000, 0)
	p := &pipeline{mounts: &mountWatch{}, mountsAt: at.UnixNano()}
	asked := 0
	live := func() []*correlate.Namespace { asked++; return nil }
	for _, c := range []struct {
		what  string
		ev    *event.Event
		asked int
	}{
		{"a mount within the interval", &event.Event{Kind: event.KindMount, Time: at.Add(syncInterval / 2)}, 0},
		{"an unshare that made a namespace", &event.Event{Kind: event.KindUnshare, Time: at.Add(syncInterval / 2), MntNSBefore: 1, MntNSAfter: 2}, 1},
		{"a mount a whole interval on", &event.Event{Kind: event.KindMount, Time: at.Add(syncInterval)}, 2},
		{"a mount just after that sync", &event.Event{Kind: event.KindMount, Time: at.Add(syncInterval + time.Millisecond)}, 2},
	} {
		p.syncLive(c.ev, live)
		if asked != c.asked {
			t.Fatalf("after %s: the live namespaces asked for %d times, want %d", c.what, asked, c.asked)
		}
	}
}

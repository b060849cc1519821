package correlate

import (
	"strconv"
	"testing"

	"github.com/mntleak/mntleak/event"
)

// TestItoaWritesEveryInt: itoa, which writes the integers of a finding's
// text (pids, fds, mount ids, inodes), writes what strconv.Itoa does,
// negative numbers too.
func TestItoaWritesEveryInt(t *testing.T) {
	for _, n := range []int{0, 7, 10, 42, 4026531840, -1, -7, -42, -4026531840} {
		if got, want := itoa(n), strconv.Itoa(n); got != want {
			t.Errorf("itoa(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestEventSummaryOfLineageAndPivotEvents: the few words a finding's
// evidence says of a setns, of a CLONE_NEWNS clone and of a pivot_root.
func TestEventSummaryOfLineageAndPivotEvents(t *testing.T) {
	for _, tc := range []struct {
		ev   *event.Event
		want string
	}{
		{&event.Event{Kind: event.KindSetns, PID: 40, Comm: "nsenter", MntNSBefore: 1, MntNSAfter: 95}, "setns by nsenter[40] into mnt:[95]"},
		{&event.Event{Kind: event.KindNewNSFork, PID: 1, Comm: "systemd", ChildPID: 20, ParentMntNS: 100, ChildMntNS: 200},
			"systemd[1] started [20] in new mnt:[200]"},
		{&event.Event{Kind: event.KindPivotRoot, PID: 30, Comm: "runc:[2:INIT]", NewRoot: "/run/c/rootfs", PutOld: "/run/c/rootfs/.old"},
			"pivot_root /run/c/rootfs by runc:[2:INIT][30]"},
	} {
		if got := eventSummary(tc.ev); got != tc.want {
			t.Errorf("summary of %s: got %q, want %q", tc.ev.Kind, got, tc.want)
		}
	}
}

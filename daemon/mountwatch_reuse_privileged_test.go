package daemon

import (
	"slices"
	"testing"
	"time"

	"github.com/mntleak/mntleak/correlate"
	"github.com/mntleak/mntleak/e2e/testkit/privtest"
	"github.com/mntleak/mntleak/event"
)

// TestNewNamespaceUnderAWatchedInodeIsWatched: the kernel gives a dead
// namespace's inode to the next namespace made (a node that starts
// containers one after another sees the same few inodes again and
// again), and the tracer tells the creation: the lineage retires the
// namespace it knew under that inode and has a new one. The watch marked
// the old one, whose mark died with it; the new one must be marked, and
// the ledger told (the old watch off, the new one on), though the inode
// never stopped being live. Before, the watch kept the old group, the new
// namespace was never marked, and every failure read its table again.
func TestNewNamespaceUnderAWatchedInodeIsWatched(t *testing.T) {
	privtest.Require(t)
	privtest.RequireCommands(t, "unshare", "sh", "sleep")
	h := privtest.StartHolder(t, "private", "true")
	corr := startedCorrelator(t)
	mw := watchOnly(t, corr, h.MntNS)
	old := mw.groups[h.MntNS]
	if old == nil {
		t.Fatalf("mnt:[%d] not watched", h.MntNS)
	}
	if _, err := mw.drain(time.Now); err != nil {
		t.Fatal(err)
	}
	was := corr.Lineage().Get(h.MntNS)
	at := time.Now()
	created := &event.Event{Kind: event.KindUnshare, Time: at, PID: uint32(h.PID), TID: uint32(h.PID),
		MntNS: h.MntNS, MntNSBefore: corr.HostNS(), MntNSAfter: h.MntNS, Comm: "runc:[1:CHILD]"}
	corr.Handle(created)
	if now := corr.Lineage().Get(h.MntNS); now == nil || now == was {
		t.Fatalf("the lineage did not take the creation for a new namespace under mnt:[%d]", h.MntNS)
	}
	p := &pipeline{corr: corr, mounts: mw, mountsAt: at.UnixNano()}
	p.syncLive(created, func() []*correlate.Namespace { return onlyLive(corr, h.MntNS) })
	notes, err := mw.drain(time.Now)
	if err != nil {
		t.Fatal(err)
	}
	want := []event.MountNote{{NS: h.MntNS, Watch: event.WatchOff}, {NS: h.MntNS, Watch: event.WatchOn}}
	for i := range notes {
		notes[i].Time = time.Time{}
	}
	if g := mw.groups[h.MntNS]; g == nil || g == old || !slices.Equal(notes, want) {
		t.Fatalf("after the new namespace's sync: watched %v (a new mark: %v), notes %s; want its old watch off and a new one on",
			g != nil, g != old, describe(notes))
	}
}

// TestNamespaceWithoutMembersMarkedThroughTasks: runc's child makes a
// container's namespace and exits at once; the container's init, forked
// inside it, sends no event, so the lineage knows no process in it. The
// tracer's tasks do: the watch marks the namespace through one of them.
// Without tasks it cannot (the control), and every failure on the node
// read the namespace's table again.
func TestNamespaceWithoutMembersMarkedThroughTasks(t *testing.T) {
	privtest.Require(t)
	privtest.RequireCommands(t, "unshare", "sh", "sleep")
	h := privtest.StartHolder(t, "private", "true")
	corr := startedCorrelator(t)
	// The lineage's only process in it leaves (as runc's child would).
	corr.Handle(&event.Event{Kind: event.KindExit, Time: time.Now(), PID: uint32(h.PID), TID: uint32(h.PID), MntNS: h.MntNS, Comm: "runc:[1:CHILD]"})
	n := corr.Lineage().Get(h.MntNS)
	if n == nil || len(n.Members()) != 0 {
		t.Fatalf("mnt:[%d] is not a live namespace without members in the lineage", h.MntNS)
	}
	mw := watchOnly(t, corr, h.MntNS)
	if mw.groups[h.MntNS] != nil {
		t.Fatalf("mnt:[%d] watched with no member and no tasks", h.MntNS)
	}
	asked := 0
	mw.tasks = func() ([]event.Task, bool, error) {
		asked++
		return []event.Task{{TID: 1, PID: 1, MntNS: 1}, {TID: h.PID, PID: h.PID, MntNS: h.MntNS}}, true, nil
	}
	syncOnly(mw, corr, h.MntNS)
	if mw.groups[h.MntNS] == nil || asked != 1 {
		t.Fatalf("mnt:[%d] watched: %v (tasks read %d times); want it marked through the task in it, the tasks read once",
			h.MntNS, mw.groups[h.MntNS] != nil, asked)
	}
}

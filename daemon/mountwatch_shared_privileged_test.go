package daemon

import (
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/moby/sys/mountinfo"

	"github.com/mntleak/mntleak/correlate"
	"github.com/mntleak/mntleak/e2e/testkit/privtest"
	"github.com/mntleak/mntleak/event"
)

// TestMountWatchSharesGroups: more namespaces than one fanotify group
// marks (2×nsPerGroup+2 holders, private copies of the node's tmpfs) are
// watched by three groups, not one each, the newest namespace in the
// first sync and the rest in the next ones (one sync marks watchPerSync): the default limit of 128 groups,
// half of them the daemon's, watched 64 namespaces; a node of 110 pods
// has twice that. An event names no namespace: the node's rmdir detaches
// every holder's copy, and each detach must come in its own holder's
// namespace with the id and device its /proc/PID/mountinfo showed (the
// oracle); a mount made in a holder of either group must come as an
// attach in that namespace, as /proc shows it. A namespace dropped while
// it lives keeps its mark until its group closes: a mount there is no
// note, in no namespace.
func TestMountWatchSharesGroups(t *testing.T) {
	privtest.Require(t)
	privtest.RequireCommands(t, "unshare", "nsenter", "sh", "sleep", "mount", "umount", "rmdir")
	dir := t.TempDir()
	vol := privtest.Mkdir(t, filepath.Join(dir, "vol"))
	node := privtest.StartNode(t)
	node.Run(t, "mount", "-t", "tmpfs", "mwshared", vol)
	holders := make([]*privtest.Holder, 2*nsPerGroup+2)
	var inos []uint32
	for i := range holders {
		holders[i] = node.StartHolder(t, "private", "true")
		inos = append(inos, holders[i].MntNS)
	}
	corr := startedCorrelator(t)
	// The last holder's namespace is the newest: made under tracing.
	newest := holders[len(holders)-1].MntNS
	for _, n := range corr.Lineage().Live() {
		if n.Ino == newest {
			n.Created = time.Now()
		}
	}
	mw := watchOnly(t, corr, inos...)
	if len(mw.groups) != watchPerSync || mw.groups[newest] == nil {
		t.Fatalf("first sync: %d namespaces watched (the newest one: %v), want %d, the newest among them", len(mw.groups), mw.groups[newest] != nil, watchPerSync)
	}
	syncs := 1
	for ; len(mw.groups) < len(holders) && syncs < len(holders); syncs++ {
		before := len(mw.groups)
		syncOnly(mw, corr, inos...)
		if got := len(mw.groups) - before; got != min(watchPerSync, len(holders)-before) {
			t.Fatalf("sync %d marked %d namespaces, want %d", syncs+1, got, min(watchPerSync, len(holders)-before))
		}
	}
	if want := (len(holders) + nsPerGroup - 1) / nsPerGroup; len(mw.groups) != len(holders) || len(mw.fans) != want {
		t.Fatalf("after %d syncs: %d namespaces watched in %d fanotify groups, want %d in %d", syncs, len(mw.groups), len(mw.fans), len(holders), want)
	}
	if on, err := mw.drain(time.Now); err != nil || len(on) != len(holders) {
		t.Fatalf("first drain: %s, %v; want a watch note for each holder", describe(on), err)
	}

	copies := map[uint32]string{} // the kernel's: each holder's copy, as "id major:minor"
	for _, h := range holders {
		m := procMountAt(t, strconv.Itoa(h.PID), vol)
		if m == nil {
			t.Fatalf("holder %d has no copy at %s", h.PID, vol)
		}
		copies[h.MntNS] = strconv.Itoa(m.ID) + " " + strconv.Itoa(m.Major) + ":" + strconv.Itoa(m.Minor)
	}
	node.Run(t, "umount", vol)
	node.Run(t, "rmdir", vol)
	notes, err := mw.drain(time.Now)
	if err != nil {
		t.Fatal(err)
	}
	got := map[uint32]string{}
	for _, n := range notes {
		if !n.Detach || n.Mount == nil || n.Mount.Mountpoint != vol || got[n.NS] != "" {
			t.Fatalf("after the rmdir: %s; want one detach at %s in each holder's namespace", describe(notes), vol)
		}
		got[n.NS] = strconv.Itoa(n.Mount.ID) + " " + strconv.Itoa(n.Mount.Major) + ":" + strconv.Itoa(n.Mount.Minor)
	}
	for ino, want := range copies {
		if got[ino] != want {
			t.Errorf("detach in mnt:[%d]: %q, want its copy %q", ino, got[ino], want)
		}
	}

	// A mount in a holder of each group.
	for _, h := range []*privtest.Holder{holders[1], holders[nsPerGroup+1]} {
		own := privtest.Mkdir(t, filepath.Join(dir, "own"+strconv.Itoa(h.PID)))
		privtest.Run(t, "nsenter", "-t", strconv.Itoa(h.PID), "-m", "--", "mount", "-t", "tmpfs", "mwsharedown", own)
		want := procMountAt(t, strconv.Itoa(h.PID), own)
		notes, err := mw.drain(time.Now)
		if err != nil || len(notes) != 1 || notes[0].Detach || notes[0].NS != h.MntNS || want == nil ||
			!sameButSource(*notes[0].Mount, *want) {
			t.Errorf("after a mount at %s in mnt:[%d]: %s, %v; want its attach as /proc shows it: %+v", own, h.MntNS, describe(notes), err, want)
		}
	}

	// A namespace no longer watched, alive: its mount is no note.
	dropped := holders[2]
	mw.drop(dropped.MntNS)
	if off, err := mw.drain(time.Now); err != nil || len(off) != 1 || off[0].Watch != event.WatchOff || off[0].NS != dropped.MntNS {
		t.Fatalf("drain after the drop: %s, %v; want the note that mnt:[%d] is no longer watched", describe(off), err, dropped.MntNS)
	}
	own := privtest.Mkdir(t, filepath.Join(dir, "dropped"))
	privtest.Run(t, "nsenter", "-t", strconv.Itoa(dropped.PID), "-m", "--", "mount", "-t", "tmpfs", "mwshareddropped", own)
	if procMountAt(t, strconv.Itoa(dropped.PID), own) == nil {
		t.Fatalf("no mount at %s in mnt:[%d]", own, dropped.MntNS)
	}
	if notes, err := mw.drain(time.Now); err != nil || len(notes) != 0 {
		t.Errorf("after a mount in the namespace no longer watched: %s, %v; want no note", describe(notes), err)
	}
}

// sameButSource reports whether two mounts are described alike but for the
// source, which the daemon's attach notes leave out (infoOf).
func sameButSource(a, b mountinfo.Info) bool {
	a.Source, b.Source = "", ""
	return a == b
}

// TestCreationMarksItsNamespaceAlone: the sync a namespace's creation
// makes marks the newest namespace alone, the one just made (a burst of
// container starts marks no backlog of older namespaces on the event
// path); the next periodic sync, a second of event time later, marks up
// to watchPerSync of the others.
func TestCreationMarksItsNamespaceAlone(t *testing.T) {
	privtest.Require(t)
	privtest.RequireCommands(t, "unshare", "nsenter", "sh", "sleep")
	node := privtest.StartNode(t)
	var inos []uint32
	for range 3 {
		inos = append(inos, node.StartHolder(t, "private", "true").MntNS)
	}
	corr := startedCorrelator(t)
	mw := watchOnly(t, corr) // none yet
	newest := inos[1]
	var live []*correlate.Namespace
	for _, n := range corr.Lineage().Live() {
		if slices.Contains(inos, n.Ino) {
			live = append(live, n)
		}
		if n.Ino == newest {
			n.Created = time.Now()
		}
	}
	at := time.Now()
	p := &pipeline{corr: corr, mounts: mw, mountsAt: at.UnixNano()}
	created := &event.Event{Kind: event.KindUnshare, Time: at.Add(time.Millisecond), MntNSBefore: node.MntNS, MntNSAfter: newest}
	p.syncLive(created, func() []*correlate.Namespace { return live })
	if len(mw.groups) != 1 || mw.groups[newest] == nil {
		t.Fatalf("after the creation's sync: %d namespaces watched (the new one: %v), want the new one alone", len(mw.groups), mw.groups[newest] != nil)
	}
	p.syncLive(&event.Event{Kind: event.KindExit, Time: at.Add(time.Second)}, func() []*correlate.Namespace { return live })
	if len(mw.groups) != len(inos) {
		t.Fatalf("after the periodic sync: %d namespaces watched, want %d", len(mw.groups), len(inos))
	}
}

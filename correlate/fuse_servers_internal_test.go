package correlate

import (
	"testing"
	"time"

	"github.com/mntleak/mntleak/event"
)

// TestFuseServersBounded: past the bound the oldest server goes first, from
// the servers and from the exits, and an exit is kept only for a server.
func TestFuseServersBounded(t *testing.T) {
	var s fuseServers
	at := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	for pid := uint32(1); pid <= maxFuseServers+1; pid++ {
		s.observe(&event.Event{Kind: event.KindMount, PID: pid, FSType: "fuse.sshfs", Time: at.Add(time.Duration(pid) * time.Millisecond)})
	}
	if _, ok := s.since[1]; ok || len(s.since) != maxFuseServers {
		t.Fatalf("%d servers, the oldest kept: %v", len(s.since), ok)
	}
	s.observe(&event.Event{Kind: event.KindExit, PID: 1, Time: at.Add(time.Hour)})
	s.observe(&event.Event{Kind: event.KindExit, PID: 2, Time: at.Add(time.Hour), ExitCode: 9})
	if s.exitOf(1, at) != nil || s.exitOf(2, at) == nil || s.exitOf(2, at.Add(2*time.Hour)) != nil {
		t.Errorf("exits: dropped server %v, server %v, before its mount %v", s.exitOf(1, at), s.exitOf(2, at), s.exitOf(2, at.Add(2*time.Hour)))
	}
	s.observe(&event.Event{Kind: event.KindMount, PID: 2, FSType: "fuseblk", Time: at.Add(2 * time.Hour)})
	if s.exitOf(2, at) != nil {
		t.Error("a pid that serves again keeps its old exit")
	}
}

// Only a successful mount of a FUSE filesystem names a server, and only
// an exit is taken for its end: a failed FUSE mount, another filesystem's
// mount, or a second mount by a pid that is not an exit, keep nothing.
func TestFuseServerIsNamedByASuccessfulFuseMount(t *testing.T) {
	at := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		name   string
		mount  event.Event
		end    event.Event
		served bool
	}{
		{"a FUSE mount, then its exit", event.Event{Kind: event.KindMount, FSType: "fuse.sshfs"}, event.Event{Kind: event.KindExit}, true},
		{"a failed FUSE mount", event.Event{Kind: event.KindMount, FSType: "fuse.sshfs", Ret: -1}, event.Event{Kind: event.KindExit}, false},
		{"an ext4 mount", event.Event{Kind: event.KindMount, FSType: "ext4"}, event.Event{Kind: event.KindExit}, false},
		{"a FUSE unmount", event.Event{Kind: event.KindUmount, FSType: "fuse.sshfs"}, event.Event{Kind: event.KindExit}, false},
		{"a FUSE mount, then a failure", event.Event{Kind: event.KindMount, FSType: "fuse.sshfs"}, event.Event{Kind: event.KindFailure}, false},
	} {
		var s fuseServers
		mount, end := tt.mount, tt.end
		mount.PID, mount.Time = 66, at
		end.PID, end.Time, end.ExitCode = 66, at.Add(time.Second), 9
		s.observe(&mount)
		s.observe(&end)
		if got := s.exitOf(66, at) != nil; got != tt.served {
			t.Errorf("%s: an exit kept %v, want %v", tt.name, got, tt.served)
		}
	}
}

// Past the bound, of servers first seen at the same time the lowest pid
// goes; a map within the bound is left as it is, at once.
func TestFuseServersTieDropsTheLowestPid(t *testing.T) {
	at := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	m := map[uint32]time.Time{}
	for pid := uint32(1); pid <= maxFuseServers+1; pid++ {
		m[pid] = at
	}
	trimOldest(m, func(t time.Time) time.Time { return t })
	if _, ok := m[1]; ok || len(m) != maxFuseServers {
		t.Errorf("%d servers, pid 1 kept %v; want %d, pid 1 dropped", len(m), ok, maxFuseServers)
	}
	done := make(chan int)
	go func() {
		one := map[uint32]time.Time{7: at}
		trimOldest(one, func(t time.Time) time.Time { return t })
		done <- len(one)
	}()
	select {
	case n := <-done:
		if n != 1 {
			t.Errorf("a map of one server within the bound: %d left, want 1", n)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("trimOldest of a map within the bound has not returned after 10s")
	}
}

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

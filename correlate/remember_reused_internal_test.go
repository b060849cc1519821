package correlate

import (
	"testing"
	"time"

	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/procfs"
)

// rememberedNS is a correlator restarted after one remembered unshare made
// mnt:[80] (creator pid 20, started at creatorStart ticks; no birth id),
// with only the members given, the last remembered event at tick 1000.
func rememberedNS(creatorStart uint64, members ...Member) (*Correlator, *Namespace) {
	c := New(nil, Options{}, nil)
	at := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	ev := &event.Event{Kind: event.KindUnshare, PID: 20, MntNS: 80, MntNSBefore: 1, MntNSAfter: 80, Time: at,
		MonoNS: 1000 * uint64(clockTick)}
	c.Remember(ev)
	n := c.lineage.Get(80)
	n.Creator = Member{PID: 20, StartTime: creatorStart, Comm: "keeper"}
	n.members = map[int]*Member{} // only the ones given
	for _, m := range members {
		n.members[m.PID] = &m
	}
	return c, n
}

// A restarted daemon keeps the remembered history of a namespace when one
// of the processes in it now is one the history knows: a member or the
// creator, the same pid with the same start time, or a start time the
// events never had (0). A process the history does not know that started
// after the last remembered event (tick 1000) means the inode is another
// namespace's now; one that started at that tick or before could be the
// old namespace's.
func TestRestartKeepsTheHistoryOfAKnownProcess(t *testing.T) {
	p := func(pid int, start uint64) procfs.Process {
		return procfs.Process{PID: pid, StartTime: start, Comm: "sh", MntNS: 80}
	}
	for _, tt := range []struct {
		name         string
		creatorStart uint64
		members      []Member
		inside       procfs.Process
		kept         bool
	}{
		{"a member, the same start time", 5, []Member{{PID: 30, StartTime: 5000}}, p(30, 5000), true},
		{"a member's pid, another start time", 5, []Member{{PID: 30, StartTime: 5000}}, p(30, 6000), false},
		{"a member seen only in events", 5, []Member{{PID: 30}}, p(30, 5000), true},
		{"the creator, the same start time", 5000, nil, p(20, 5000), true},
		{"the creator's pid, another start time", 5000, nil, p(20, 6000), false},
		{"the creator seen only in events", 0, nil, p(20, 5000), true},
		{"a stranger started at the last remembered tick", 5, nil, p(40, 1000), true},
		{"a stranger started after it", 5, nil, p(40, 1001), false},
	} {
		c, n := rememberedNS(tt.creatorStart, tt.members...)
		c.forgetReused([]procfs.Process{tt.inside})
		if kept := c.lineage.Get(80) == n && !n.replaced; kept != tt.kept {
			t.Errorf("%s: history kept %v, want %v", tt.name, kept, tt.kept)
		}
	}
}

// A namespace whose inode is another's now loses the remembered events
// made in it, the last remembered one too, and only those.
func TestForgottenNamespaceLosesItsRememberedEvents(t *testing.T) {
	c, n := rememberedNS(5)
	last := c.lastRemembered
	here := &event.Event{Kind: event.KindMount, MntNS: 80, Target: "/a", FSType: "tmpfs", MonoNS: last - 1}
	elsewhere := &event.Event{Kind: event.KindMount, MntNS: 90, Target: "/b", FSType: "tmpfs", MonoNS: last}
	lastHere := &event.Event{Kind: event.KindMount, MntNS: 80, Target: "/c", FSType: "tmpfs", MonoNS: last}
	for _, ev := range []*event.Event{here, elsewhere, lastHere} {
		c.Remember(ev)
	}
	c.forgetGeneration(n)
	if got := c.ledger.History(); len(got) != 1 || got[0] != elsewhere {
		var targets []string
		for _, ev := range got {
			targets = append(targets, ev.Target)
		}
		t.Errorf("history after forgetting mnt:[80]: %v, want [/b]", targets)
	}
}

package correlate

import (
	"fmt"
	"testing"
	"time"

	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/procfs"
)

// A namespace remembers the latest maxPast members that left it, the
// newest last: the one that left first is dropped once maxPast+1 left.
func TestPastMembersKeepTheLatestOnes(t *testing.T) {
	at := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	l := NewLineage(time.Minute)
	n := l.Created(10, 1, OriginUnshare, Member{PID: 90, Comm: "runc", Joined: at}, nil)
	for pid := 100; pid <= 100+maxPast; pid++ {
		l.Join(10, 1, Member{PID: pid, Comm: "w", StartTime: uint64(pid), Joined: at})
	}
	for pid := 100; pid <= 100+maxPast; pid++ {
		n.leave(pid, at.Add(time.Second))
	}
	past := n.Past()
	if len(past) != maxPast || past[0].PID != 101 || past[len(past)-1].PID != 100+maxPast {
		got := fmt.Sprint(len(past))
		if len(past) > 0 {
			got += fmt.Sprintf(", pids %d..%d", past[0].PID, past[len(past)-1].PID)
		}
		t.Errorf("past members: %s; want %d, pids 101..%d", got, maxPast, 100+maxPast)
	}
}

// A retired namespace is kept for its retention and no longer: one dead
// exactly that long is still known, one dead a nanosecond more is not.
func TestDeadNamespaceKeptForItsRetention(t *testing.T) {
	at := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	l := NewLineage(time.Minute)
	l.Created(10, 1, OriginUnshare, Member{PID: 90, Comm: "runc", Joined: at}, nil)
	l.retire(l.Get(10), at)
	l.expire(at.Add(time.Minute))
	if len(l.dead) != 1 {
		t.Fatalf("dead exactly the retention: %d dead namespaces kept, want 1", len(l.dead))
	}
	l.expire(at.Add(time.Minute + time.Nanosecond))
	if len(l.dead) != 0 {
		t.Errorf("dead longer than the retention: %d dead namespaces kept, want 0", len(l.dead))
	}
}

// newNamespace names the process in and inode of the namespace an event
// creates: a successful unshare that changed namespace, a CLONE_NEWNS
// child; nothing for a failed unshare, one that stayed, or another event.
func TestNewNamespaceOfAnEvent(t *testing.T) {
	tests := []struct {
		name    string
		ev      event.Event
		pid     int
		ino     uint32
		wantPID int
		wantIno uint32
	}{
		{"unshare", event.Event{Kind: event.KindUnshare, PID: 20, MntNSBefore: 10, MntNSAfter: 11}, 0, 0, 20, 11},
		{"failed unshare", event.Event{Kind: event.KindUnshare, PID: 20, Ret: -1, MntNSBefore: 10, MntNSAfter: 11}, 0, 0, 0, 0},
		{"unshare that stayed", event.Event{Kind: event.KindUnshare, PID: 20, MntNSBefore: 10, MntNSAfter: 10}, 0, 0, 0, 0},
		{"CLONE_NEWNS child", event.Event{Kind: event.KindNewNSFork, PID: 20, ChildPID: 21, ParentMntNS: 10, ChildMntNS: 12}, 0, 0, 21, 12},
		{"mount", event.Event{Kind: event.KindMount, PID: 20, MntNS: 10, MntNSBefore: 10, MntNSAfter: 11}, 0, 0, 0, 0},
	}
	for _, tt := range tests {
		pid, ino := newNamespace(&tt.ev)
		if pid != tt.wantPID || ino != tt.wantIno {
			t.Errorf("%s: got pid %d, mnt:[%d]; want pid %d, mnt:[%d]", tt.name, pid, ino, tt.wantPID, tt.wantIno)
		}
	}
}

// A namespace's creation event retires the generation known by its inode,
// unless that one has the same birth id: it is the same namespace, learned
// from a process list read ahead of the event.
func TestCreationRetiresAnotherGenerationOfItsInodeOnly(t *testing.T) {
	at := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		name      string
		known, id uint64 // birth ids: the live generation's, the event's
		retired   bool
	}{
		{"same birth id", 5, 5, false},
		{"another birth id", 5, 6, true},
		{"no birth id known", 0, 0, true},
	} {
		c := New(nil, Options{}, nil)
		n := c.lineage.Created(31, 1, OriginUnshare, Member{PID: 20, Comm: "unshare", Joined: at}, &event.Event{NewMntNSID: tt.known})
		ev := &event.Event{Kind: event.KindUnshare, PID: 20, MntNSBefore: 1, MntNSAfter: 31, NewMntNSID: tt.id, Time: at.Add(time.Second)}
		c.retireBeforeCreation(ev)
		if got := c.lineage.Get(31) != n; got != tt.retired {
			t.Errorf("%s: retired %v, want %v", tt.name, got, tt.retired)
		}
	}
}

// A creation copies a holder of a settling leak when the namespace it
// leaves is the holder's: a CLONE_NEWNS child's parent namespace, or the
// namespace the unsharing process is a member of when the event does not
// say which it left.
func TestCreationCopiesAHolderFromTheNamespaceItLeaves(t *testing.T) {
	at := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	c := New(nil, Options{}, nil)
	c.now = at
	holder := c.lineage.Created(30, 1, OriginUnshare, Member{PID: 20, Comm: "unshare", Joined: at}, nil)
	c.lineage.Join(30, 1, Member{PID: 40, Comm: "sh", Joined: at})
	c.pending = []*pendingLeak{{deadline: at.Add(-time.Second), matches: []match{{ns: holder}}}}
	for _, tt := range []struct {
		name string
		ev   event.Event
		want bool
	}{
		{"child of the holder", event.Event{Kind: event.KindNewNSFork, PID: 50, ChildPID: 51, ParentMntNS: 30, ChildMntNS: 32}, true},
		{"child of another", event.Event{Kind: event.KindNewNSFork, PID: 40, ChildPID: 51, ParentMntNS: 1, ChildMntNS: 32}, false},
		{"unshare by a member", event.Event{Kind: event.KindUnshare, PID: 40, MntNSAfter: 33}, true},
		{"unshare leaving another", event.Event{Kind: event.KindUnshare, PID: 40, MntNSBefore: 1, MntNSAfter: 33}, false},
	} {
		if got := c.copiesAHolder(&tt.ev); got != tt.want {
			t.Errorf("%s: copies a holder %v, want %v", tt.name, got, tt.want)
		}
	}
}

// A process list fills in the cgroup of a member that joined without one,
// and leaves a known one as it is.
func TestReconcileFillsAMissingCgroup(t *testing.T) {
	at := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	l := NewLineage(time.Minute)
	n := l.Created(10, 1, OriginUnshare, Member{PID: 90, Comm: "runc", Joined: at}, nil)
	l.Join(10, 1, Member{PID: 90, Comm: "runc", StartTime: 9, Joined: at})
	l.Join(10, 1, Member{PID: 91, Comm: "sh", StartTime: 10, Cgroup: "/kubepods/a", Joined: at})
	l.Reconcile([]procfs.Process{{PID: 90, StartTime: 9, Comm: "runc", MntNS: 10, Cgroup: "/system.slice/containerd.service"},
		{PID: 91, StartTime: 10, Comm: "sh", MntNS: 10, Cgroup: "/kubepods/b"}}, at.Add(time.Second))
	if got := n.members[90].Cgroup; got != "/system.slice/containerd.service" {
		t.Errorf("member that joined without a cgroup: got %q, want %q", got, "/system.slice/containerd.service")
	}
	if got := n.members[91].Cgroup; got != "/kubepods/a" {
		t.Errorf("member that joined with a cgroup: got %q, want %q", got, "/kubepods/a")
	}
}

// A namespace whose creation was not seen is named by its oldest process
// while that one is in it, and by the oldest left once it is gone.
func TestPredatingNamespaceNamedByItsOldestProcess(t *testing.T) {
	at := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	l := NewLineage(time.Minute)
	l.Seed([]procfs.Process{{PID: 100, StartTime: 1000, Comm: "init", MntNS: 10}})
	n := l.Get(10)
	l.Reconcile([]procfs.Process{{PID: 100, StartTime: 1000, Comm: "init", MntNS: 10}, {PID: 50, StartTime: 500, Comm: "older", MntNS: 10}}, at)
	if n.Creator.PID != 100 {
		t.Errorf("creator still in it, an older process joined: got pid %d, want 100", n.Creator.PID)
	}
	l.Reconcile([]procfs.Process{{PID: 50, StartTime: 500, Comm: "older", MntNS: 10}, {PID: 200, StartTime: 2000, Comm: "late", MntNS: 10}}, at.Add(time.Second))
	if n.Creator.PID != 50 {
		t.Errorf("creator gone: got pid %d, want 50 (the oldest left)", n.Creator.PID)
	}
}

// The exit of a process of a retired namespace names what it ran as: its
// last entry as a past member (its main thread, not a thread of its own)
// takes the name, and so does the creator, when that process is the
// creator (the same start time), not another with its pid.
func TestExitOfARetiredNamespaceNamesItsCreator(t *testing.T) {
	at := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		name        string
		start       uint64 // the start time of the past member pid 20
		wantCreator string
		wantPast    []string
	}{
		{"the creator", 200, "true", []string{"true", "sh", "unshare"}},
		{"another process with its pid", 999, "unshare", []string{"true", "sh", "unshare"}},
	} {
		l := NewLineage(time.Minute)
		n := l.Created(95, 1, OriginUnshare, Member{PID: 20, StartTime: 200, Comm: "unshare", Joined: at}, nil)
		l.Join(95, 1, Member{PID: 20, StartTime: tt.start, Comm: "unshare", Joined: at})
		l.Join(95, 1, Member{PID: 30, StartTime: 300, Comm: "sh", Joined: at})
		l.Join(95, 1, Member{PID: 20, TID: 21, StartTime: tt.start, Comm: "unshare", Joined: at})
		n.leave(20, at)
		n.leave(30, at)
		n.leave(21, at)
		l.retire(n, at)
		l.exitRetired(95, 20, "true")
		var past []string
		for _, m := range n.Past() {
			past = append(past, m.Comm)
		}
		if n.Creator.Comm != tt.wantCreator || fmt.Sprint(past) != fmt.Sprint(tt.wantPast) {
			t.Errorf("%s: creator %q, past %q; want creator %q, past %q", tt.name, n.Creator.Comm, past, tt.wantCreator, tt.wantPast)
		}
	}
}

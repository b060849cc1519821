package correlate

import (
	"reflect"
	"testing"
	"time"

	"github.com/mntleak/mntleak/procfs"
)

// TestCreatorIndex: the creator is renamed through the index (exec, then
// exit), retired namespaces leave it, and a later process with the same pid
// renames nothing.
func TestCreatorIndex(t *testing.T) {
	l := NewLineage(time.Minute)
	at := time.Unix(100, 0)
	l.Created(10, 1, OriginUnshare, Member{PID: 90, Comm: "(dockerd)", Joined: at}, nil)
	l.Join(10, 1, Member{PID: 90, Comm: "(dockerd)", Joined: at})
	l.Reconcile([]procfs.Process{{PID: 90, StartTime: 5, Comm: "dockerd", MntNS: 10, Cgroup: "/system.slice/docker.service"},
		{PID: 100, StartTime: 6, Comm: "containerd-shim", MntNS: 10}}, at.Add(time.Second))
	n := l.Get(10)
	if n.Creator.Comm != "dockerd" || Unit(n.Creator.Cgroup) != "docker.service" || n.Creator.StartTime != 5 {
		t.Fatalf("creator after exec: %+v", n.Creator)
	}
	l.Exit(10, 90, "dockerd", at.Add(2*time.Second))
	l.Reconcile([]procfs.Process{{PID: 90, StartTime: 50, Comm: "unrelated", MntNS: 10}, {PID: 100, StartTime: 6, Comm: "containerd-shim", MntNS: 10}}, at.Add(3*time.Second))
	if n.Creator.Comm != "dockerd" {
		t.Errorf("a reused pid renamed the creator: %+v", n.Creator)
	}
	l.Reconcile(nil, at.Add(4*time.Second)) // everything gone
	if len(l.byCreator) != 0 || len(l.live) != 0 {
		t.Errorf("index keeps %d pids, %d live namespaces after all died", len(l.byCreator), len(l.live))
	}
}

// TestRetireOrder: a namespace retired with many members lists them as
// past in one order, start time then pid, whatever order the map walks
// them in (Past() reaches findings, and replays must agree byte for byte).
func TestRetireOrder(t *testing.T) {
	at := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	var want []int
	for try := 0; try < 20; try++ {
		l := NewLineage(time.Minute)
		l.Created(10, 1, OriginUnshare, Member{PID: 90, Comm: "runc", Joined: at}, nil)
		for pid := 100; pid < 116; pid++ {
			l.Join(10, 1, Member{PID: pid, Comm: "w", StartTime: uint64(1000 - pid%4), Joined: at})
		}
		l.retire(l.Get(10), at.Add(time.Second))
		var got []int
		for _, m := range l.dead[0].Past() {
			got = append(got, m.PID)
		}
		if try == 0 {
			want = got
			for i := 1; i < len(got); i++ {
				a, b := l.dead[0].Past()[i-1], l.dead[0].Past()[i]
				if a.StartTime > b.StartTime || (a.StartTime == b.StartTime && a.PID > b.PID) {
					t.Fatalf("past members not in start-time, pid order: %v", got)
				}
			}
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("retire %d: past members %v, first time %v", try, got, want)
		}
	}
}

// TestReconcileLeaveOrder: members a /proc snapshot no longer shows leave
// in start-time, pid order, not the map's, and namespaces without a
// process retire in inode order.
func TestReconcileLeaveOrder(t *testing.T) {
	at := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	var wantPast []int
	var wantDead []uint32
	for try := 0; try < 20; try++ {
		l := NewLineage(time.Minute)
		for ino := uint32(10); ino < 18; ino++ {
			l.Created(ino, 1, OriginUnshare, Member{PID: int(ino), Comm: "runc", Joined: at}, nil)
		}
		for pid := 100; pid < 116; pid++ {
			l.Join(10, 1, Member{PID: pid, Comm: "w", StartTime: uint64(1000 - pid%4), Joined: at})
		}
		// Only pid 10 stays, in namespace 10: the others left it, and
		// namespaces 11..17 have no process.
		l.Reconcile([]procfs.Process{{PID: 10, StartTime: 1, Comm: "runc", MntNS: 10}}, at.Add(time.Second))
		var past []int
		for _, m := range l.Get(10).Past() {
			past = append(past, m.PID)
		}
		var dead []uint32
		for _, n := range l.dead {
			dead = append(dead, n.Ino)
		}
		if try == 0 {
			wantPast, wantDead = past, dead
			if !reflect.DeepEqual(dead, []uint32{11, 12, 13, 14, 15, 16, 17}) {
				t.Fatalf("retired %v, want 11..17 in inode order", dead)
			}
			continue
		}
		if !reflect.DeepEqual(past, wantPast) || !reflect.DeepEqual(dead, wantDead) {
			t.Fatalf("reconcile %d: past %v, dead %v; first time %v, %v", try, past, dead, wantPast, wantDead)
		}
	}
}

// TestRevive: a namespace retired for want of a process is the same
// generation when a process enters it later or a bind is seen keeping it
// (with its recorded creation); a pinned one outlives the retention and
// reconciliations; none is revived across lost events, and a later
// generation of the inode is the one revived.
func TestRevive(t *testing.T) {
	at := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	creator := Member{PID: 20, Comm: "unshare", Joined: at}
	tests := []struct {
		name        string
		then        func(l *Lineage) // after the creation, exit and retirement
		wantCreator int              // pid of the creator of live namespace 95; 0: inferred
		wantDead    int
	}{
		{"entered by nsenter", func(l *Lineage) {
			l.Join(95, 1, Member{PID: 40, Comm: "nsenter", Joined: at.Add(3 * time.Second)})
		}, 20, 0},
		{"a bind is seen keeping it", func(l *Lineage) { l.Pin([]uint32{95}, at.Add(3*time.Second)) }, 20, 0},
		{"pinned, then retention and reconciliations pass", func(l *Lineage) {
			l.Pin([]uint32{95}, at.Add(3*time.Second))
			l.Reconcile(nil, at.Add(time.Hour))
			l.expire(at.Add(time.Hour))
		}, 20, 0},
		{"the bind is gone", func(l *Lineage) {
			l.Pin([]uint32{95}, at.Add(3*time.Second))
			l.Pin(nil, at.Add(4*time.Second))
			l.Reconcile(nil, at.Add(30*time.Second))
		}, -1, 1},
		{"events were lost after it died", func(l *Lineage) {
			l.Lost(at.Add(2 * time.Second))
			l.Join(95, 1, Member{PID: 40, Comm: "nsenter", Joined: at.Add(3 * time.Second)})
		}, 40, 1},
		{"a later generation of the inode", func(l *Lineage) {
			l.Created(95, 1, OriginUnshare, Member{PID: 60, Comm: "unshare", Joined: at.Add(3 * time.Second)}, nil)
			l.Reconcile(nil, at.Add(4*time.Second))
			l.Join(95, 1, Member{PID: 40, Comm: "nsenter", Joined: at.Add(5 * time.Second)})
		}, 60, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := NewLineage(time.Minute)
			l.Created(95, 1, OriginUnshare, creator, nil)
			l.Join(95, 1, creator)
			l.Exit(95, 20, "unshare", at.Add(time.Second))
			l.Reconcile(nil, at.Add(2*time.Second))
			if l.Get(95) != nil || len(l.dead) != 1 {
				t.Fatalf("not retired: live %v, %d dead", l.Get(95), len(l.dead))
			}
			tt.then(l)
			n := l.Get(95)
			switch {
			case tt.wantCreator < 0 && n != nil:
				t.Errorf("mnt:[95] live (creator %+v), want retired", n.Creator)
			case tt.wantCreator == 0 && (n == nil || !n.Inferred):
				t.Errorf("mnt:[95] %+v, want an inferred generation", n)
			case tt.wantCreator > 0 && (n == nil || n.Creator.PID != tt.wantCreator || n.Dead):
				t.Errorf("mnt:[95] %+v, want the live generation created by pid %d", n, tt.wantCreator)
			}
			if len(l.dead) != tt.wantDead {
				t.Errorf("%d dead generations, want %d", len(l.dead), tt.wantDead)
			}
		})
	}
}

// TestCreatorTrackedAfterRevival: a creator that left its namespace (setns
// elsewhere) and comes back after the lineage retired it is indexed again:
// its exec renames the creator, and its exit marks it gone.
func TestCreatorTrackedAfterRevival(t *testing.T) {
	at := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	l := NewLineage(time.Minute)
	creator := Member{PID: 20, StartTime: 7, Comm: "unshare", Joined: at}
	l.Created(95, 1, OriginUnshare, creator, nil)
	l.Join(95, 1, creator)
	l.Join(1, 95, Member{PID: 20, StartTime: 7, Comm: "unshare", Joined: at.Add(time.Second)})
	l.Reconcile([]procfs.Process{{PID: 20, StartTime: 7, Comm: "unshare", MntNS: 1}}, at.Add(2*time.Second))
	if l.Get(95) != nil {
		t.Fatal("mnt:[95] not retired")
	}
	l.Join(95, 1, Member{PID: 20, StartTime: 7, Comm: "unshare", Joined: at.Add(3 * time.Second)})
	l.Reconcile([]procfs.Process{{PID: 20, StartTime: 7, Comm: "agent", MntNS: 95}}, at.Add(4*time.Second))
	n := l.Get(95)
	if n == nil || n.Creator.Comm != "agent" {
		t.Fatalf("mnt:[95] %+v: want revived, its creator renamed agent by its exec", n)
	}
	l.Exit(95, 20, "agent", at.Add(5*time.Second))
	if !n.creatorGone {
		t.Error("the creator's exit did not reach the revived namespace")
	}
}

// TestGenerationStateAfterRevival: what a revived generation carries and what it does
// not (found in review): a creator whose start time is unknown is not
// indexed again (a pid reused meanwhile would rename it); the table and
// exit time its first death left go, so a second death is dated by its
// own; events lost after the last sign of life (not after the death was
// noticed) forbid the revival.
func TestGenerationStateAfterRevival(t *testing.T) {
	at := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	sec := func(n int) time.Time { return at.Add(time.Duration(n) * time.Second) }
	made := func() *Lineage {
		l := NewLineage(time.Hour)
		creator := Member{PID: 20, Comm: "unshare", Joined: at} // from the event: no start time
		l.Created(95, 1, OriginUnshare, creator, nil)
		l.Join(95, 1, creator)
		return l
	}
	t.Run("a reused pid does not rename the creator", func(t *testing.T) {
		const host = 4000 // after 95: Reconcile retires 95 before it reads the host's members
		l := NewLineage(time.Hour)
		l.Join(host, 0, Member{PID: 1, StartTime: 1, Comm: "systemd", Joined: at})
		creator := Member{PID: 20, Comm: "unshare", Joined: at}
		l.Created(95, host, OriginUnshare, creator, nil)
		l.Join(95, host, creator)
		l.Join(host, 95, Member{PID: 20, Comm: "unshare", Joined: sec(1)}) // it leaves by setns
		l.Reconcile([]procfs.Process{{PID: 1, StartTime: 1, Comm: "systemd", MntNS: host}, {PID: 20, StartTime: 7, Comm: "unshare", MntNS: host}}, sec(2))
		l.Exit(host, 20, "unshare", sec(3))
		l.Join(95, host, Member{PID: 40, Comm: "nsenter", Joined: sec(4)}) // revives 95
		// pid 20 is another program's now, seen first by an event.
		l.Join(host, 0, Member{PID: 20, Comm: "sshd", Joined: sec(5)})
		l.Reconcile([]procfs.Process{{PID: 1, StartTime: 1, Comm: "systemd", MntNS: host}, {PID: 20, StartTime: 99, Comm: "sshd", MntNS: host},
			{PID: 40, StartTime: 50, Comm: "nsenter", MntNS: 95}}, sec(6))
		if n := l.Get(95); n == nil || n.Creator.Comm != "unshare" {
			t.Errorf("mnt:[95] %+v: want revived, its creator still unshare", n)
		}
	})
	t.Run("the first death's table and exit go", func(t *testing.T) {
		l := made()
		l.Exit(95, 20, "unshare", sec(1))
		l.Reconcile(nil, sec(2))
		l.dead[0].LastTable = &Table{NS: 95}
		l.Join(95, 1, Member{PID: 40, Comm: "nsenter", Joined: sec(3)})
		n := l.Get(95)
		if n == nil || n.LastTable != nil {
			t.Fatalf("mnt:[95] %+v: want revived without the table its death left", n)
		}
		l.Join(1, 95, Member{PID: 40, Comm: "nsenter", Joined: sec(60)}) // leaves by setns: no exit inside
		l.Reconcile([]procfs.Process{{PID: 40, StartTime: 50, Comm: "nsenter", MntNS: 1}}, sec(61))
		if !n.Dead || !n.Died.Equal(sec(61)) {
			t.Errorf("second death dead=%v at %v, want at %v (not the first death's exit)", n.Dead, n.Died, sec(61))
		}
	})
	t.Run("events lost after its last sign of life", func(t *testing.T) {
		l := made()
		l.Lost(sec(2))           // its creator's exit, and a new namespace with its inode, among them
		l.Reconcile(nil, sec(3)) // retired now: Died is when it was noticed
		l.Pin([]uint32{95}, sec(4))
		if n := l.Get(95); n != nil {
			t.Errorf("mnt:[95] revived across lost events: %+v", n)
		}
	})
}

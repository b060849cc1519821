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

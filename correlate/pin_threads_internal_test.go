package correlate

import (
	"fmt"
	"testing"

	"github.com/mntleak/mntleak/finding"
	"github.com/mntleak/mntleak/procfs"
)

// threadsByPID lists only the processes that have threads in namespaces
// of their own.
func TestThreadsByPIDListsOnlyProcessesWithThreads(t *testing.T) {
	pins := []procfs.Pin{
		{Process: procfs.Process{PID: 70}},
		{Process: procfs.Process{PID: 77, Threads: []procfs.Thread{{TID: 78, MntNS: 9}}}},
	}
	if got, want := fmt.Sprint(threadsByPID(pins)), "map[77:[{78 9}]]"; got != want {
		t.Errorf("threadsByPID = %s, want %s", got, want)
	}
	if got := threadsByPID(pins[:1]); got != nil {
		t.Errorf("threadsByPID of a process without threads = %v, want nil", got)
	}
}

// A process's own pin is in its main thread's namespace unless only a
// holding in one of its threads' namespaces has the path; a thread's own
// pin is in the thread's namespace as /proc says it.
func TestThroughThread(t *testing.T) {
	matches := []match{{ns: &Namespace{Ino: 9}, where: "/srv/vol"}, {ns: &Namespace{Ino: 5}}}
	threads := map[int][]procfs.Thread{77: {{TID: 78, MntNS: 9}}}
	pin := func(tid int, ns uint32, path string) finding.PinRef {
		return finding.PinRef{ProcRef: finding.ProcRef{PID: 77, TID: tid}, MntNS: ns, Pin: "fd", Path: path}
	}
	for _, c := range []struct {
		what string
		r    finding.PinRef
		want uint32
	}{
		{"a file the main thread's namespace holds nothing at", pin(0, 1, "/srv/vol/f (deleted)"), 9},
		{"a thread's own cwd", pin(78, 1, "/srv/vol/f"), 1},
		{"a file of a process without threads elsewhere", finding.PinRef{ProcRef: finding.ProcRef{PID: 70}, MntNS: 1, Path: "/srv/vol/f"}, 1},
		{"a file held where the main thread is", pin(0, 9, "/srv/vol/f"), 9},
		{"a file no holding has", pin(0, 1, "/data/f"), 1},
	} {
		if got := throughThread(c.r, threads, matches); got != c.want {
			t.Errorf("%s: namespace %d, want %d", c.what, got, c.want)
		}
	}
	// A pin-only holding (no mount, no place) in the thread's namespace
	// holds no path.
	if holdsPath([]match{{ns: &Namespace{Ino: 9}}}, 9, "/srv/vol/f") {
		t.Errorf("a holding without a place holds /srv/vol/f")
	}
}

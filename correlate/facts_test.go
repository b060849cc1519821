package correlate_test

import (
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/stream"

	"github.com/mntleak/mntleak/finding"
)

// facts are what a scenario's run recorded about its processes, apart
// from the findings: every pid a command name ran as, the mount namespace
// each pid was last seen in, and the pid whose unshare or clone made each
// namespace. The expectation table names processes by command; their pid
// and namespace come from here (a recording's events and process lists,
// or a live run's events), never from the golden.
type facts struct {
	pids    map[string][]int  // comm → pids, in the order first seen
	ns      map[ran]uint32    // the namespace a process was last seen in, running as comm
	creator map[uint32]int    // namespace → the pid that made it
	madeAs  map[uint32]string // namespace → the comm its making event carried
}

// ran is a process as it ran: a pid is taken again (pid-reuse, or
// another test's process in a live run), the pair much less.
type ran struct {
	pid  int
	comm string
}

func newFacts() *facts {
	return &facts{pids: map[string][]int{}, ns: map[ran]uint32{}, creator: map[uint32]int{}, madeAs: map[uint32]string{}}
}

func (x *facts) process(pid int, comm string, ns uint32) {
	if !slices.Contains(x.pids[comm], pid) {
		x.pids[comm] = append(x.pids[comm], pid)
	}
	if ns != 0 {
		x.ns[ran{pid, comm}] = ns
	}
}

// event adds what an event says: who ran as what, where, and which
// namespace it made.
func (x *facts) event(ev *event.Event) {
	x.process(int(ev.PID), ev.Comm, ev.MntNS)
	switch ev.Kind {
	case event.KindUnshare:
		if ev.Ret == 0 && ev.MntNSAfter != 0 && ev.MntNSAfter != ev.MntNSBefore {
			x.creator[ev.MntNSAfter], x.madeAs[ev.MntNSAfter] = int(ev.PID), ev.Comm
			x.ns[ran{int(ev.PID), ev.Comm}] = ev.MntNSAfter
		}
	case event.KindNewNSFork:
		x.creator[ev.ChildMntNS], x.madeAs[ev.ChildMntNS] = int(ev.PID), ev.Comm
	}
}

// recordedFacts reads a recorded stream's facts.
func recordedFacts(t testing.TB, path string) *facts {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	x := newFacts()
	err = stream.Read(f, path, func(it stream.Item) error {
		switch {
		case it.Event != nil:
			x.event(it.Event)
		case it.Proc != nil:
			for _, p := range it.Proc.Processes {
				x.process(p.PID, p.Comm, p.MntNS)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("read the facts of %s: %v", path, err)
	}
	return x
}

// scenarioFacts are the facts of a live run's events that its processes
// made: those descending from one of roots (run.sh, and the holder it
// reports: a process whose parent exited is reparented, and its events
// carry the new parent), by the parents the events carry. The tracer sees
// the whole machine, and other tests run processes of the same names
// meanwhile. A pid's events after its exit are another process's that
// took the pid (pid_max is 32768 on the test machines): never the run's.
func scenarioFacts(evs []*event.Event, roots ...int) *facts {
	var lived []*event.Event // each event of a pid before that pid's exit
	gone := map[uint32]bool{}
	for _, ev := range evs {
		if gone[ev.PID] {
			continue
		}
		lived = append(lived, ev)
		if ev.Kind == event.KindExit {
			gone[ev.PID] = true
		}
	}
	parent := map[int]int{}
	for _, ev := range lived {
		if ev.PPID != 0 {
			parent[int(ev.PID)] = int(ev.PPID)
		}
	}
	mine := func(pid int) bool {
		for range 64 {
			if slices.Contains(roots, pid) {
				return true
			}
			if pid = parent[pid]; pid == 0 {
				return false
			}
		}
		return false
	}
	x := newFacts()
	for _, ev := range lived {
		if mine(int(ev.PID)) {
			x.event(ev)
		}
	}
	return x
}

// pid is the one process that ran as comm (0 and a test error when the
// run had none or several: the expectation would be ambiguous).
func (x *facts) pid(t testing.TB, comm string) int {
	t.Helper()
	if len(x.pids[comm]) != 1 {
		t.Errorf("the run recorded %d processes named %q (%v), want one", len(x.pids[comm]), comm, x.pids[comm])
		return 0
	}
	return x.pids[comm][0]
}

// nsOf is the namespace the processes that ran as comm were last seen in
// (0 and a test error when they were in several).
func (x *facts) nsOf(t testing.TB, comm string) uint32 {
	t.Helper()
	var seen []uint32
	for _, pid := range x.pids[comm] {
		if ns := x.ns[ran{pid, comm}]; ns != 0 && !slices.Contains(seen, ns) {
			seen = append(seen, ns)
		}
	}
	if len(seen) != 1 {
		t.Errorf("the processes named %q were recorded in %d namespaces (%v), want one", comm, len(seen), seen)
		return 0
	}
	return seen[0]
}

// ranIn is every process recorded in namespace ns, as comm[pid].
func (x *facts) ranIn(ns uint32) []string {
	var out []string
	for r, n := range x.ns {
		if n == ns {
			out = append(out, r.comm+"["+strconv.Itoa(r.pid)+"]")
		}
	}
	slices.Sort(out)
	return out
}

// checkHolder checks who a finding names against the facts: the process
// to act on (comm, the pid it ran as, role) and the namespace it holds in;
// the primary holder's namespace; the event that made that namespace
// (cited, by the process that made it), or that it is inferred; and every
// process the fix names.
func checkHolder(t testing.TB, i int, f *finding.Finding, w expectation, x *facts) {
	t.Helper()
	hd, a := f.Actor()
	switch {
	case w.actor == "" && a != nil:
		t.Errorf("finding %d names %s[%d] (%s), want no process: %s", i, a.Comm, a.PID, a.Role, f.Line())
	case w.actor != "" && (a == nil || a.Comm != w.actor || a.PID != x.pid(t, w.actor) || a.Role != w.role):
		t.Errorf("finding %d: actor %+v, want %s[%d] (%s): %s", i, a, w.actor, x.pid(t, w.actor), w.role, f.Line())
	case w.actor != "" && a.Pin != "nsfd" && hd.MntNS != x.nsOf(t, w.actor):
		// It holds from inside the namespace (a member, a pin there);
		// an open nsfs file holds the holder namespace from outside.
		t.Errorf("finding %d: %s[%d] named in mnt:[%d], want its own mnt:[%d]: %s", i, a.Comm, a.PID, hd.MntNS, x.nsOf(t, w.actor), f.Line())
	case w.actor != "" && a.Pin == "nsfd" && hd.MntNS != x.nsOf(t, w.holder):
		t.Errorf("finding %d: %s[%d] named in mnt:[%d], want the namespace it holds open, mnt:[%d]: %s", i, a.Comm, a.PID, hd.MntNS, x.nsOf(t, w.holder), f.Line())
	}
	if len(f.Holders) == 0 {
		t.Errorf("finding %d names no holder: %s", i, f.Line())
		return
	}
	ns := f.Holders[0].MntNS
	switch {
	case w.kept && (f.Holders[0].KeptBy == "" || f.Holders[0].Self):
		t.Errorf("finding %d: primary holder mnt:[%d] is not said to be kept by a bind or an open file of its nsfs file: %s", i, ns, f.Line())
	case w.holder == "" && !w.kept:
		t.Errorf("finding %d: an expectation names no holder process and does not say the namespace is kept", i)
	case w.holder == "":
		if in := x.ranIn(ns); len(in) > 0 {
			t.Errorf("finding %d: mnt:[%d], which no process runs in, was where %v ran: %s", i, ns, in, f.Line())
		}
	default:
		if want := x.nsOf(t, w.holder); ns != want {
			t.Errorf("finding %d: primary holder mnt:[%d], want mnt:[%d] (of %s): %s", i, ns, want, w.holder, f.Line())
		}
	}
	switch w.madeBy {
	case "inferred":
		if !f.Inferred {
			t.Errorf("finding %d: mnt:[%d] predates the recording, not said to be inferred: %s", i, ns, f.Line())
		}
	case "":
		if !f.Holders[0].Self {
			t.Errorf("finding %d: no event that made mnt:[%d] expected, but it is not the caller's own: %s", i, ns, f.Line())
		}
	default:
		if !citesCreation(f, ns, w.madeBy, x.madeAs[ns], x.creator[ns]) {
			t.Errorf("finding %d does not cite the event by %s[%d] that made mnt:[%d]: %+v", i, w.madeBy, x.creator[ns], ns, f.Evidence)
		}
	}
	var inFix []string
	for _, pid := range pidsInFix(f.Fix) {
		comm := commOf(f, pid)
		if comm == "" || pid != x.pid(t, comm) {
			t.Errorf("finding %d: the fix names pid %d, not one of its recorded holders: %s", i, pid, f.Fix)
		}
		inFix = append(inFix, comm)
	}
	if !slices.Equal(inFix, w.fix) {
		t.Errorf("finding %d: the fix names %v, want %v: %s", i, inFix, w.fix, f.Fix)
	}
}

// citesCreation reports whether the evidence cites the unshare or clone
// that made ns, by the pid that made it (the facts must know it) and its
// comm: as it ran later (creationEvidence names the creator so when it
// knew it), or as the event carried it (madeAs).
func citesCreation(f *finding.Finding, ns uint32, comm, madeAs string, pid int) bool {
	name := "mnt:[" + strconv.FormatUint(uint64(ns), 10) + "]"
	for _, e := range f.Evidence {
		ev := e.Event
		if ev == nil || pid == 0 || int(ev.PID) != pid || (ev.Comm != comm && ev.Comm != madeAs) {
			continue
		}
		if (ev.Kind == "unshare" && strings.HasSuffix(ev.Summary, "→ "+name)) || (ev.Kind == "newns_fork" && strings.HasSuffix(ev.Summary, "new "+name)) {
			return true
		}
	}
	return false
}

// pidsInFix are the processes a fix names ("name[pid]", "nsenter -t PID",
// "/proc/PID/"), each once, in order.
func pidsInFix(fix string) []int {
	var out []int
	for _, m := range procInFix.FindAllStringSubmatch(fix, -1) {
		pid, _ := strconv.Atoi(m[2] + m[3] + m[4])
		if !slices.Contains(out, pid) {
			out = append(out, pid)
		}
	}
	return out
}

// commOf is the comm of a process the finding names as a holder.
func commOf(f *finding.Finding, pid int) string {
	for _, h := range f.Holders {
		for _, p := range h.Processes {
			if p.PID == pid {
				return p.Comm
			}
		}
		for _, p := range h.Pins {
			if p.PID == pid {
				return p.Comm
			}
		}
	}
	return ""
}

// procInFix is a process named in a fix: "name[pid]" (not "mnt:[inode]"),
// "nsenter -t PID", "/proc/PID/".
var procInFix = regexp.MustCompile(`([^:\s])\[(\d+)\]|-t (\d+)|/proc/(\d+)/`)

package variants

import (
	"testing"

	"github.com/mntleak/mntleak/e2e/findingset"
	"github.com/mntleak/mntleak/e2e/testkit/privtest"
	"github.com/mntleak/mntleak/finding"
)

// objects are what a cell made: its paths and devices, and the holder
// namespaces. Once the cell has settled, every finding that names one of
// them is the cell's: a control has none, any other cell exactly the
// findings it expects.
type objects struct {
	paths []string // a device, a mount point, what a teardown removed
	ns    []uint32 // holder namespaces (0: none)
	ids   []uint64 // their birth ids, index for index (0 or none: not known)
}

// withHolder adds the namespace of h, told by its birth id (read now,
// while h runs): the kernel gives its inode to another namespace once it
// is gone, as soon as another package's test makes one.
func (o objects) withHolder(t testing.TB, h *privtest.Holder) objects {
	t.Helper()
	o.ns = append(o.ns, h.MntNS)
	o.ids = append(o.ids, findingset.BirthID(t, h.PID))
	return o
}

// set is the objects in findingset's terms.
func (o objects) set() findingset.Objects {
	return findingset.Objects{Paths: o.paths, NS: o.ns, IDs: o.ids}
}

// names reports whether f names one of the objects (findingset.Objects).
func (o objects) names(f *finding.Finding) bool {
	return o.set().Names(f)
}

// control is a control's check: it lets the cell settle (the leak settle
// window, then tracing stops and the correlator is flushed), then no
// finding of any kind may name its objects.
func control(t testing.TB, l *live, o objects) {
	t.Helper()
	l.settle(t, true)
	noFinding(t, l.all(), o)
}

// noFinding: no finding of any kind names the objects.
func noFinding(t testing.TB, all []*finding.Finding, o objects) {
	t.Helper()
	for _, f := range all {
		if o.names(f) {
			t.Errorf("finding in a control: %s", f.Line())
		}
	}
}

// expected is one finding a cell must produce, all of it: its kind, the
// call, the cause, the process named (pid and role; none for a namespace
// no process runs in) and its namespace, and whether the event that made
// the namespace is cited or the namespace is said to be inferred (made
// before tracing).
type expected struct {
	kind     finding.FindingKind
	syscall  string
	cause    finding.Cause
	holder   holder // pid 0: no process is named
	role     string
	inferred bool // else the event that made holder.ns is cited
	fix      int  // the process the fix names (0: none; a unit to restart, a namespace no process runs in)
}

// want is the expectation in findingset's terms.
func (w expected) want() findingset.Want {
	return findingset.Want{Kind: w.kind, Syscall: w.syscall, Cause: w.cause, PID: w.holder.pid, Role: w.role,
		NS: w.holder.ns, NSID: w.holder.id, Inferred: w.inferred, Fix: w.fix}
}

// exactFindings checks that the findings about the objects are exactly
// want, one each, in any order, each whole (findingset.Exact).
func exactFindings(t testing.TB, all []*finding.Finding, o objects, want []expected) {
	t.Helper()
	var ws []findingset.Want
	for _, w := range want {
		ws = append(ws, w.want())
	}
	findingset.Exact(t, o.set().Of(all), ws)
}

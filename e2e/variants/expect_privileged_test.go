package variants

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/mntleak/mntleak/finding"
)

// objects are what a cell made: its paths and devices, and the holder
// namespaces. Once the cell has settled, every finding that names one of
// them is the cell's: a control has none, any other cell exactly the
// findings it expects.
type objects struct {
	paths []string // a device, a mount point, what a teardown removed
	ns    []uint32 // holder namespaces (0: none)
}

// names reports whether f names one of the objects: its object or one it
// names besides (Others), the missing bind source, or a holder, the call's
// namespace or a cited event in one of the namespaces.
func (o objects) names(f *finding.Finding) bool {
	paths := []string{f.Object.Path, f.Object.Source}
	for _, other := range f.Others {
		paths = append(paths, other.Path, other.Source)
	}
	for _, h := range f.Holders {
		paths = append(paths, h.Where)
		paths = append(paths, h.Also...)
	}
	for _, p := range paths {
		if p != "" && slices.Contains(o.paths, p) {
			return true
		}
	}
	nss := []uint32{f.Call.MntNS}
	for _, h := range f.Holders {
		nss = append(nss, h.MntNS)
	}
	for _, ns := range nss {
		if ns != 0 && slices.Contains(o.ns, ns) {
			return true
		}
	}
	line := f.Line()
	for _, ns := range o.ns {
		if ns != 0 && strings.Contains(line, "mnt:["+strconv.FormatUint(uint64(ns), 10)+"]") {
			return true
		}
	}
	return false
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

func (w expected) String() string {
	made := "created by its event"
	if w.inferred {
		made = "inferred"
	}
	return string(w.kind) + " " + w.syscall + " " + w.cause.String() + " naming pid " + strconv.Itoa(w.holder.pid) +
		" (" + w.role + ") in mnt:[" + strconv.FormatUint(uint64(w.holder.ns), 10) + "], " + made
}

// exactFindings checks that the findings about the objects are exactly
// want, one each, in any order; each is checked whole (expect).
func exactFindings(t testing.TB, all []*finding.Finding, o objects, want []expected) {
	t.Helper()
	var got []*finding.Finding
	for _, f := range all {
		if o.names(f) {
			got = append(got, f)
		}
	}
	used := make([]bool, len(got))
	ok := len(got) == len(want)
	for _, w := range want {
		i := slices.IndexFunc(got, func(f *finding.Finding) bool { return f.Kind == w.kind && f.Call.Syscall == w.syscall })
		for i >= 0 && used[i] {
			next := slices.IndexFunc(got[i+1:], func(f *finding.Finding) bool { return f.Kind == w.kind && f.Call.Syscall == w.syscall })
			if next < 0 {
				i = -1
				break
			}
			i += 1 + next
		}
		if i < 0 {
			ok = false
			continue
		}
		used[i] = true
		expect(t, got[i], w)
	}
	if !ok {
		var b strings.Builder
		for _, w := range want {
			b.WriteString("\n  want " + w.String())
		}
		for _, f := range got {
			b.WriteString("\n  got  " + f.Line())
		}
		t.Errorf("%d findings about the cell's objects, want exactly %d:%s", len(got), len(want), b.String())
	}
}

// expect checks one finding against what the cell calls for.
func expect(t testing.TB, f *finding.Finding, w expected) {
	t.Helper()
	hd, a := f.Actor()
	switch {
	case f.Cause != w.cause || hd == nil || hd.MntNS != w.holder.ns || f.Fix == "":
		t.Errorf("want %s; got %s:\n%s", w, f.Cause, f.Line())
	case w.holder.pid == 0 && a != nil:
		t.Errorf("want %s; names %s[%d] for a namespace no process runs in:\n%s", w, a.Comm, a.PID, f.Line())
	case w.holder.pid != 0 && (a == nil || a.PID != w.holder.pid || a.Role != w.role):
		t.Errorf("want %s; actor %+v:\n%s", w, a, f.Line())
	}
	switch {
	case w.inferred && !f.Inferred:
		t.Errorf("a namespace made before tracing, not said to be inferred:\n%s", f.Line())
	case !w.inferred && !createdBy(f, w.holder.ns):
		t.Errorf("the event that made mnt:[%d] is not cited: %+v\n%s", w.holder.ns, f.Evidence, f.Line())
	}
	checkFixPIDs(t, f, w.fix)
}

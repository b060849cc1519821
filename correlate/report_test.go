package correlate_test

import (
	"strings"
	"testing"

	"github.com/mntleak/mntleak/correlate"
	"github.com/mntleak/mntleak/event"
)

// TestReport: why's report has a headline with counts, a line per
// holding namespace and one per process (its pins by kind), the cause and
// the fix; nothing is cut to "+N more".
func TestReport(t *testing.T) {
	pin := func(pid int, comm, kind, path string) correlate.PinRef {
		return correlate.PinRef{ProcRef: correlate.ProcRef{PID: pid, Comm: comm}, MntNS: 70, Pin: kind, Path: path}
	}
	f := &correlate.Finding{
		Kind: correlate.KindHeld, Cause: correlate.CauseInUse, Fix: "stop those processes or move them off /srv, then retry",
		Object: correlate.Object{Path: "/srv", Dev: event.MakeDev(7, 0)},
		Holders: []correlate.Holder{
			{MntNS: 70, Self: true, Where: "/srv", Propagation: "private", Pins: []correlate.PinRef{
				pin(10, "sh", "cwd", "/srv"), pin(11, "tail", "fd", "/srv/a.log"), pin(10, "sh", "fd", "/srv/b"),
				pin(11, "tail", "fd", "/srv/c.log"), pin(12, "sleep", "root", "/srv"),
			}},
			{MntNS: 80, Where: "/host/srv", Propagation: "master:3", Processes: []correlate.ProcRef{{PID: 20, Comm: "node_exporter", Unit: "ne.service"}}},
		},
	}
	want := "HELD /srv (7:0): 2 namespaces, 4 processes\n" +
		"  mounted in the caller's own namespace mnt:[70] at /srv (private)\n" +
		"    sh[10]: cwd /srv, fd /srv/b\n" +
		"    tail[11]: 2 fds /srv/a.log …\n" +
		"    sleep[12]: root /srv\n" +
		"  mounted in mnt:[80] at /host/srv (master:3)\n" +
		"    held by node_exporter[20] (ne.service) (namespace member)\n" +
		"cause: in-use\n" +
		"fix: stop those processes or move them off /srv, then retry\n"
	if got := f.Report(); got != want {
		t.Errorf("report:\n%s\nwant:\n%s", got, want)
	}
}

// TestLineNamesCause: every finding line carries its cause's slug, and a
// why answer reconstructed from /proc says its history is unknown, not
// that the namespace predates tracing (no daemon may ever have run).
func TestLineNamesCause(t *testing.T) {
	for _, c := range correlate.Causes() {
		f := &correlate.Finding{Kind: correlate.KindFailure, Cause: c, Fix: "x", Object: correlate.Object{Path: "/srv"}}
		if line := f.Line(); !strings.Contains(line, "[cause: "+c.String()+"]. Fix: x") {
			t.Errorf("%s: line lacks its slug: %s", c, line)
		}
	}
	held := &correlate.Finding{Kind: correlate.KindHeld, Cause: correlate.CauseUnshare, Inferred: true, Object: correlate.Object{Path: "/srv"}}
	leak := &correlate.Finding{Kind: correlate.KindLeak, Cause: correlate.CauseUnshare, Inferred: true, Object: correlate.Object{Path: "/srv"}}
	if line := held.Line(); !strings.Contains(line, "(inferred: no recorded history)") || strings.Contains(line, "predates tracing") {
		t.Errorf("why's inferred line: %s", line)
	}
	if line := leak.Line(); !strings.Contains(line, "(inferred: predates tracing)") {
		t.Errorf("a daemon's inferred line: %s", line)
	}
}

package finding_test

import (
	"strings"
	"testing"

	"github.com/mntleak/mntleak/event"

	"github.com/mntleak/mntleak/finding"
)

// TestReport: why's report has a headline with counts, a line per
// holding namespace and one per process (its pins by kind), the cause and
// the fix; nothing is cut to "+N more".
func TestReport(t *testing.T) {
	pin := func(pid int, comm, kind, path string) finding.PinRef {
		return finding.PinRef{ProcRef: finding.ProcRef{PID: pid, Comm: comm}, MntNS: 70, Pin: kind, Path: path}
	}
	f := &finding.Finding{
		Kind: finding.KindHeld, Cause: finding.CauseInUse, Fix: "stop those processes or move them off /srv, then retry",
		Object: finding.Object{Path: "/srv", Dev: event.MakeDev(7, 0)},
		Holders: []finding.Holder{
			{MntNS: 70, Self: true, Where: "/srv", Propagation: "private", Pins: []finding.PinRef{
				pin(10, "sh", "cwd", "/srv"), pin(11, "tail", "fd", "/srv/a.log"), pin(10, "sh", "fd", "/srv/b"),
				pin(11, "tail", "fd", "/srv/c.log"), pin(12, "sleep", "root", "/srv"),
			}},
			{MntNS: 80, Where: "/host/srv", Propagation: "master:3", Processes: []finding.ProcRef{{PID: 20, Comm: "node_exporter", Unit: "ne.service"}}},
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
	for _, c := range finding.Causes() {
		f := &finding.Finding{Kind: finding.KindFailure, Cause: c, Fix: "x", Object: finding.Object{Path: "/srv"}}
		if line := f.Line(); !strings.Contains(line, "[cause: "+c.String()+"]. Fix: x") {
			t.Errorf("%s: line lacks its slug: %s", c, line)
		}
	}
	held := &finding.Finding{Kind: finding.KindHeld, Cause: finding.CauseUnshare, Inferred: true, Object: finding.Object{Path: "/srv"}}
	leak := &finding.Finding{Kind: finding.KindLeak, Cause: finding.CauseUnshare, Inferred: true, Object: finding.Object{Path: "/srv"}}
	if line := held.Line(); !strings.Contains(line, "(inferred: no recorded history)") || strings.Contains(line, "predates tracing") {
		t.Errorf("why's inferred line: %s", line)
	}
	if line := leak.Line(); !strings.Contains(line, "(inferred: predates tracing)") {
		t.Errorf("a daemon's inferred line: %s", line)
	}
}

package correlate_test

import (
	"strings"
	"testing"
	"time"

	"github.com/mntleak/mntleak/correlate"
	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/finding"
	"github.com/mntleak/mntleak/procfs"
)

// TestRprivateBindOfAUnit: a service of systemd (no container, no pod)
// runs in a namespace of its own with / bound privately at /host, and
// keeps a copy of /dev/loop0's mount that the host no longer has. The
// verdict names the unit and its fix is systemd's: BindPaths (which keeps
// the bind a slave) or make it a slave there, then restart the unit; a
// container's or a pod's fix would send the engineer looking for what is
// not there.
func TestRprivateBindOfAUnit(t *testing.T) {
	const unit = "/system.slice/node-monitor.service"
	proc := &fakeProc{host: hostNS, blocks: map[string]event.Dev{"/dev/loop0": event.MakeDev(7, 0)},
		procs: []procfs.Process{proc(1, "systemd", hostNS, ""), proc(1500, "node-monitor", 70, unit)},
		tables: map[uint32]string{
			hostNS: hostWithoutVol,
			70:     "100 99 254:0 / / rw - ext4 /dev/vda rw\n101 100 254:0 / /host rw - ext4 /dev/vda rw\n102 101 7:0 / /host/srv/vol rw - ext4 /dev/loop0 rw\n",
		}}
	c := correlate.New(proc, correlate.Options{}, func(*finding.Finding) {})
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	f := c.Why(correlate.Target{Path: "/dev/loop0", Dev: event.MakeDev(7, 0)}, time.Date(2026, 11, 21, 13, 0, 0, 0, time.UTC))
	if f == nil {
		t.Fatal("nothing holds /dev/loop0")
	}
	if f.Cause != finding.CauseRprivateBind || !strings.Contains(f.Summary, "(made in the namespace of node-monitor.service)") {
		t.Errorf("want a private bind made in node-monitor.service's namespace:\n%s", f.Line())
	}
	want := "bind / into node-monitor.service with BindPaths=/:/host (systemd keeps it a slave) rather than a private bind, " +
		"or make it a slave there (mount --make-rslave /host in its namespace); restart node-monitor.service to drop the stale copy"
	if f.Fix != want {
		t.Errorf("fix %q, want %q", f.Fix, want)
	}
}

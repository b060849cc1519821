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

// TestRprivateBindOfAUnitOrAPod: a service of systemd (no container, no
// pod), or a pod's container, runs in a namespace of its own with / bound
// privately at /host, and keeps a copy of /dev/loop0's mount that the host
// no longer has. The verdict names what made it, and the fix is that
// tool's: for the unit BindPaths (which keeps the bind a slave) or make it
// a slave there, then restart the unit; for the pod the hostPath volume's
// mountPropagation, naming the pod. Another tool's fix would send the
// engineer looking for what is not there.
func TestRprivateBindOfAUnitOrAPod(t *testing.T) {
	const pod = "0c2f3a1e-7d4b-4c3e-9a1f-2b3c4d5e6f70"
	for _, tc := range []struct {
		name, cgroup, what, fix string
	}{
		{"a unit", "/system.slice/node-monitor.service", "(made in the namespace of node-monitor.service)",
			"bind / into node-monitor.service with BindPaths=/:/host (systemd keeps it a slave) rather than a private bind, " +
				"or make it a slave there (mount --make-rslave /host in its namespace); restart node-monitor.service to drop the stale copy"},
		{"a pod", "/kubepods/burstable/pod" + pod + "/" + cid, "(hostPath / with mountPropagation None, container 5f2c0e1a9b8d)",
			"mountPropagation: HostToContainer (rslave) for the hostPath / volume of pod " + pod + "; restart container 5f2c0e1a9b8d to drop the stale copy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			proc := &fakeProc{host: hostNS, blocks: map[string]event.Dev{"/dev/loop0": event.MakeDev(7, 0)},
				procs: []procfs.Process{proc(1, "systemd", hostNS, ""), proc(1500, "node-monitor", 70, tc.cgroup)},
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
			if f.Cause != finding.CauseRprivateBind || !strings.Contains(f.Summary, tc.what) {
				t.Errorf("want a private bind %s:\n%s", tc.what, f.Line())
			}
			if f.Fix != tc.fix {
				t.Errorf("fix %q, want %q", f.Fix, tc.fix)
			}
		})
	}
}

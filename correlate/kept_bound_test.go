package correlate_test

import (
	"testing"

	"github.com/mntleak/mntleak/procfs"
)

// TestNamespaceWithProcessesAlsoKeptByABind: keeper[20]'s namespace
// mnt:[80] keeps a copy of /dev/loop0 after the node unmounted it, and
// the node has a bind of its nsfs file (after a bind of another live
// namespace's, mnt:[81]): the finding says that the bind keeps mnt:[80]
// beyond its processes, and the fix drops the bind once they are stopped
// (snapd's own tool for a snap's preserved namespace), or the copy alone
// through it.
func TestNamespaceWithProcessesAlsoKeptByABind(t *testing.T) {
	const live, other = 80, 81
	for _, tc := range []struct {
		name, bind, drop string
	}{
		{"a bind of its nsfs file", "/run/mntns/keep", "umount /run/mntns/keep in the host"},
		{"snapd's preserved namespace", "/run/snapd/ns/docker.mnt",
			"snapd's snap-discard-ns docker (/usr/lib/snapd/snap-discard-ns; it unmounts /run/snapd/ns/docker.mnt)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			binds := "9 1 0:4 mnt:[81] /run/mntns/other rw - nsfs nsfs rw\n10 1 0:4 mnt:[80] " + tc.bind + " rw - nsfs nsfs rw\n"
			w := newWorld(t, []procfs.Process{proc(1, "systemd", hostNS, ""), proc(20, "keeper", live, ""), proc(21, "other", other, "")},
				map[uint32]string{hostNS: hostTable + binds,
					live:  copyOfVol,
					other: "120 119 254:0 / / rw - ext4 /dev/vda rw\n"})
			w.proc.tables[hostNS] = hostWithoutVol + binds
			w.send(umountEv(40, "umount", hostNS, "/srv/vol", 0))
			w.findings = nil
			f := mkfsFails(w)
			line := "EBUSY openat /dev/loop0 (7:0) by mkfs.ext4[50]: still mounted in mnt:[80] at /srv/vol (private), kept by the bind of its nsfs file at " +
				tc.bind + " in the host, held by keeper[20] (namespace members; nothing pins the copy); mnt:[80] predates tracing; its oldest process is " +
				"keeper[20] and it keeps its own copy (private root); the bind of its nsfs file at " + tc.bind + " in the host keeps it beyond its " +
				"processes (a runtime confined in a namespace of its own); leak seen at 12:01:00.200 (inferred: predates tracing) [cause: unshare]. " +
				"Fix: restart keeper[20] and the other processes in mnt:[80] to release the copy; the bind keeps the namespace and its copy after them: " +
				tc.drop + " once they are stopped, or nsenter --mount=" + tc.bind + " umount /srv/vol to drop only the copy"
			if f.Line() != line {
				t.Errorf("got line\n%s\nwant\n%s", f.Line(), line)
			}
			evidence := "mnt:[4026531840]: " + tc.bind + " is a bind of mnt:[80]'s nsfs file"
			if got := f.Evidence[len(f.Evidence)-1].What; got != evidence {
				t.Errorf("got last evidence %q, want %q", got, evidence)
			}
		})
	}
}

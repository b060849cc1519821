package correlate_test

import (
	"slices"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/finding"
	"github.com/mntleak/mntleak/procfs"
)

// A shared-propagation finding leads with the namespace the mount was
// made in, mnt:[40] (a Bidirectional container): the process to act on is
// there. Its members are listed with the mounter first while it runs there,
// which words the holder ("the first made the mount") and makes it the
// finding's actor; else the namespace's oldest process is.

// publishedMount: app[700] runs in mnt:[40], whose /rootfs/data is a
// shared bind of the node's /pods/vol; csi-driver[mounter] mounts a tmpfs
// at /rootfs/data/sub there (shown in mnt:[40]'s table when shows), and
// it propagates to the node's /pods/vol/sub, whose rmdir then fails.
// others are mnt:[40]'s processes besides app.
func publishedMount(t *testing.T, mounter int, shows bool, others ...procfs.Process) *finding.Finding {
	t.Helper()
	w := newWorld(t, []procfs.Process{proc(1, "systemd", hostNS, "")}, map[uint32]string{hostNS: hostTable})
	w.send(unshareEv(700, "runc", hostNS, 40))
	w.proc.procs = append(append(w.proc.procs, proc(700, "app", 40, "")), others...)
	w.proc.tables[40] = "90 89 254:0 / / rw shared:1 - ext4 /dev/vda rw\n91 90 254:0 /pods/vol /rootfs/data rw shared:4 - ext4 /dev/vda rw\n"
	if shows {
		w.proc.tables[40] += "92 91 0:70 / /rootfs/data/sub rw shared:5 - tmpfs csi rw\n"
	}
	w.proc.tables[hostNS] = hostTable + "10 1 254:0 /pods/vol /pods/vol rw shared:4 - ext4 /dev/vda rw\n11 10 0:70 / /pods/vol/sub rw shared:5 - tmpfs csi rw\n"
	w.send(mountEv(mounter, "csi-driver", 40, "csi", "/rootfs/data/sub", "tmpfs", 0, 0))
	w.send(failEv(800, "rmdir", hostNS, 84, "/pods/vol/sub", int64(unix.EBUSY)))
	f := w.only()
	if f.Cause != finding.CauseSharedPropagation {
		t.Fatalf("got cause %s, want %s: %s", f.Cause, finding.CauseSharedPropagation, f.Line())
	}
	return f
}

// TestSharedPropagationLeadsWithTheMounter: mnt:[40] is the first holder,
// its members with the mounter first and named as such while it runs
// there, whether or not it is the oldest; a mounter that is gone is named
// by no holder, the oldest member is the actor. When no table read in
// mnt:[40] shows its copy, it is still the first holder, at the path the
// mount event gave, with the members the correlator knows.
func TestSharedPropagationLeadsWithTheMounter(t *testing.T) {
	csi := func(pid int) procfs.Process { return proc(pid, "csi-driver", 40, "") }
	const tail = "; mounted in the caller's own namespace mnt:[4026531840] at /pods/vol/sub (shared:5); "
	for _, tc := range []struct {
		name    string
		mounter int
		shows   bool
		others  []procfs.Process
		holder  string // the first holder's text in the line
		pids    []int  // its processes
		actor   int
		role    string
	}{
		{"the mounter is the oldest member", 699, true, []procfs.Process{csi(699)},
			"still mounted in mnt:[40] at /rootfs/data/sub (shared:5), held by csi-driver[699], app[700] (namespace members, the first made the mount; nothing pins the copy)",
			[]int{699, 700}, 699, finding.RoleMounter},
		{"the mounter is a later member", 701, true, []procfs.Process{csi(701)},
			"still mounted in mnt:[40] at /rootfs/data/sub (shared:5), held by csi-driver[701], app[700] (namespace members, the first made the mount; nothing pins the copy)",
			[]int{701, 700}, 701, finding.RoleMounter},
		{"the mounter is gone", 701, true, nil,
			"still mounted in mnt:[40] at /rootfs/data/sub (shared:5), held by app[700] (namespace members; nothing pins the copy)",
			[]int{700}, 700, finding.RoleMember},
		{"no table shows the copy there", 701, false, nil,
			"still mounted in mnt:[40] at /rootfs/data/sub, held by runc[700] (namespace members; nothing pins the copy)",
			[]int{700}, 700, finding.RoleMember},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := publishedMount(t, tc.mounter, tc.shows, tc.others...)
			if len(f.Holders) != 2 {
				t.Fatalf("got %d holders, want mnt:[40] and the caller's: %s", len(f.Holders), f.Line())
			}
			h := f.Holders[0]
			var pids []int
			for _, p := range h.Processes {
				pids = append(pids, p.PID)
			}
			mounter := 0
			if tc.role == finding.RoleMounter {
				mounter = tc.mounter
			}
			if h.MntNS != 40 || !slices.Equal(pids, tc.pids) || h.Mounter != mounter {
				t.Errorf("got first holder mnt:[%d], processes %v, mounter %d; want mnt:[40], processes %v, mounter %d",
					h.MntNS, pids, h.Mounter, tc.pids, mounter)
			}
			want := "EBUSY rmdir /pods/vol/sub (0:70) by rmdir[800]: " + tc.holder + tail +
				"csi-driver[" + strconv.Itoa(tc.mounter) + "] in mnt:[40] mounted /rootfs/data/sub at 12:01:00.400; it propagated to /pods/vol/sub here " +
				"through the shared peer group (shared:5: Bidirectional / rshared) [cause: shared-propagation]. " +
				"Fix: unmount it in mnt:[40] where it was mounted (nsenter -t " + strconv.Itoa(tc.actor) + " -m umount /rootfs/data/sub; " +
				"the container must clean up its Bidirectional mounts), or use mountPropagation HostToContainer if the container need not publish mounts"
			if f.Line() != want {
				t.Errorf("got line\n%s\nwant\n%s", f.Line(), want)
			}
			if _, a := f.Actor(); a == nil || a.PID != tc.actor || a.Role != tc.role {
				t.Errorf("got actor %+v, want pid %d as %s", a, tc.actor, tc.role)
			}
		})
	}
}

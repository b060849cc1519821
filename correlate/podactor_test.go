package correlate_test

import (
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/finding"
	"github.com/mntleak/mntleak/procfs"
)

const (
	sidecarPod    = "0c2f3a1e-7d4b-4c3e-9a1f-2b3c4d5e6f70"
	sidecarCgroup = "/kubepods/burstable/pod" + sidecarPod + "/" + cid
)

// A Bidirectional sidecar in pod P mounts inside another pod's volume; the
// mount propagates to the node; the sidecar exits and its namespace is
// gone; then the other pod's teardown fails on the copy. The process that
// made the mount is named by its pod (by UID: the cgroup its events
// carried when they arrived), in the summary, the fix and the evidence
// event, though nothing of it is left to read in /proc.
func TestGoneMounterNamedByItsPod(t *testing.T) {
	w := goneMounterWorld(t)
	w.findings = nil
	w.send(failEv(800, "kubelet", hostNS, 84, "/pods/vol/sub", int64(unix.EBUSY)))
	checkGoneMounter(t, w.only())
}

// The same, the failure a minute after the sidecar went (its pod deleted
// long before the other pod's): the namespace's last table, which says
// where its mount lay, outlives the exit grace while its mount into a
// shared peer group is in the ledger's history.
func TestGoneMounterNamedAMinuteLater(t *testing.T) {
	w := goneMounterWorld(t)
	for _, d := range []time.Duration{15 * time.Second, 31 * time.Second, 31 * time.Second} {
		w.now = w.now.Add(d)
		w.send(exitEv(1, "true", hostNS)) // a collection runs: past the exit grace
	}
	w.findings = nil
	w.send(failEv(800, "kubelet", hostNS, 84, "/pods/vol/sub", int64(unix.EBUSY)))
	checkGoneMounter(t, w.only())
}

// The same, with the kernel's mount notes: the namespace's teardown
// detaches each of its mounts, one note each, the root first, and the
// daemon reads those notes before the exits that emptied the namespace
// (the notes are read at once, the events behind the kernel). The
// namespace's last table is what it showed while it lived, not the empty
// one the teardown's notes leave: it says where the mount lay.
func TestGoneMounterNamedAfterItsTeardownNotes(t *testing.T) {
	w := goneMounterWorldNoted(t, true)
	w.now = w.now.Add(15 * time.Second)
	w.send(exitEv(1, "true", hostNS)) // a collection runs: the process list shows mnt:[40] gone
	w.findings = nil
	w.send(failEv(800, "kubelet", hostNS, 84, "/pods/vol/sub", int64(unix.EBUSY)))
	checkGoneMounter(t, w.only())
}

// goneMounterWorld: a process in pod P's cgroup (its events carry it) has
// mounted into a shared peer group from its namespace, and the namespace
// is gone.
func goneMounterWorld(t *testing.T) *world {
	t.Helper()
	return goneMounterWorldNoted(t, false)
}

// goneMounterWorldNoted is goneMounterWorld; with teardown, the kernel's
// notes tell the namespace's teardown before its exits are handled.
func goneMounterWorldNoted(t *testing.T, teardown bool) *world {
	t.Helper()
	w := newWorld(t, []procfs.Process{proc(1, "systemd", hostNS, "/init.scope")}, map[uint32]string{hostNS: hostTable})
	create := unshareEv(700, "runc", hostNS, 40)
	create.Cgroup = sidecarCgroup
	w.send(create)
	w.proc.procs = append(w.proc.procs, proc(700, "pause", 40, sidecarCgroup), proc(701, "mounter", 40, sidecarCgroup))
	w.proc.tables[40] = goneMounterTable
	w.proc.tables[hostNS] = hostTable + "10 1 254:0 /pods/vol /pods/vol rw shared:4 - ext4 /dev/vda rw\n11 10 0:70 / /pods/vol/sub rw shared:5 - tmpfs csi rw\n"
	mnt := mountEv(701, "mounter", 40, "tmpfs", "/rootfs/data/sub", "tmpfs", 0, 0)
	mnt.Cgroup = sidecarCgroup
	w.send(mnt, exitEv(702, "true", 40)) // time passes: the ledger reads the sidecar's table
	// The sidecar's pod is deleted: its processes exit, its namespace goes.
	w.proc.procs = w.proc.procs[:1]
	delete(w.proc.tables, 40)
	if teardown {
		for _, line := range strings.SplitAfter(strings.TrimSuffix(goneMounterTable, "\n"), "\n") {
			w.c.Note(event.MountNote{Time: w.now, NS: 40, Detach: true, PID: 700, Mount: mountLine(t, line)})
		}
	}
	w.send(exitEv(701, "mounter", 40), exitEv(700, "pause", 40))
	return w
}

// goneMounterTable is the sidecar's namespace's table: the node's
// /pods/vol bound shared at /rootfs/data, the sidecar's tmpfs below it.
const goneMounterTable = "90 89 254:0 / / rw shared:1 - ext4 /dev/vda rw\n91 90 254:0 /pods/vol /rootfs/data rw shared:4 - ext4 /dev/vda rw\n" +
	"92 91 0:70 / /rootfs/data/sub rw shared:5 - tmpfs csi rw\n"

func checkGoneMounter(t *testing.T, f *finding.Finding) {
	t.Helper()
	if f.Cause != finding.CauseSharedPropagation {
		t.Fatalf("cause %s, want %s: %s", f.Cause, finding.CauseSharedPropagation, f.Line())
	}
	for _, want := range []string{"mounter[701] (pod " + sidecarPod + ") in mnt:[40] mounted /rootfs/data/sub", "mnt:[40] is gone since"} {
		if !strings.Contains(f.Summary, want) {
			t.Errorf("summary lacks %q:\n%s", want, f.Summary)
		}
	}
	if want := "mnt:[40] (pod " + sidecarPod + "), which mounted it, is gone"; !strings.Contains(f.Fix, want) {
		t.Errorf("fix lacks %q:\n%s", want, f.Fix)
	}
	var mounted *finding.EventRef
	for _, e := range f.Evidence {
		if e.Event != nil && e.Event.Kind == "mount" && e.Event.PID == 701 {
			mounted = e.Event
		}
	}
	if mounted == nil || mounted.Pod != sidecarPod || mounted.Container != cid {
		t.Errorf("the mount's evidence event: %+v, want pod %s container %s", mounted, sidecarPod, cid)
	}

	// With the pod's name (enrich fills the event's workload), the
	// summary and the fix name it.
	mounted.Workload = &finding.Workload{ContainerID: cid, Pod: "sidecar-7d9", Namespace: "team-a", PodUID: sidecarPod, PodContainer: "mounter"}
	f.NamePods()
	for _, s := range []string{f.Summary, f.Fix} {
		if !strings.Contains(s, "(pod team-a/sidecar-7d9)") || strings.Contains(s, sidecarPod) {
			t.Errorf("not named by the pod's name: %s", s)
		}
	}
}

// A namespace's creator is named by its pod from the creation event's
// cgroup, also after it is gone; a recording whose events carry no cgroup
// words it as before.
func TestCreatorNamedByItsPod(t *testing.T) {
	for _, withCgroup := range []bool{true, false} {
		w := newWorld(t, []procfs.Process{proc(1, "systemd", hostNS, "/init.scope")}, map[uint32]string{hostNS: hostTable})
		ev := unshareEv(1400, "backup-agent", hostNS, 60)
		if withCgroup {
			ev.Cgroup = sidecarCgroup
		}
		w.send(ev)
		w.proc.procs = append(w.proc.procs, proc(1400, "backup-agent", 60, ""))
		w.proc.tables[60] = "97 96 254:0 / / rw - ext4 /dev/vda rw\n98 97 7:0 / /srv/vol rw - ext4 /dev/loop0 rw\n"
		w.send(exitEv(1401, "true", 60))
		w.proc.tables[hostNS] = hostWithoutVol
		w.send(umountEv(1000, "umount", hostNS, "/srv/vol", 0))
		f := w.only()
		want := "mnt:[60] was created by backup-agent[1400] (unshare)"
		if withCgroup {
			want = "mnt:[60] was created by backup-agent[1400] (unshare in pod " + sidecarPod + ")"
		}
		if f.Cause != finding.CauseUnshare || !strings.Contains(f.Summary, want) {
			t.Errorf("cgroup %v: %s, want %q in:\n%s", withCgroup, f.Cause, want, f.Summary)
		}
	}
}

// As runc makes a container: its child unshares and exits, the
// container's processes are never seen join; its shell runs mount(8),
// which exits at once. The namespace's table is read through the shell
// (the mount's parent) when its mounts settle, so once the container is
// gone the mount it published is still cited, by its pod.
func TestGoneMounterReadThroughItsShell(t *testing.T) {
	w := newWorld(t, []procfs.Process{proc(1, "systemd", hostNS, "/init.scope")}, map[uint32]string{hostNS: hostTable})
	create := unshareEv(700, "runc:[1:CHILD]", hostNS, 40)
	create.Cgroup = sidecarCgroup
	w.send(create, exitEv(700, "runc:[1:CHILD]", 40))
	w.proc.procs = append(w.proc.procs, proc(702, "sh", 40, sidecarCgroup))
	w.proc.tables[40] = goneMounterTable
	w.proc.tables[hostNS] = hostTable + "10 1 254:0 /pods/vol /pods/vol rw shared:4 - ext4 /dev/vda rw\n11 10 0:70 / /pods/vol/sub rw shared:5 - tmpfs csi rw\n"
	mnt := mountEv(701, "mounter", 40, "tmpfs", "/rootfs/data/sub", "tmpfs", 0, 0)
	mnt.PPID, mnt.Cgroup = 702, sidecarCgroup
	w.send(mnt, exitEv(1, "true", hostNS)) // time passes: the mount settles
	w.proc.procs = w.proc.procs[:1]
	delete(w.proc.tables, 40)
	w.send(exitEv(702, "sh", 40))
	w.findings = nil
	w.send(failEv(800, "kubelet", hostNS, 84, "/pods/vol/sub", int64(unix.EBUSY)))
	checkGoneMounter(t, w.only())
}

// A pod stuck on teardown by another pod's Bidirectional mount inside its
// volume, made before tracing began, with mntleak's own pod on the node:
// the tmpfs is in the node's namespace (in-use), a peer in the mounter's
// namespace (shared:5, Bidirectional) and a slave in mntleak's
// (master:5, HostToContainer: the node's unmount reaches it, and nothing
// it mounts reaches the node). The process the finding names, and so the
// pod its Event relates to, is the peer's member, never the slave's,
// though the slave's namespace comes first (an older inode).
func TestReceivingCopyIsNotTheHolder(t *testing.T) {
	const daemonCgroup = "/kubepods/besteffort/pod9a1b2c3d-0000-4000-8000-000000000001/" + cid
	host := hostTable + "10 1 254:0 /pods/vol /pods/vol rw shared:4 - ext4 /dev/vda rw\n11 10 0:70 / /pods/vol/held rw shared:5 - tmpfs csi rw\n"
	w := newWorld(t, []procfs.Process{proc(1, "systemd", hostNS, "/init.scope"), proc(500, "mntleak", 30, daemonCgroup), proc(600, "sleep", 40, sidecarCgroup)},
		map[uint32]string{
			hostNS: host,
			30: "60 59 254:0 / / rw - ext4 /dev/vda rw\n61 60 254:0 /pods /kubelet/pods rw master:4 - ext4 /dev/vda rw\n" +
				"62 61 0:70 / /kubelet/pods/vol/held rw master:5 - tmpfs csi rw\n",
			40: "70 69 254:0 / / rw - ext4 /dev/vda rw\n71 70 254:0 /pods /kubelet/pods rw shared:4 - ext4 /dev/vda rw\n" +
				"72 71 0:70 / /kubelet/pods/vol/held rw shared:5 - tmpfs csi rw\n",
		})
	w.send(failEv(800, "kubelet", hostNS, 84, "/pods/vol/held", int64(unix.EBUSY)))
	f := w.only()
	if f.Cause != finding.CauseInUse || len(f.Holders) != 3 {
		t.Fatalf("cause %s, %d holders; want %s and 3: %s", f.Cause, len(f.Holders), finding.CauseInUse, f.Line())
	}
	if h, a := f.Actor(); a == nil || a.PID != 600 || h.MntNS != 40 {
		t.Errorf("the finding names %+v in %+v; want sleep[600] in mnt:[40], the mounter's peer: %s", a, h, f.Line())
	}
}

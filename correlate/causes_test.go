package correlate_test

import (
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/correlate"
	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/finding"
	"github.com/mntleak/mntleak/procfs"
)

const cid = "5f2c0e1a9b8d7c6e5f4a3b2c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e"

// TestCauseVerdicts builds each situation from hand-made events and mount tables
// and checks the verdict, its holder and the event it names.
func TestCauseVerdicts(t *testing.T) {
	systemd := proc(1, "systemd", hostNS, "/init.scope")
	tests := []struct {
		name   string
		run    func(w *world)
		cause  finding.Cause
		kind   finding.FindingKind
		holder string // a holder process's comm
		actor  string // an evidence event's comm
		line   []string
	}{
		{
			name: "mountflags-restart",
			run: func(w *world) {
				w.send(unshareEv(90, "(dockerd)", hostNS, 10))
				w.proc.procs = append(w.proc.procs, proc(90, "dockerd", 10, "/system.slice/docker.service"), proc(100, "containerd-shim", 10, "/system.slice/docker.service"))
				w.proc.tables[10] = "40 39 254:0 / / rw master:1 - ext4 /dev/vda rw\n50 40 0:60 / /var/lib/docker/overlay2/x/merged rw - overlay overlay rw\n"
				w.send(mountEv(90, "dockerd", 10, "overlay", "/var/lib/docker/overlay2/x/merged", "overlay", 0, 0))
				w.send(exitEv(90, "dockerd", 10))
				w.proc.procs = []procfs.Process{w.proc.procs[0], proc(100, "containerd-shim", 10, ""), proc(200, "dockerd", 11, "/system.slice/docker.service")}
				w.proc.tables[11] = "60 59 254:0 / / rw master:1 - ext4 /dev/vda rw\n"
				w.send(unshareEv(200, "(dockerd)", hostNS, 11))
				w.send(umountEv(200, "dockerd", 11, "/var/lib/docker/overlay2/x/merged", -int64(unix.EINVAL)))
			},
			cause: finding.CauseMountflagsRestart, kind: finding.KindFailure, holder: "containerd-shim", actor: "dockerd",
			line: []string{"EINVAL umount2", "dockerd was restarted", "MountFlags=slave", "docker.service"},
		},
		{
			name: "private-tmp",
			run: func(w *world) {
				w.send(unshareEv(300, "(ntpd)", hostNS, 20))
				w.proc.procs = append(w.proc.procs, proc(300, "ntpd", 20, "/system.slice/ntpd.service"))
				w.proc.tables[20] = "70 69 254:0 / / rw master:1 - ext4 /dev/vda rw\n" +
					"71 70 254:0 /tmp/systemd-private-0123456789abcdef0123456789abcdef-ntpd.service-AbCdEf/tmp /tmp rw - ext4 /dev/vda rw\n" +
					"72 70 7:0 / /srv/vol rw - ext4 /dev/loop0 rw\n"
				w.send(exitEv(301, "true", 20)) // settles the ledger on ntpd's table
				w.proc.tables[hostNS] = hostWithoutVol
				w.send(umountEv(400, "kubelet", hostNS, "/srv/vol", 0))
			},
			cause: finding.CausePrivateTmp, kind: finding.KindLeak, holder: "ntpd", actor: "ntpd",
			line: []string{"LEAK /srv/vol", "PrivateTmp namespace of ntpd.service", "restart ntpd.service"},
		},
		{
			name:  "rprivate-bind by mount",
			run:   func(w *world) { rprivateWorld(w, false) },
			cause: finding.CauseRprivateBind, kind: finding.KindLeak, holder: "node_exporter", actor: "runc",
			line: []string{"leaked by rbind / → …/merged/host + MS_REC|MS_PRIVATE by runc", "container 5f2c0e1a9b8d", "docker -v / with the default propagation, rprivate",
				"Fix: docker run -v /:/host:rslave"},
		},
		{
			name:  "rprivate-bind by open_tree",
			run:   func(w *world) { rprivateWorld(w, true) },
			cause: finding.CauseRprivateBind, kind: finding.KindLeak, holder: "node_exporter", actor: "runc",
			line: []string{"leaked by rbind / → /host + mount_setattr(MS_PRIVATE) by runc"},
		},
		{
			// containerd unlinks the netns right after the lazy unmount; the
			// kernel detaches the container's private copy before mntleak
			// reads /proc. The table read before the unmount showed it.
			name: "rprivate-bind, copy detached by the unlink",
			run: func(w *world) {
				// The container's init unshared (as runc init) and exec'd.
				w.send(unshareEv(1600, "runc", hostNS, 70))
				w.send(mountEv(1600, "runc", 70, "/", "/run/c/rootfs", "", unix.MS_BIND|unix.MS_REC, 0),
					mountEv(1600, "runc", 70, "", "/run/c/rootfs", "", unix.MS_REC|unix.MS_PRIVATE, 0))
				w.proc.procs = append(w.proc.procs, proc(1600, "sleeping", 70, "/docker/"+cid))
				w.proc.tables[70] = "100 99 254:0 / / rw shared:1 - ext4 /dev/vda rw\n101 100 254:0 / /run/c/rootfs rw - ext4 /dev/vda rw\n" +
					"102 101 7:0 / /run/c/rootfs/srv/vol rw - ext4 /dev/loop0 rw\n103 100 7:0 / /srv/vol rw shared:3 - ext4 /dev/loop0 rw\n"
				w.send(exitEv(1601, "true", hostNS)) // time passes: the ledger settles on this table
				w.proc.tables[70] = "100 99 254:0 / / rw shared:1 - ext4 /dev/vda rw\n101 100 254:0 / /run/c/rootfs rw - ext4 /dev/vda rw\n"
				w.proc.tables[hostNS] = hostWithoutVol
				w.send(umountEv(1000, "containerd", hostNS, "/srv/vol", 0))
			},
			cause: finding.CauseRprivateBind, kind: finding.KindLeak, holder: "sleeping", actor: "runc",
			line: []string{"detached by the kernel since", "RHEL 7 with fs.may_detach_mounts=0 fails that unlinkat with EBUSY"},
		},
		{
			name:  "private-parent",
			run:   func(w *world) { privateParentWorld(w) },
			cause: finding.CausePrivateParent, kind: finding.KindLeak, holder: "sshd", actor: "dockerd",
			line: []string{"dockerd[500] made /var/lib/docker private", "mount --make-rshared /var/lib/docker"},
		},
		{
			name: "shared-propagation",
			run: func(w *world) {
				w.send(unshareEv(700, "runc", hostNS, 40))
				w.proc.procs = append(w.proc.procs, proc(700, "app", 40, "/docker/"+cid))
				w.proc.tables[40] = "90 89 254:0 / / rw shared:1 - ext4 /dev/vda rw\n91 90 254:0 /pods/vol /rootfs/data rw shared:4 - ext4 /dev/vda rw\n92 91 0:70 / /rootfs/data/sub rw shared:5 - tmpfs csi rw\n"
				w.proc.tables[hostNS] = hostTable + "10 1 254:0 /pods/vol /pods/vol rw shared:4 - ext4 /dev/vda rw\n11 10 0:70 / /pods/vol/sub rw shared:5 - tmpfs csi rw\n"
				w.send(mountEv(701, "csi-driver", 40, "csi", "/rootfs/data/sub", "tmpfs", 0, 0))
				w.send(failEv(800, "rmdir", hostNS, 84, "/pods/vol/sub", int64(unix.EBUSY)))
			},
			cause: finding.CauseSharedPropagation, kind: finding.KindFailure, actor: "csi-driver",
			line: []string{"EBUSY rmdir /pods/vol/sub", "csi-driver[701] in mnt:[40] mounted /rootfs/data/sub", "Bidirectional"},
		},
		{
			name: "busy-copy",
			run: func(w *world) {
				w.send(unshareEv(900, "unshare", hostNS, 50))
				w.proc.procs = append(w.proc.procs, proc(900, "worker", 50, ""))
				w.proc.tables[50] = "95 94 254:0 / / rw master:1 - ext4 /dev/vda rw\n96 95 7:0 / /srv/vol rw master:3 - ext4 /dev/loop0 rw\n"
				w.proc.pins = []procfs.Pin{{Process: proc(900, "worker", 50, ""), Kind: procfs.PinCwd, Dev: event.MakeDev(7, 0), Path: "/srv/vol/work"}}
				w.send(umountEv(1000, "umount", hostNS, "/srv/vol", -int64(unix.EBUSY)))
			},
			cause: finding.CauseBusyCopy, kind: finding.KindFailure, holder: "worker",
			line: []string{"EBUSY umount2 /srv/vol", "worker[900] (cwd /srv/vol/work)"},
		},
		{
			name: "in-use",
			run: func(w *world) {
				w.proc.pins = []procfs.Pin{{Process: proc(1100, "app", hostNS, ""), Kind: procfs.PinCwd, Dev: event.MakeDev(7, 0), Path: "/srv/vol"}}
				w.send(umountEv(1000, "umount", hostNS, "/srv/vol", -int64(unix.EBUSY)))
			},
			cause: finding.CauseInUse, kind: finding.KindFailure, holder: "app",
			line: []string{"not a leak: in use in the caller's own namespace by app[1100]"},
		},
		{
			name: "stale-bind",
			run: func(w *world) {
				src := "/pods/x/volumes/cfg/..2020_03_29/extra.ini"
				w.send(mountEv(1200, "kubelet", hostNS, src, "/pods/x/volume-subpaths/cfg/c/0", "", unix.MS_BIND, 0))
				w.proc.tables[hostNS] = hostTable + "12 1 254:0 " + src + "//deleted /pods/x/volume-subpaths/cfg/c/0 rw shared:1 - ext4 /dev/vda rw\n"
				w.send(mountEv(1300, "runc", hostNS, "/pods/x/volume-subpaths/cfg/c/0", "/rootfs/etc/extra.ini", "", unix.MS_BIND, -int64(unix.ENOENT)))
			},
			cause: finding.CauseStaleBind, kind: finding.KindFailure, actor: "kubelet",
			line: []string{"ENOENT mount", "not a leak", "has since been deleted", "PR 89629"},
		},
		{
			name: "unshare",
			run: func(w *world) {
				w.send(unshareEv(1400, "backup-agent", hostNS, 60))
				w.proc.procs = append(w.proc.procs, proc(1400, "backup-agent", 60, "/system.slice/backup.service"))
				w.proc.tables[60] = "97 96 254:0 / / rw - ext4 /dev/vda rw\n98 97 7:0 / /srv/vol rw - ext4 /dev/loop0 rw\n"
				w.send(exitEv(1401, "true", 60))
				w.proc.tables[hostNS] = hostWithoutVol
				w.send(umountEv(1000, "umount", hostNS, "/srv/vol", 0))
			},
			cause: finding.CauseUnshare, kind: finding.KindLeak, holder: "backup-agent", actor: "backup-agent",
			line: []string{"mnt:[60] was created by backup-agent[1400] (unshare)", "private root"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t, []procfs.Process{systemd}, map[uint32]string{hostNS: hostTable})
			tt.run(w)
			f := w.only()
			if f.Cause != tt.cause || f.Kind != tt.kind {
				t.Errorf("got %s %s, want %s %s\n%s", f.Kind, f.Cause, tt.kind, tt.cause, f.Line())
			}
			if tt.holder != "" && !holderNamed(f, tt.holder) {
				t.Errorf("holder %q not named: %s", tt.holder, f.Line())
			}
			for _, h := range f.Holders {
				for _, p := range append(h.Processes, pinProcs(h.Pins)...) {
					if p.Cmdline != p.Comm+" --fake" || p.Exe != "/usr/bin/"+p.Comm {
						t.Errorf("holder %s[%d] without its command: %q %q", p.Comm, p.PID, p.Exe, p.Cmdline)
					}
				}
			}
			if tt.actor != "" && !actorNamed(f, tt.actor) {
				t.Errorf("no evidence event by %q: %s", tt.actor, f.Line())
			}
			for _, s := range tt.line {
				if !strings.Contains(f.Line(), s) {
					t.Errorf("line lacks %q:\n%s", s, f.Line())
				}
			}
		})
	}
}

// privateParentWorld: dockerd makes /var/lib/docker private and mounts a
// container's rootfs below it (then meanwhile's steps, if any); sshd's
// namespace copies it; dockerd unmounts the rootfs, and the copy stays.
func privateParentWorld(w *world, meanwhile ...func(*world)) {
	w.send(mountEv(500, "dockerd", hostNS, "none", "/var/lib/docker", "", unix.MS_PRIVATE, 0))
	w.proc.tables[hostNS] = hostTable + "8 1 254:0 /var/lib/docker /var/lib/docker rw - ext4 /dev/vda rw\n9 8 0:60 / /var/lib/docker/overlay2/x/merged rw - overlay overlay rw\n"
	w.send(mountEv(500, "dockerd", hostNS, "overlay", "/var/lib/docker/overlay2/x/merged", "overlay", 0, 0))
	for _, f := range meanwhile {
		f(w)
	}
	w.send(unshareEv(600, "sshd", hostNS, 30))
	w.proc.procs = append(w.proc.procs, proc(600, "sshd", 30, "/system.slice/ssh.service"))
	w.proc.tables[30] = "80 79 254:0 / / rw master:1 - ext4 /dev/vda rw\n81 80 254:0 /var/lib/docker /var/lib/docker rw - ext4 /dev/vda rw\n82 81 0:60 / /var/lib/docker/overlay2/x/merged rw - overlay overlay rw\n"
	w.send(exitEv(601, "true", 30))
	w.proc.tables[hostNS] = hostTable + "8 1 254:0 /var/lib/docker /var/lib/docker rw - ext4 /dev/vda rw\n"
	w.send(umountEv(500, "dockerd", hostNS, "/var/lib/docker/overlay2/x/merged", 0))
}

// runcRbindOfRoot: runc, in mnt:[70], clones the node's / recursively
// (open_tree OPEN_TREE_CLONE|AT_RECURSIVE, fd 5, mount 77) and attaches the
// tree at /host (move_mount): a recursive bind by the new mount API.
func runcRbindOfRoot() (openTree, moveMount *event.Event) {
	ot := base(event.KindOpenTree, 1500, "runc", 70, 428, 5)
	ot.Path, ot.MntID, ot.Flags = "/", 77, unix.OPEN_TREE_CLONE|unix.AT_RECURSIVE
	ot.FlagNames = event.FlagNames(event.KindOpenTree, ot.Flags)
	mm := base(event.KindMoveMount, 1500, "runc", 70, 429, 0)
	mm.FromFD, mm.ToPath, mm.MntID = 5, "/host", 77
	return ot, mm
}

// rprivateWorld: a monitoring container binds the node's / at /host with
// no propagation (by mount(2), or by open_tree+move_mount+mount_setattr),
// then the node unmounts /srv/vol (after meanwhile's steps, if any).
func rprivateWorld(w *world, newAPI bool, meanwhile ...func(*world)) {
	w.send(unshareEv(1500, "runc", hostNS, 70))
	if newAPI {
		ot, mm := runcRbindOfRoot()
		sa := base(event.KindMountSetattr, 1500, "runc", 70, 442, 0)
		sa.Path, sa.Propagation, sa.PropagationName = "/host", unix.MS_PRIVATE, "MS_PRIVATE"
		w.send(ot, mm, sa)
	} else {
		root := "/var/lib/docker/overlay2/" + cid + "/merged"
		w.send(mountEv(1500, "runc", 70, "/", root+"/host", "", unix.MS_BIND|unix.MS_REC, 0),
			mountEv(1500, "runc", 70, "", root+"/host", "", unix.MS_REC|unix.MS_PRIVATE, 0))
	}
	w.proc.procs = append(w.proc.procs, proc(1600, "node_exporter", 70, "/docker/"+cid))
	w.proc.tables[70] = "100 99 0:90 / / rw - overlay overlay rw\n101 100 254:0 / /host rw - ext4 /dev/vda rw\n102 101 7:0 / /host/srv/vol rw - ext4 /dev/loop0 rw\n"
	w.send(exitEv(1500, "runc", 70))
	for _, f := range meanwhile { // before the unmount
		f(w)
	}
	w.proc.tables[hostNS] = hostWithoutVol
	w.send(umountEv(1000, "umount", hostNS, "/srv/vol", 0))
}

// TestNegatives: situations that must not produce a finding, or exactly one.
func TestNegatives(t *testing.T) {
	systemd := proc(1, "systemd", hostNS, "")
	t.Run("umount of something mounted nowhere", func(t *testing.T) {
		w := newWorld(t, []procfs.Process{systemd}, map[uint32]string{hostNS: hostTable})
		w.send(umountEv(10, "dockerd", hostNS, "/var/lib/docker/overlay2/gone/merged", -int64(unix.EINVAL)))
		if len(w.findings) != 0 {
			t.Errorf("finding for an EINVAL nobody holds: %s", w.findings[0].Line())
		}
	})
	t.Run("EBUSY that is not about a mount", func(t *testing.T) {
		w := newWorld(t, []procfs.Process{systemd}, map[uint32]string{hostNS: hostTable})
		ev := failEv(10, "agetty", hostNS, 16, "/dev/tty1", int64(unix.EBUSY))
		w.send(ev)
		if len(w.findings) != 0 {
			t.Errorf("finding for a tty ioctl: %s", w.findings[0].Line())
		}
	})
	t.Run("a slave copy follows the unmount", func(t *testing.T) {
		w := newWorld(t, []procfs.Process{systemd}, map[uint32]string{hostNS: hostTable})
		w.send(unshareEv(20, "app", hostNS, 80))
		w.proc.procs = append(w.proc.procs, proc(20, "app", 80, ""))
		w.proc.tables[80] = "110 109 254:0 / / rw master:1 - ext4 /dev/vda rw\n111 110 7:0 / /srv/vol rw master:3 - ext4 /dev/loop0 rw\n"
		w.send(exitEv(21, "true", 80))
		// The kernel propagates the unmount into the slave.
		w.proc.tables[80] = "110 109 254:0 / / rw master:1 - ext4 /dev/vda rw\n"
		w.proc.tables[hostNS] = hostWithoutVol
		w.send(umountEv(30, "umount", hostNS, "/srv/vol", 0))
		if len(w.findings) != 0 {
			t.Errorf("leak reported for a copy that followed: %s", w.findings[0].Line())
		}
	})
	t.Run("retries fold into one incident", func(t *testing.T) {
		w := newWorld(t, []procfs.Process{systemd}, map[uint32]string{hostNS: hostTable})
		w.proc.pins = []procfs.Pin{{Process: proc(40, "app", hostNS, ""), Kind: procfs.PinCwd, Dev: event.MakeDev(7, 0), Path: "/srv/vol"}}
		for i := 0; i < 50; i++ {
			w.send(umountEv(50, "containerd", hostNS, "/srv/vol", -int64(unix.EBUSY)))
		}
		if len(w.findings) != 1 {
			t.Fatalf("%d findings for 50 retries within the window, want 1", len(w.findings))
		}
		w.now = w.now.Add(time.Minute)
		w.send(umountEv(50, "containerd", hostNS, "/srv/vol", -int64(unix.EBUSY)))
		if len(w.findings) != 2 {
			t.Errorf("%d findings after the window, want 2", len(w.findings))
		}
	})
	t.Run("runc drops the old root after pivot_root", func(t *testing.T) {
		w := newWorld(t, []procfs.Process{systemd}, map[uint32]string{hostNS: hostTable})
		w.send(unshareEv(70, "runc:[1:CHILD]", hostNS, 90))
		w.proc.procs = append(w.proc.procs, proc(70, "app", 90, ""))
		w.proc.tables[90] = "120 119 254:0 / / rw master:1 - ext4 /dev/vda rw\n"
		w.send(exitEv(71, "true", 90))
		w.send(umountEv(70, "runc:[2:INIT]", 90, "/", 0))
		if len(w.findings) != 0 {
			t.Errorf("leak reported for the old root: %s", w.findings[0].Line())
		}
	})
	t.Run("ENOENT mount from a live source", func(t *testing.T) {
		w := newWorld(t, []procfs.Process{systemd}, map[uint32]string{hostNS: hostTable})
		w.send(mountEv(60, "mount", hostNS, "/srv/vol", "/no/such/dir", "", unix.MS_BIND, -int64(unix.ENOENT)))
		if len(w.findings) != 0 {
			t.Errorf("stale-bind for a typo: %s", w.findings[0].Line())
		}
	})
}

// TestRememberedAcrossRestart: the runtime's bind happened before mntleak
// (re)started; the persistent lineage lets the verdict cite it, not infer.
func TestRememberedAcrossRestart(t *testing.T) {
	systemd := proc(1, "systemd", hostNS, "")
	first := newWorld(t, []procfs.Process{systemd}, map[uint32]string{hostNS: hostTable})
	var remembered []*event.Event
	sent := func(evs ...*event.Event) {
		first.send(evs...)
		remembered = append(remembered, evs...)
	}
	root := "/var/lib/docker/overlay2/" + cid + "/merged"
	sent(unshareEv(1500, "runc", hostNS, 70),
		mountEv(1500, "runc", 70, "/", root+"/host", "", unix.MS_BIND|unix.MS_REC, 0),
		mountEv(1500, "runc", 70, "", root+"/host", "", unix.MS_REC|unix.MS_PRIVATE, 0))

	// mntleak restarts: a new correlator, the remembered lineage, a snapshot.
	w := &world{t: t, now: first.now, proc: first.proc}
	w.proc.procs = append(w.proc.procs, proc(1500, "node_exporter", 70, "/docker/"+cid))
	w.proc.tables[70] = "100 99 0:90 / / rw - overlay overlay rw\n101 100 254:0 / /host rw - ext4 /dev/vda rw\n102 101 7:0 / /host/srv/vol rw - ext4 /dev/loop0 rw\n"
	w.c = correlate.New(w.proc, correlate.Options{LeakSettle: -1}, func(f *finding.Finding) { w.findings = append(w.findings, f) })
	for _, ev := range remembered {
		w.c.Remember(ev)
	}
	if err := w.c.Start(); err != nil {
		t.Fatal(err)
	}
	w.send(exitEv(1501, "true", hostNS))
	w.proc.tables[hostNS] = hostWithoutVol
	w.send(umountEv(1000, "umount", hostNS, "/srv/vol", 0))
	f := w.only()
	if f.Cause != finding.CauseRprivateBind || f.Inferred || !actorNamed(f, "runc") {
		t.Errorf("after a restart: %s inferred=%v: %s", f.Cause, f.Inferred, f.Line())
	}
}

func pinProcs(pins []finding.PinRef) []finding.ProcRef {
	var out []finding.ProcRef
	for _, p := range pins {
		out = append(out, p.ProcRef)
	}
	return out
}

// TestInodeReusedAfterRestart: mntleak was down while a namespace died and
// the kernel gave its inode to a new one. The new namespace does not
// inherit the remembered creator: a finding about it says it is inferred.
// A namespace the history does know (its creator is still in it) keeps it.
// With the birth id the kernel gives a namespace (recorded with its creation
// event), the id decides: a new namespace whose process is older than the
// history (an old shell that exec'd unshare) is still a new namespace, and
// one whose processes all turned over is still the same.
func TestInodeReusedAfterRestart(t *testing.T) {
	old := procfs.Process{PID: 5, PPID: 1, StartTime: 1, Comm: "oldshell", MntNS: 80}
	tests := []struct {
		name     string
		inside   procfs.Process // the process in mnt:[80] after the restart
		id, now  uint64         // the birth id recorded, and the one mnt:[80] has now (0: none)
		creator  string         // the creator the finding names
		inferred bool
	}{
		{"the inode went to a new namespace", procfs.Process{PID: 900, PPID: 1, StartTime: 1 << 62, Comm: "newcomer", MntNS: 80}, 0, 0, "newcomer[900]", true},
		{"the same namespace (control)", proc(20, "keeper", 80, ""), 0, 0, "keeper[20]", false},
		{"a new namespace, by its id, its process older than the history", old, 4378, 4379, "oldshell[5]", true},
		{"without ids (kernels before 6.9) the start-time heuristic cannot tell: it keeps the history", old, 0, 0, "keeper[20]", false},
		{"the same namespace by its id, its processes all new (control)", procfs.Process{PID: 900, PPID: 1, StartTime: 1 << 62, Comm: "newcomer", MntNS: 80}, 4378, 4378, "keeper[20]", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			first := newWorld(t, []procfs.Process{proc(1, "systemd", hostNS, "")}, map[uint32]string{hostNS: hostTable})
			created := unshareEv(20, "keeper", hostNS, 80)
			created.NewMntNSID = tt.id
			first.send(created)
			w := &world{t: t, now: first.now.Add(time.Hour), proc: first.proc}
			w.proc.procs = append(w.proc.procs, tt.inside)
			if tt.now != 0 {
				w.proc.nsids = map[uint32]uint64{80: tt.now}
			}
			w.proc.tables[80] = "110 109 254:0 / / rw - ext4 /dev/vda rw\n111 110 7:0 / /srv/vol rw - ext4 /dev/loop0 rw\n"
			w.c = correlate.New(w.proc, correlate.Options{LeakSettle: -1}, func(f *finding.Finding) { w.findings = append(w.findings, f) })
			w.c.Remember(created)
			if err := w.c.Start(); err != nil {
				t.Fatal(err)
			}
			w.send(exitEv(1501, "true", hostNS))
			w.proc.tables[hostNS] = hostWithoutVol
			w.send(umountEv(1000, "umount", hostNS, "/srv/vol", 0))
			f := w.only()
			if f.Inferred != tt.inferred || !strings.Contains(f.Line(), tt.creator) || (tt.inferred && strings.Contains(f.Line(), "keeper")) {
				t.Errorf("inferred=%v: %s", f.Inferred, f.Line())
			}
		})
	}
}

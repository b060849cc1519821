package correlate_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/correlate"
	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/finding"
	"github.com/mntleak/mntleak/procfs"
)

// fuseHostTable is the node with a FUSE filesystem at /mnt/fuse (its
// anonymous device 0:77, as the kernel gives a FUSE superblock).
const fuseHostTable = hostTable + "4 1 0:77 / /mnt/fuse rw,nosuid,nodev,relatime shared:4 - fuse.mntleaktest mntleaktest rw,user_id=0,group_id=0\n"

// fuseMountEv is the mount(2) a FUSE server makes itself (root, or
// go-fuse's DirectMount): the fd of /dev/fuse it serves is in the data.
func fuseMountEv(pid, ppid int, comm string) *event.Event {
	ev := mountEv(pid, comm, hostNS, "mntleaktest", "/mnt/fuse", "fuse.mntleaktest", unix.MS_NOSUID|unix.MS_NODEV, 0)
	ev.PPID = uint32(ppid)
	ev.Data = "fd=7,rootmode=40000,user_id=0,group_id=0"
	return ev
}

func killedEv(pid int, comm string, status int32) *event.Event {
	ev := exitEv(pid, comm, hostNS)
	ev.ExitCode = status
	return ev
}

// citesEvent reports whether the finding cites an event of kind by pid.
func citesEvent(f *finding.Finding, kind string, pid int) bool {
	for _, e := range f.Evidence {
		if e.Event != nil && e.Event.Kind == kind && int(e.Event.PID) == pid {
			return true
		}
	}
	return false
}

// TestTeardownOfADeadFuseMount: a FUSE server killed without unmounting leaves its
// mount (every access ENOTCONN); the teardown that then fails on it names
// the mount, the server that served it, when it died, and the lazy
// unmount, in the namespace that has it.
func TestTeardownOfADeadFuseMount(t *testing.T) {
	type tc struct {
		name   string
		mount  []*event.Event // the mount and what follows it, up to the server's death
		daemon int
		pins   []procfs.Pin
		fail   *event.Event
		fix    []string
	}
	rmdir := failEv(800, "kubelet", hostNS, 84, "/mnt/fuse", int64(unix.EBUSY))
	cases := []tc{
		{name: "rmdir of its mountpoint", mount: []*event.Event{fuseMountEv(700, 1, "mntleaktest"), killedEv(700, "mntleaktest", int32(unix.SIGKILL))},
			daemon: 700, fail: rmdir, fix: []string{"fusermount3 -uz /mnt/fuse", "umount -l /mnt/fuse"}},
		{name: "mounted by fusermount3 for it", daemon: 700, fail: rmdir, fix: []string{"fusermount3 -uz /mnt/fuse"},
			mount: []*event.Event{fuseMountEv(710, 700, "fusermount3"), killedEv(710, "fusermount3", 0), killedEv(700, "sshfs", int32(unix.SIGSEGV))}},
		{name: "an unmount a shell in it keeps busy", daemon: 700,
			mount: []*event.Event{fuseMountEv(700, 1, "mntleaktest"), killedEv(700, "mntleaktest", int32(unix.SIGKILL))},
			pins:  []procfs.Pin{{Process: proc(900, "bash", hostNS, ""), Kind: procfs.PinCwd, Path: "/mnt/fuse", Dev: event.MakeDev(0, 77)}},
			fail:  umountEv(800, "umount", hostNS, "/mnt/fuse", -int64(unix.EBUSY)), fix: []string{"bash[900]", "umount -l /mnt/fuse"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t, []procfs.Process{proc(1, "systemd", hostNS, "")}, map[uint32]string{hostNS: hostTable})
			w.proc.tables[hostNS] = fuseHostTable
			w.send(c.mount...)
			w.proc.pins = c.pins
			fail := *c.fail
			w.send(&fail)
			f := w.only()
			t.Log(f.Line())
			if f.Cause != finding.CauseDeadFuseDaemon {
				t.Fatalf("cause %s, want %s: %s", f.Cause, finding.CauseDeadFuseDaemon, f.Line())
			}
			if !citesEvent(f, "mount", int(c.mount[0].PID)) || !citesEvent(f, "exit", c.daemon) {
				t.Errorf("the mount and the server's exit are not both cited: %+v", f.Evidence)
			}
			if !strings.Contains(f.Summary, "["+strconv.Itoa(c.daemon)+"]") || !strings.Contains(f.Summary, "fuse.mntleaktest") {
				t.Errorf("the summary does not name the server [%d] and the FUSE mount: %s", c.daemon, f.Summary)
			}
			for _, want := range c.fix {
				if !strings.Contains(f.Fix, want) {
					t.Errorf("the fix lacks %q: %s", want, f.Fix)
				}
			}
		})
	}
}

// TestDeadFuseMountCopyElsewhere: the node unmounted the FUSE mount but a
// private namespace made before kept a copy; the server is dead, so the
// copy is unusable there too: the leak names it and the lazy unmount is
// run in that namespace (nsenter into its process).
func TestDeadFuseMountCopyElsewhere(t *testing.T) {
	const agentNS = 70
	w := newWorld(t, []procfs.Process{proc(1, "systemd", hostNS, "")}, map[uint32]string{hostNS: fuseHostTable})
	w.send(fuseMountEv(700, 1, "mntleaktest"))
	w.proc.procs = append(w.proc.procs, proc(950, "agent", agentNS, ""))
	w.proc.tables[agentNS] = "50 49 254:0 / / rw - ext4 /dev/vda rw\n51 50 0:77 / /mnt/fuse rw,nosuid,nodev - fuse.mntleaktest mntleaktest rw,user_id=0,group_id=0\n"
	w.send(unshareEv(950, "agent", hostNS, agentNS), killedEv(700, "mntleaktest", int32(unix.SIGKILL)))
	w.proc.tables[hostNS] = hostTable
	w.send(umountEv(800, "umount", hostNS, "/mnt/fuse", 0))
	w.c.Flush()
	f := w.only()
	t.Log(f.Line())
	if f.Cause != finding.CauseDeadFuseDaemon || f.Kind != finding.KindLeak {
		t.Fatalf("%s %s, want a leak of cause %s: %s", f.Kind, f.Cause, finding.CauseDeadFuseDaemon, f.Line())
	}
	if !strings.Contains(f.Fix, "nsenter -t 950 -m umount -l /mnt/fuse") || !strings.Contains(f.Fix, "mntleak release") {
		t.Errorf("the fix does not unmount it in mnt:[%d]: %s", agentNS, f.Fix)
	}
	if !citesEvent(f, "exit", 700) {
		t.Errorf("the server's exit is not cited: %+v", f.Evidence)
	}
}

// TestDeadFuseMountAskedWhy: `mntleak why` on the dead mount says so.
func TestDeadFuseMountAskedWhy(t *testing.T) {
	w := newWorld(t, []procfs.Process{proc(1, "systemd", hostNS, "")}, map[uint32]string{hostNS: fuseHostTable})
	w.send(fuseMountEv(700, 1, "mntleaktest"), killedEv(700, "mntleaktest", int32(unix.SIGKILL)))
	f := w.c.Why(correlate.Target{Path: "/mnt/fuse", Dev: event.MakeDev(0, 77)}, w.now.Add(time.Second))
	if f == nil || f.Cause != finding.CauseDeadFuseDaemon {
		t.Fatalf("why /mnt/fuse: %v", f)
	}
}

// TestFuseDaemonNotBlamed: a server that still runs, or that exited with
// status 0 (libfuse's background mode: the process that mounted forks the
// server and exits), is not said to have died; the teardown's usual cause
// stands.
func TestFuseDaemonNotBlamed(t *testing.T) {
	for _, after := range [][]*event.Event{nil, {killedEv(700, "mntleaktest", 0)}} {
		w := newWorld(t, []procfs.Process{proc(1, "systemd", hostNS, "")}, map[uint32]string{hostNS: fuseHostTable})
		w.send(fuseMountEv(700, 1, "mntleaktest"))
		w.send(after...)
		w.send(failEv(800, "kubelet", hostNS, 84, "/mnt/fuse", int64(unix.EBUSY)))
		if f := w.only(); f.Cause == finding.CauseDeadFuseDaemon {
			t.Errorf("after %d exits: %s", len(after), f.Line())
		}
	}
}

// TestDeadFuseMountRemembered: `mntleak why` reads the persistent lineage
// of the daemon, which keeps the FUSE mount and its server's exit (the
// engine hands it back through FUSEServerExits), and names the dead server
// from it.
func TestDeadFuseMountRemembered(t *testing.T) {
	at := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	mount, exit := fuseMountEv(700, 1, "mntleaktest"), killedEv(700, "mntleaktest", int32(unix.SIGKILL))
	mount.Time, exit.Time = at, at.Add(time.Second)
	daemon := correlate.New(&fakeProc{host: hostNS, procs: []procfs.Process{proc(1, "systemd", hostNS, "")},
		tables: map[uint32]string{hostNS: fuseHostTable}}, correlate.Options{}, func(*finding.Finding) {})
	var kept []*event.Event
	daemon.FUSEServerExits(func(ev *event.Event) { kept = append(kept, ev) })
	if err := daemon.Start(); err != nil {
		t.Fatal(err)
	}
	daemon.Handle(mount)
	if len(kept) != 0 {
		t.Errorf("a mount is kept as a server's exit: %v", kept)
	}
	daemon.Handle(exit)
	if len(kept) != 1 || kept[0] != exit {
		t.Fatalf("the FUSE server's exit is not kept alone: %v", kept)
	}
	daemon.Handle(exitEv(701, "sh", hostNS))
	if len(kept) != 1 {
		t.Errorf("another process's exit is kept: %v", kept[1:])
	}
	c := correlate.New(&fakeProc{host: hostNS, procs: []procfs.Process{proc(1, "systemd", hostNS, "")},
		tables: map[uint32]string{hostNS: fuseHostTable}}, correlate.Options{}, func(*finding.Finding) {})
	c.Remember(mount)
	c.Remember(exit)
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	f := c.Why(correlate.Target{Path: "/mnt/fuse"}, at.Add(time.Minute))
	if f == nil || f.Cause != finding.CauseDeadFuseDaemon || !citesEvent(f, "exit", 700) {
		t.Fatalf("why /mnt/fuse from the remembered lineage: %v", f)
	}
	t.Log(f.Line())
}

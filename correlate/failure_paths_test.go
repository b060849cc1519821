package correlate_test

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/finding"
	"github.com/mntleak/mntleak/procfs"
)

// heldCopyWorld: a private namespace mnt:[80] (made before tracing, its
// process keeper[20]) keeps a copy of /dev/loop0's /srv/vol, which the
// node unmounted; procs are the node's processes besides systemd.
func heldCopyWorld(t *testing.T, procs ...procfs.Process) *world {
	t.Helper()
	ps := append([]procfs.Process{proc(1, "systemd", hostNS, ""), proc(20, "keeper", 80, "")}, procs...)
	w := newWorld(t, ps, map[uint32]string{
		hostNS: hostTable, // read at the start, with /srv/vol
		80:     "110 109 254:0 / / rw - ext4 /dev/vda rw\n111 110 7:0 / /srv/vol rw - ext4 /dev/loop0 rw\n",
	})
	w.proc.tables[hostNS] = hostWithoutVol
	return w
}

// TestFailureCallNamesTheCallersContainer: a failure's call names the
// container of the process that made it, not that of another process of
// its namespace.
func TestFailureCallNamesTheCallersContainer(t *testing.T) {
	const other = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	w := heldCopyWorld(t, proc(50, "mkfs.ext4", hostNS, "/docker/"+cid), proc(60, "agent", hostNS, "/docker/"+other))
	w.send(failEv(50, "mkfs.ext4", hostNS, 257, "/dev/loop0", int64(unix.EBUSY)))
	f := w.only()
	if f.Kind != finding.KindFailure || f.Call.Container != cid {
		t.Errorf("call of container %q, want %q (the caller's):\n%s", f.Call.Container, cid, f.Line())
	}
}

// TestSecondUnmountWhenTheFirstIsTheFirstEvent: the first event traced is
// the node's unmount of /srv/vol, which leaves a copy in mnt:[80]; the
// runtime unmounts it again, and the kernel answers EINVAL: a harmless
// double unmount, no failure, however early the first unmount came.
func TestSecondUnmountWhenTheFirstIsTheFirstEvent(t *testing.T) {
	w := heldCopyWorld(t)
	w.send(umountEv(40, "umount", hostNS, "/srv/vol", 0))
	w.send(umountEv(40, "umount", hostNS, "/srv/vol", -int64(unix.EINVAL)))
	if f := w.only(); f.Kind != finding.KindLeak {
		t.Errorf("want the leak only, got: %s", f.Line())
	}
}

// TestRetryFoldedWhateverCameBetween: a failure retried within the retry
// window (30 s) is one incident, one finding, also when thousands of other
// failures came between (a node where every call fails: the correlator
// forgets only failures older than the window); one retried exactly at
// the window's end is still the same incident, one a moment later a new
// one.
func TestRetryFoldedWhateverCameBetween(t *testing.T) {
	for _, tc := range []struct {
		name    string
		others  int           // distinct failures between the two
		after   time.Duration // the retry, after the first
		wantNew bool
	}{
		{"many others between", 4100, 10 * time.Second, false},
		{"at the window's end", 0, 30 * time.Second, false},
		{"after the window", 0, 30*time.Second + time.Millisecond, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := heldCopyWorld(t, proc(50, "mkfs.ext4", hostNS, ""))
			first := w.now
			fail := func(path string, at time.Time) {
				ev := failEv(50, "mkfs.ext4", hostNS, 257, path, int64(unix.EBUSY))
				ev.Time, ev.MonoNS = at, uint64(at.UnixNano())
				w.c.Handle(ev)
			}
			fail("/dev/loop0", first)
			for i := range tc.others {
				fail("/srv/none/"+strconv.Itoa(i), first.Add(time.Duration(i+1)*time.Microsecond))
			}
			fail("/dev/loop0", first.Add(tc.after))
			want := 1
			if tc.wantNew {
				want = 2
			}
			if len(w.findings) != want {
				for _, f := range w.findings {
					t.Log(f.Line())
				}
				t.Errorf("%d findings, want %d", len(w.findings), want)
			}
		})
	}
}

// TestUnmountBusyInTheCallersOwnNamespace: umount fails with EBUSY because
// a shell of the caller's own namespace works in the mount: in use there,
// not a leak and no detached copy (the mount is in the caller's table);
// the shell is the process named.
func TestUnmountBusyInTheCallersOwnNamespace(t *testing.T) {
	shell := proc(60, "bash", hostNS, "")
	w := newWorld(t, []procfs.Process{proc(1, "systemd", hostNS, ""), shell}, map[uint32]string{hostNS: hostTable})
	w.proc.pins = []procfs.Pin{{Process: shell, Kind: procfs.PinCwd, Dev: event.MakeDev(7, 0), Path: "/srv/vol"}}
	w.send(umountEv(40, "umount", hostNS, "/srv/vol", -int64(unix.EBUSY)))
	f := w.only()
	if f.Cause != finding.CauseInUse || len(f.Holders) != 1 || !f.Holders[0].Self {
		t.Errorf("want in use in the caller's own namespace:\n%s", f.Line())
	}
	if _, a := f.Actor(); a == nil || a.PID != 60 || !strings.Contains(f.Summary, "in use in the caller's own namespace by bash[60] (cwd /srv/vol)") {
		t.Errorf("actor %+v, want bash[60] in use there:\n%s", a, f.Line())
	}
}

// TestMoveMountOfAStaleBindFails: move_mount of a source that is a bind of
// a deleted file fails with ENOENT (the new mount API's way to bind a
// subPath): one stale-bind failure naming the deleted file, as for
// mount(2).
func TestMoveMountOfAStaleBindFails(t *testing.T) {
	src := "/pods/x/volume-subpaths/cfg/c/0"
	w := newWorld(t, []procfs.Process{proc(1, "systemd", hostNS, "")},
		map[uint32]string{hostNS: hostTable + "12 1 254:0 /pods/x/volumes/cfg/extra.ini//deleted " + src + " rw shared:1 - ext4 /dev/vda rw\n"})
	ev := base(event.KindMoveMount, 1, "systemd", hostNS, 429, -int64(unix.ENOENT))
	ev.FromPath, ev.ToPath = src, "/srv/etc/extra.ini"
	w.send(ev)
	f := w.only()
	if f.Kind != finding.KindFailure || f.Cause != finding.CauseStaleBind || !strings.Contains(f.Summary, "is a bind of /pods/x/volumes/cfg/extra.ini, which has since been deleted") {
		t.Errorf("want a stale-bind failure naming the deleted file:\n%s", f.Line())
	}
}

// TestPinnerStartedAfterTheFailureIsNotNamed: a process that started after
// a failure did not cause it and is not named; one whose start time
// (rounded down to a 10 ms tick) is within a tick of the failure is.
func TestPinnerStartedAfterTheFailureIsNotNamed(t *testing.T) {
	early := procfs.Process{PID: 61, PPID: 1, StartTime: 501, Comm: "early", MntNS: hostNS} // 5.01 s: the failure's tick
	late := procfs.Process{PID: 62, PPID: 1, StartTime: 502, Comm: "late", MntNS: hostNS}   // 5.02 s: after it
	w := heldCopyWorld(t, early, late)
	fd := 3
	for _, p := range []procfs.Process{early, late} {
		w.proc.pins = append(w.proc.pins, procfs.Pin{Process: p, Kind: procfs.PinFD, Dev: event.MakeDev(7, 0), Path: "/file", FD: &fd})
	}
	ev := failEv(50, "mkfs.ext4", hostNS, 257, "/dev/loop0", int64(unix.EBUSY))
	ev.Time, ev.MonoNS = w.now.Add(time.Second), uint64(5*time.Second)
	w.c.Handle(ev)
	f := w.only()
	line := f.Line()
	if !strings.Contains(line, "early[61]") || strings.Contains(line, "late[62]") {
		t.Errorf("want early[61] named and late[62] not:\n%s", line)
	}
}

// TestFailureThroughALinkOfAnExitedCaller: a call fails on a path through
// a symbolic link (/srv/link → /srv/vol) and its process has exited by
// the time the correlator reads /proc: a process of its namespace resolves
// the link, and the failure is about /dev/loop0's mount at /srv/vol.
func TestFailureThroughALinkOfAnExitedCaller(t *testing.T) {
	w := newWorld(t, []procfs.Process{proc(1, "systemd", hostNS, ""), proc(20, "keeper", 80, "")},
		map[uint32]string{hostNS: hostTable, 80: "110 109 254:0 / / rw - ext4 /dev/vda rw\n111 110 7:0 / /srv/vol rw - ext4 /dev/loop0 rw\n"})
	w.proc.links = map[string]string{"/srv/link": "/srv/vol"}
	w.send(failEv(50, "rmdir", hostNS, 84, "/srv/link", int64(unix.EBUSY)))
	f := w.only()
	if f.Object.Dev != event.MakeDev(7, 0) {
		t.Errorf("the failure's object is %s, want /dev/loop0's mount at /srv/vol (7:0):\n%s", f.Object.Dev, f.Line())
	}
}

// TestUnmountBusyWithNoProcessFound: umount2 fails with EBUSY on a mount of
// the caller's own namespace and no process pins it (a kernel user: a loop
// device, swap): the fix is to find what uses it, not "unmount it first"
// (what just failed), and the finding says no process was found.
func TestUnmountBusyWithNoProcessFound(t *testing.T) {
	w := newWorld(t, []procfs.Process{proc(1, "systemd", hostNS, "")}, map[uint32]string{hostNS: hostTable})
	w.send(umountEv(40, "umount", hostNS, "/srv/vol", -int64(unix.EBUSY)))
	f := w.only()
	if f.Cause != finding.CauseInUse || f.Fix != "find what uses it (fuser -vm /srv/vol), or unmount lazily" || len(f.Missing) == 0 {
		t.Errorf("want in use, what uses it to be found, no process found:\n%s", f.Line())
	}
}

// TestFailureReadsTheCommandsOfEightProcesses: a finding reads the command
// lines of at most eight processes from /proc (a bound on its reads on a
// node whose holder namespaces have thousands): of the nine members of
// mnt:[80], the eight oldest are named with what they run, the ninth by
// its name alone.
func TestFailureReadsTheCommandsOfEightProcesses(t *testing.T) {
	var workers []procfs.Process
	for pid := 21; pid <= 28; pid++ {
		workers = append(workers, proc(pid, "worker", 80, ""))
	}
	w := heldCopyWorld(t, workers...)
	f := mkfsFails(w)
	i := slices.IndexFunc(f.Holders, func(h finding.Holder) bool { return h.MntNS == 80 })
	if i < 0 || len(f.Holders[i].Processes) != 9 {
		t.Fatalf("want mnt:[80] held by its nine members: %s", f.Line())
	}
	for j, p := range f.Holders[i].Processes {
		want := p.Comm + " --fake"
		if j == 8 {
			want = ""
		}
		if p.PID != 20+j || p.Cmdline != want {
			t.Errorf("member %d is %s with command line %q, want pid %d with %q", j, p.Name(), p.Cmdline, 20+j, want)
		}
	}
}

// TestRmdirOfAnOverlayLayerNamesTheOverlay: rmdir of a container's upper
// directory fails with EBUSY; no table has a mount there, but mnt:[80]
// has the overlay that uses it as its upperdir mounted: the failure names
// that overlay as the holder.
func TestRmdirOfAnOverlayLayerNamesTheOverlay(t *testing.T) {
	const layer = "/var/lib/docker/overlay2/x"
	w := newWorld(t, []procfs.Process{proc(1, "systemd", hostNS, ""), proc(20, "app", 80, "")}, map[uint32]string{
		hostNS: hostTable,
		80: "110 109 254:0 / / rw - ext4 /dev/vda rw\n111 110 0:60 / /merged rw - overlay overlay rw,lowerdir=" + layer +
			"/lower,upperdir=" + layer + "/diff,workdir=" + layer + "/work\n",
	})
	w.send(failEv(50, "dockerd", hostNS, 84 /* rmdir on x86_64 */, layer+"/diff", int64(unix.EBUSY)))
	f := w.only()
	if got, want := strings.Join(holdersOf(f), ", "), "mnt:[80] /merged"; f.Kind != finding.KindFailure || got != want {
		t.Errorf("%s holders %q, want a failure held by %q:\n%s", f.Kind, got, want, f.Line())
	}
}

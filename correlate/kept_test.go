package correlate_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/correlate"
	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/finding"
	"github.com/mntleak/mntleak/procfs"
)

// A mount namespace no process runs in, kept alive by a bind of its nsfs
// file (unshare --mount=FILE), still holds its copy: the failure names the
// namespace, the bind that keeps it and the fix, never silence; and no
// process is named as its holder.
func TestNamespaceKeptByABind(t *testing.T) {
	const kept = 95
	tests := []struct {
		name    string
		seen    bool   // the unshare that made it was traced
		cgroup  string // the unshare's
		creator string // then the finding names its creator
	}{
		{"made before tracing", false, "", ""},
		{"made while traced; its creator exited", true, "", "unshare[20] at"},
		{"made by a unit while traced; its creator exited", true, "/system.slice/pinns.service", "unshare[20] (pinns.service) at"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			host := hostTable + "9 1 0:4 mnt:[95] /run/mntns/keep rw - nsfs nsfs rw\n"
			w := newWorld(t, []procfs.Process{proc(1, "systemd", hostNS, "")}, map[uint32]string{hostNS: host})
			w.proc.tables[kept] = "110 109 254:0 / / rw - ext4 /dev/vda rw\n111 110 7:0 / /srv/vol rw - ext4 /dev/loop0 rw\n"
			w.proc.nsfiles = map[string]uint32{"/run/mntns/keep": kept}
			if tt.seen {
				unshare := unshareEv(20, "unshare", hostNS, kept)
				unshare.Cgroup = tt.cgroup
				w.send(unshare)
				w.send(exitEv(20, "unshare", kept))
			}
			w.proc.tables[hostNS] = strings.Replace(host, "3 1 7:0 / /srv/vol rw shared:3 - ext4 /dev/loop0 rw\n", "", 1)
			w.send(umountEv(40, "umount", hostNS, "/srv/vol", 0))
			w.findings = nil
			w.send(failEv(50, "mkfs.ext4", hostNS, 257, "/dev/loop0", int64(unix.EBUSY)))
			f := w.only()
			line := f.Line()
			t.Log(line)
			for _, want := range []string{"still mounted in mnt:[95] at /srv/vol", "kept by the bind of its nsfs file at /run/mntns/keep in the host",
				"Fix: umount /run/mntns/keep in the host", tt.creator} {
				if !strings.Contains(line, want) {
					t.Errorf("line lacks %q:\n%s", want, line)
				}
			}
			if _, a := f.Actor(); a != nil {
				t.Errorf("%s[%d] named as the holder of a namespace no process runs in", a.Comm, a.PID)
			}
			if f.Holders[0].KeptBy == "" {
				t.Errorf("holder without kept_by: %+v", f.Holders[0])
			}
		})
	}
}

// A mount namespace no process runs in, kept alive only by a process that
// holds its nsfs file open (exec 3</proc/PID/ns/mnt; a runtime's pinned
// namespace fd), is reported with that pin: the process and its fd are
// what to act on (holder_pid), never silence.
func TestNamespaceKeptByAnOpenFile(t *testing.T) {
	const kept = 95
	for _, seen := range []bool{false, true} {
		t.Run(map[bool]string{false: "made before tracing", true: "made while traced; its creator exited"}[seen], func(t *testing.T) {
			w := newWorld(t, []procfs.Process{proc(1, "systemd", hostNS, ""), proc(60, "pinner", hostNS, "")}, map[uint32]string{hostNS: hostTable})
			w.proc.tables[kept] = "110 109 254:0 / / rw - ext4 /dev/vda rw\n111 110 7:0 / /srv/vol rw - ext4 /dev/loop0 rw\n"
			w.proc.nsfiles = map[string]uint32{"/proc/60/fd/3": kept}
			w.proc.nsfds = []procfs.NSFD{{Process: proc(60, "pinner", hostNS, ""), FD: 3, NS: kept}}
			if seen {
				w.send(unshareEv(20, "unshare", hostNS, kept))
				w.send(exitEv(20, "unshare", kept))
			}
			w.proc.tables[hostNS] = hostWithoutVol
			w.send(umountEv(40, "umount", hostNS, "/srv/vol", 0))
			w.findings = nil
			w.send(failEv(50, "mkfs.ext4", hostNS, 257, "/dev/loop0", int64(unix.EBUSY)))
			f := w.only()
			line := f.Line()
			for _, want := range []string{"still mounted in mnt:[95] at /srv/vol", "kept by fd 3 of pinner[60] in the host",
				"Fix: have pinner[60] close fd 3"} {
				if !strings.Contains(line, want) {
					t.Errorf("line lacks %q:\n%s", want, line)
				}
			}
			h, a := f.Actor()
			if a == nil || a.PID != 60 || a.Role != finding.RolePinner || a.Pin != finding.PinNSFD || h.MntNS != kept {
				t.Errorf("actor %+v of %+v, want pinner[60] (nsfd) of mnt:[95]:\n%s", a, h, line)
			}
		})
	}
}

// A namespace kept by a bind, whose creation was traced, is entered later
// by another process through the bind (nsenter --mount=FILE, ip netns
// exec, a second mntleak reading it) that then leaves: it is the same
// namespace, so the next failure still names its recorded creation, not
// "predates tracing".
func TestKeptNamespaceEnteredLater(t *testing.T) {
	const kept = 95
	for _, tc := range []struct {
		name  string
		scans bool // the lineage retired it (no process in it) before the entry
	}{
		{"entered before the lineage retired it", false},
		{"entered after the lineage retired it", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			host := hostTable + "9 1 0:4 mnt:[95] /run/mntns/keep rw - nsfs nsfs rw\n"
			w := newWorldOpts(t, correlate.Options{ScanInterval: time.Millisecond},
				[]procfs.Process{proc(1, "systemd", hostNS, "")}, map[uint32]string{hostNS: host})
			w.proc.blocks["/dev/loop1"] = event.MakeDev(7, 1)
			w.proc.tables[kept] = "110 109 254:0 / / rw - ext4 /dev/vda rw\n111 110 7:0 / /srv/vol rw - ext4 /dev/loop0 rw\n" +
				"112 110 7:1 / /srv/vol2 rw - ext4 /dev/loop1 rw\n"
			w.proc.nsfiles = map[string]uint32{"/run/mntns/keep": kept}
			w.send(unshareEv(20, "unshare", hostNS, kept))
			w.send(exitEv(20, "unshare", kept))
			w.proc.tables[hostNS] = hostTable + "9 1 0:4 mnt:[95] /run/mntns/keep rw - nsfs nsfs rw\n"
			if tc.scans {
				w.send(failEv(30, "mkfs.ext4", hostNS, 257, "/dev/loop0", int64(unix.EBUSY)))
			}
			setns := base(event.KindSetns, 40, "nsenter", kept, 308, 0)
			setns.MntNSBefore, setns.MntNSAfter = hostNS, kept
			w.send(setns, exitEv(40, "nsenter", kept))
			w.findings = nil
			w.send(failEv(50, "mkfs.ext4", hostNS, 257, "/dev/loop1", int64(unix.EBUSY)))
			f := w.only()
			line := f.Line()
			t.Log(line)
			if f.Cause != finding.CauseUnshare || strings.Contains(line, "predates tracing") || !strings.Contains(line, "unshare[20]") {
				t.Errorf("cause %q: want the recorded unshare by unshare[20]:\n%s", f.Cause, line)
			}
		})
	}
}

// A namespace kept by a bind for longer than the lineage keeps dead ones
// (collections pass meanwhile) still names its recorded creation; it is
// read through the bind, fresh, never reported as a table that could not
// be read nor explained by a table read earlier (its copy of the first
// device went away since).
func TestKeptNamespaceOutlivesRetention(t *testing.T) {
	host := hostTable + "9 1 0:4 mnt:[95] /run/mntns/keep rw - nsfs nsfs rw\n"
	w := newWorld(t, []procfs.Process{proc(1, "systemd", hostNS, "")}, map[uint32]string{hostNS: host})
	w.proc.blocks["/dev/loop1"] = event.MakeDev(7, 1)
	w.proc.tables[95] = "110 109 254:0 / / rw - ext4 /dev/vda rw\n111 110 7:0 / /srv/vol rw - ext4 /dev/loop0 rw\n" +
		"112 110 7:1 / /srv/vol2 rw - ext4 /dev/loop1 rw\n"
	w.proc.nsfiles = map[string]uint32{"/run/mntns/keep": 95}
	w.send(unshareEv(20, "unshare", hostNS, 95))
	w.send(exitEv(20, "unshare", 95))
	w.proc.tables[hostNS] = strings.Replace(host, "3 1 7:0 / /srv/vol rw shared:3 - ext4 /dev/loop0 rw\n", "", 1)
	w.send(umountEv(25, "umount", hostNS, "/srv/vol", 0))
	w.send(failEv(30, "mkfs.ext4", hostNS, 257, "/dev/loop0", int64(unix.EBUSY)))
	// The kept namespace's copy of loop0 goes; an hour of other events
	// passes, a collection every 30 s.
	w.proc.tables[95] = "110 109 254:0 / / rw - ext4 /dev/vda rw\n112 110 7:1 / /srv/vol2 rw - ext4 /dev/loop1 rw\n"
	for i := 0; i < 120; i++ {
		w.now = w.now.Add(30 * time.Second)
		w.send(exitEv(1000+i, "true", hostNS))
	}
	for _, dev := range []string{"/dev/loop0", "/dev/loop1"} {
		w.findings = nil
		w.send(failEv(50, "mkfs.ext4", hostNS, 257, dev, int64(unix.EBUSY)))
		if dev == "/dev/loop0" {
			if len(w.findings) != 0 {
				t.Errorf("a failure on %s explained by a copy that is gone:\n%s", dev, w.findings[0].Line())
			}
			continue
		}
		f := w.only()
		line := f.Line()
		t.Log(line)
		if f.Cause != finding.CauseUnshare || !strings.Contains(line, "created by unshare[20]") || len(f.Missing) != 0 ||
			!strings.Contains(line, "kept by the bind of its nsfs file at /run/mntns/keep") {
			t.Errorf("cause %q, missing %q: want the bind, the recorded unshare by unshare[20], nothing missing:\n%s", f.Cause, f.Missing, line)
		}
	}
}

// TestKeptNamespaceNotJoinedByOneJustGone: a namespace whose last process
// left a moment before a failure is searched only when no live one
// explains it (its mounts went with it); a namespace no process runs in,
// kept by a bind of its nsfs file, is a live one. `why` and the failure
// name the kept namespace alone, not also the one just gone, whose table had a
// mount of the same device number before it died (deploy's TestImage, CI
// full run: another package's scenario had had its loop device, now the
// test's, mounted in a namespace that ended a second before).
func TestKeptNamespaceNotJoinedByOneJustGone(t *testing.T) {
	const kept, gone = 95, 96
	host := hostTable + "9 1 0:4 mnt:[95] /run/mntns/keep rw - nsfs nsfs rw\n"
	w := newWorld(t, []procfs.Process{proc(1, "systemd", hostNS, "")}, map[uint32]string{hostNS: host})
	w.proc.tables[kept] = "110 109 254:0 / / rw - ext4 /dev/vda rw\n111 110 7:0 / /srv/vol rw - ext4 /dev/loop0 rw\n"
	w.proc.nsfiles = map[string]uint32{"/run/mntns/keep": kept}
	w.send(unshareEv(30, "scenario", hostNS, gone))
	w.proc.procs = append(w.proc.procs, proc(30, "scenario", gone, ""))
	w.proc.tables[gone] = "120 119 254:0 / / rw - ext4 /dev/vda rw\n121 120 7:0 / /other/vol rw - ext4 /dev/loop0 rw\n"
	w.send(exitEv(91, "true", hostNS)) // the tables are read
	w.proc.procs = slices.DeleteFunc(w.proc.procs, func(p procfs.Process) bool { return p.PID == 30 })
	delete(w.proc.tables, gone)
	w.send(exitEv(30, "scenario", gone))
	w.proc.tables[hostNS] = strings.Replace(host, "3 1 7:0 / /srv/vol rw shared:3 - ext4 /dev/loop0 rw\n", "", 1)
	w.send(umountEv(40, "umount", hostNS, "/srv/vol", 0))
	const want = "mnt:[95] /srv/vol kept by the bind of its nsfs file at /run/mntns/keep in the host"
	w.findings = nil
	w.send(failEv(50, "mkfs.ext4", hostNS, 257, "/dev/loop0", int64(unix.EBUSY)))
	f := w.only()
	if got := strings.Join(holdersOf(f), ", "); got != want {
		t.Errorf("holders %q, want the kept namespace alone:\n%s", got, f.Line())
	}
	// mntleak why, asked at once (the failure read the tables again): the
	// same answer.
	if f := w.c.Why(correlate.Target{Path: "/dev/loop0", Dev: event.MakeDev(7, 0)}, w.now.Add(time.Millisecond)); f == nil {
		t.Error("why: nothing holds /dev/loop0")
	} else if got := strings.Join(holdersOf(f), ", "); got != want {
		t.Errorf("why: holders %q, want the kept namespace alone:\n%s", got, f.Line())
	}
}

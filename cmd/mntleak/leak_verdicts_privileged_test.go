package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mntleak/mntleak/e2e/testkit/findinglog"
	"github.com/mntleak/mntleak/e2e/testkit/privtest"
	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/finding"
)

// settledFindings lets the daemon's pending leaks settle, stops it (a stop
// flushes what still waits) and returns every finding it logged whose
// object or one of whose holders lies at or under one of paths: the
// findings a test's own objects made (the daemon traces the whole node).
func settledFindings(t *testing.T, d *privtest.Daemon, paths ...string) []findinglog.Line {
	t.Helper()
	privtest.AfterLeakSettle(t)
	d.Signal(t, syscall.SIGTERM, privtest.ExitLimit())
	mine := func(p string) bool {
		for _, want := range paths {
			if p == want || strings.HasPrefix(p, want+"/") {
				return true
			}
		}
		return false
	}
	var out []findinglog.Line
	for _, l := range findinglog.Findings(d.Logs.All()) {
		hit := mine(l.Detail.Object.Path)
		for _, h := range l.Detail.Holders {
			hit = hit || mine(h.Where)
		}
		if hit {
			out = append(out, l)
		}
		if err := l.Detail.Check(); err != nil {
			t.Errorf("the daemon logged an unfit finding: %v: %s", err, l.Msg)
		}
	}
	return out
}

// mountedAt is the kernel's own answer, read from a process's
// mountinfo: the filesystem type mounted at path in its namespace ("" if
// none).
func mountedAt(t *testing.T, pid int, path string) string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		for i := range f {
			if f[i] == "-" && i+1 < len(f) && len(f) > 4 && f[4] == path {
				return f[i+1]
			}
		}
	}
	return ""
}

// TestLeakKeptAtAnotherPath: the holder bound the volume (a Memory
// emptyDir's tmpfs, an ext4 volume) to a directory of its own before the
// teardown; the node unmounts the volume and removes its directory, which
// detaches the holder's copy at that path, but the filesystem stays
// mounted, readable, at the holder's own path. That is the leak, named by
// that path and the holder (it was dropped with the detached copy).
func TestLeakKeptAtAnotherPath(t *testing.T) {
	privtest.Require(t)
	privtest.RequireCommands(t, "unshare", "nsenter", "mount", "umount", "rmdir", "losetup", "mkfs.ext4")
	for _, fstype := range []string{"tmpfs", "ext4"} {
		t.Run(fstype, func(t *testing.T) {
			base := t.TempDir()
			vol := privtest.Mkdir(t, filepath.Join(base, "pods", "7d3c2a41-5b1e-4f0a-9c6d-2e8f1a4b7c90", "volumes", "kubernetes.io~empty-dir", "cache"))
			own := privtest.Mkdir(t, filepath.Join(base, "holder", "cache"))
			node := privtest.StartNode(t)
			if fstype == "tmpfs" {
				node.Run(t, "mount", "-t", "tmpfs", "-o", "size=1m", "mntleak-kept-elsewhere", vol)
			} else {
				node.Run(t, "mount", privtest.LoopDevice(t, 16), vol)
			}
			d := privtest.StartDaemon(t, nil, "--state-dir", filepath.Join(base, "state"))
			h := node.StartHolder(t, "private", "mount --bind "+vol+" "+own)
			node.Run(t, "umount", vol)
			node.Run(t, "rmdir", vol) // detaches the holder's copy at vol (6.x)
			if got, at := mountedAt(t, h.PID, own), mountedAt(t, h.PID, vol); got != fstype || at != "" {
				t.Fatalf("kernel: holder's namespace has %q at %s and %q at %s; want %s and nothing", got, own, at, vol, fstype)
			}
			found := settledFindings(t, d, base)
			if len(found) != 1 {
				t.Fatalf("%d findings on %s, want 1 leak:\n%s", len(found), base, lines(found))
			}
			l := found[0]
			f := l.Detail
			if f.Kind != finding.KindLeak || f.Object.Path != vol || f.Cause != finding.CauseUnshare ||
				l.HolderPID != h.PID || l.HolderRole != "member" || l.HolderMntNS != h.MntNS ||
				len(f.Holders) != 1 || f.Holders[0].MntNS != h.MntNS || f.Holders[0].Where != own {
				t.Errorf("want a leak on %s [cause: unshare] held by sleep[%d] (member) in mnt:[%d] at %s; got:\n%s",
					vol, h.PID, h.MntNS, own, lines(found))
			}
		})
	}
}

// TestDetachedNetnsKeptByAnOpenFile: `ip netns add` binds a network
// namespace's nsfs file under /run/netns; a process in a private mount
// namespace, copied while the bind existed, opens it through its copy and
// keeps the fd. `ip netns delete` succeeds and the kernel detaches the
// copy, which the fd keeps, with the network namespace. That is a leak
// naming the process, its fd and the namespace (none was reported).
func TestDetachedNetnsKeptByAnOpenFile(t *testing.T) {
	privtest.Require(t)
	privtest.RequireCommands(t, "ip", "unshare", "nsenter")
	base := t.TempDir()
	name := fmt.Sprintf("mntleak-fdkept-%d", os.Getpid())
	file := "/run/netns/" + name
	node := privtest.StartNode(t)
	d := privtest.StartDaemon(t, nil, "--state-dir", filepath.Join(base, "state"))
	node.Run(t, "ip", "netns", "add", name)
	t.Cleanup(func() { _ = os.Remove(file) })
	var st unix.Stat_t
	if err := unix.Stat("/proc/"+strconv.Itoa(node.PID)+"/root"+file, &st); err != nil {
		t.Fatal(err)
	}
	netns := "net:[" + strconv.FormatUint(st.Ino, 10) + "]"
	h := node.StartHolder(t, "private", "exec 7<"+file)
	copyID := mountIDAt(t, h.PID, file)
	// The holder keeps the file open a while before the teardown, as a real
	// one does: the daemon, which runs behind the kernel, reads its table
	// meanwhile (a namespace whose table it first reads after the copy was
	// detached shows no copy to have leaked; under -race on a loaded machine
	// that happened in 2 runs of 4 when the delete came at once).
	time.Sleep(time.Second)
	node.Run(t, "ip", "netns", "delete", name)
	// The kernel's own answer: the copy is gone from the holder's table,
	// and fd 7 is the network namespace, open through that copy.
	fd := "/proc/" + strconv.Itoa(h.PID) + "/fd/7"
	var fst unix.Stat_t
	if err := unix.Stat(fd, &fst); err != nil || fst.Ino != st.Ino || mountedAt(t, h.PID, file) != "" || fdMountID(t, h.PID, 7) != copyID {
		t.Fatalf("kernel: %s is inode %d (%v), want %d; mnt_id %d, want the copy's %d; mounted at %s: %q",
			fd, fst.Ino, err, st.Ino, fdMountID(t, h.PID, 7), copyID, file, mountedAt(t, h.PID, file))
	}
	found := settledFindings(t, d, file)
	if len(found) != 1 {
		for _, l := range d.Logs.All() {
			if strings.Contains(l, name) && !strings.Contains(l, `"logger":"correlate"`) {
				t.Log(l)
			}
		}
		t.Fatalf("%d findings on %s, want 1 leak:\n%s", len(found), file, lines(found))
	}
	l := found[0]
	f := l.Detail
	pinned := len(f.Holders) == 1 && len(f.Holders[0].Pins) == 1 && f.Holders[0].Pins[0].PID == h.PID &&
		f.Holders[0].Pins[0].Pin == "fd" && f.Holders[0].Pins[0].Path == netns &&
		f.Holders[0].Pins[0].FD != nil && *f.Holders[0].Pins[0].FD == 7
	if f.Kind != finding.KindLeak || f.Object.Path != file || l.HolderPID != h.PID || l.HolderRole != "pinner" ||
		l.HolderMntNS != h.MntNS || !pinned || !strings.Contains(l.Msg, "sleep["+strconv.Itoa(h.PID)+"] fd 7 "+netns) {
		t.Errorf("want a leak on %s held by sleep[%d] fd 7 %s (pinner) in mnt:[%d]; got:\n%s", file, h.PID, netns, h.MntNS, lines(found))
	}
}

// mountIDAt is the id of the mount at path in a process's namespace, from
// its mountinfo (0 if none).
func mountIDAt(t *testing.T, pid int, path string) int {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 4 && f[4] == path {
			id, _ := strconv.Atoi(f[0])
			return id
		}
	}
	return 0
}

// fdMountID is the mount a process's descriptor is open through (fdinfo).
func fdMountID(t *testing.T, pid, fd int) int {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/fdinfo/" + strconv.Itoa(fd))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "mnt_id:"); ok {
			id, _ := strconv.Atoi(strings.TrimSpace(v))
			return id
		}
	}
	return 0
}

func lines(ls []findinglog.Line) string {
	var b strings.Builder
	for _, l := range ls {
		b.WriteString(l.Msg + "\n")
	}
	return b.String()
}

package daemon

import (
	"bufio"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/correlate"
	"github.com/mntleak/mntleak/e2e/testkit/privtest"
	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/finding"
	"github.com/mntleak/mntleak/procfs"
)

// countingProc counts the mount tables read through the holder.
type countingProc struct {
	procfs.Host
	holder int
	reads  *atomic.Int32
}

func (p countingProc) Mountinfo(pid int) (uint32, []*procfs.Mount, error) {
	if pid == p.holder {
		p.reads.Add(1)
	}
	return p.Host.Mountinfo(pid)
}

// TestMountNotesSpareTheReRead: with the kernel's mount notes read for a
// holder's namespace, a mount, an unmount, an rmdir elsewhere that reaches
// the holder's table (a mount propagated into it, a copy detached by the
// node's rmdir, an unmount propagated out of the node) leaves the table
// true without reading /proc/PID/mountinfo again; a remount and a
// propagation change, which the kernel does not tell
// (TestWhichCallsTheKernelNotes), make it stale, and it is read again.
// Without the notes (--mount-notes=false) every change a tracer event
// tells makes it stale and it is read again, as before. After every step
// the table a failure relies on (TableOf) must equal the holder's
// /proc/PID/mountinfo (the oracle), and the reads are counted (the
// table is read once as the notes begin: correlate.Note).
func TestMountNotesSpareTheReRead(t *testing.T) {
	for _, notes := range []bool{true, false} {
		t.Run("notes="+strconv.FormatBool(notes), func(t *testing.T) { mountNotesSpare(t, notes) })
	}
}

func mountNotesSpare(t *testing.T, notes bool) {
	privtest.Require(t)
	privtest.RequireCommands(t, "unshare", "nsenter", "sh", "sleep", "mount", "umount")
	base := filepath.Join(t.TempDir(), "base")
	node := exec.Command("unshare", "-m", "--propagation", "private", "sh", "-c",
		"mkdir -p "+base+" && mount -t tmpfs mnbase "+base+" && mount --make-shared "+base+" && mkdir "+base+"/a "+base+"/vol && "+
			"mount -t tmpfs mnvol "+base+"/vol && mount --make-private "+base+"/vol && "+
			"{ unshare -m --propagation unchanged sh -c 'echo $$; exec sleep 600' & } && exec sleep 600")
	out, err := node.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := node.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	holder, herr := strconv.Atoi(strings.TrimSpace(line))
	t.Cleanup(func() {
		if herr == nil {
			_ = unix.Kill(holder, unix.SIGKILL)
		}
		_ = node.Process.Kill()
		_ = node.Wait()
	})
	if herr != nil {
		t.Fatalf("holder's pid: %q", line)
	}
	hpid, npid := strconv.Itoa(holder), strconv.Itoa(node.Process.Pid)
	hns, nns := privtest.MountNS(t, hpid), privtest.MountNS(t, npid)

	var reads atomic.Int32
	corr := correlate.New(countingProc{holder: holder, reads: &reads}, correlate.Options{}, func(*finding.Finding) {})
	if err := corr.Start(); err != nil {
		t.Fatal(err)
	}
	var mw *mountWatch
	if notes {
		mw = watchOnly(t, corr, hns)
	}
	at := time.Now()
	step := func(what string, ev *event.Event, wantRead bool) {
		t.Helper()
		before := reads.Load() // a read as the notes begin counts too (correlate.Note)
		if mw != nil {
			got, err := mw.drain(time.Now)
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range got {
				corr.Note(n)
			}
		}
		if ev != nil {
			at = at.Add(time.Millisecond)
			ev.Time, ev.PID, ev.Comm = at, uint32(node.Process.Pid), "mount"
			corr.Handle(ev)
		}
		tb, err := corr.TableOf(hns)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if read := reads.Load() > before; read != wantRead {
			t.Errorf("%s: the holder's table read again: %v, want %v", what, read, wantRead)
		}
		if got, want := rows(tb.Mounts), rows(procfs.MountsOf(procMounts(t, hpid))); !slices.Equal(got, want) {
			t.Errorf("%s: the ledger's table of the holder\n%s\nthe holder's /proc mountinfo\n%s", what, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
	in := func(pid string, args ...string) {
		t.Helper()
		if out, err := exec.Command("nsenter", append([]string{"--mount=/proc/" + pid + "/ns/mnt"}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	mount := func(ns uint32, target string, flags uint64) *event.Event {
		return &event.Event{Kind: event.KindMount, MntNS: ns, Target: target, Flags: flags, FSType: "tmpfs", Source: "mn"}
	}
	step("the first read, once the notes began", nil, notes)
	in(npid, "mount", "-t", "tmpfs", "mnprop", base+"/a")
	step("a mount propagated into the holder", mount(nns, base+"/a", 0), !notes)
	in(hpid, "mount", "-t", "tmpfs", "mnown", base+"/a")
	step("a mount in the holder", mount(hns, base+"/a", 0), !notes)
	in(hpid, "umount", base+"/a")
	step("an unmount in the holder", &event.Event{Kind: event.KindUmount, MntNS: hns, Target: base + "/a"}, !notes)
	in(npid, "umount", base+"/a")
	step("an unmount in the node, propagated", &event.Event{Kind: event.KindUmount, MntNS: nns, Target: base + "/a"}, !notes)
	if notes {
		in(npid, "sh", "-c", "umount "+base+"/vol && rmdir "+base+"/vol")
		step("the node's rmdir detaching the holder's copy (no tracer event)", nil, false)
	}
	in(npid, "mount", "-o", "remount,ro", base)
	step("a remount ro in the node (the superblock the holder's copy shares)", mount(nns, base, unix.MS_REMOUNT|unix.MS_RDONLY), true)
	in(hpid, "mount", "--make-private", base)
	step("a make-private in the holder", mount(hns, base, unix.MS_PRIVATE), true)
}

// rows is what a table must agree with /proc on, one line a mount, sorted.
func rows(ms []*procfs.Mount) []string {
	var out []string
	for _, m := range ms {
		out = append(out, strings.Join([]string{strconv.Itoa(m.ID), strconv.Itoa(m.Parent),
			strconv.Itoa(m.Major) + ":" + strconv.Itoa(m.Minor), m.Root, m.Mountpoint, m.Options, m.Optional, m.FSType, m.VFSOptions}, " "))
	}
	slices.Sort(out)
	return out
}

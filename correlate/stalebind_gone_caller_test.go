package correlate_test

import (
	"fmt"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/correlate"
	"github.com/mntleak/mntleak/finding"
	"github.com/mntleak/mntleak/procfs"
)

// exitedBeforeItsTable is /proc where one process is in the process list
// but has exited by the time its mount table is read.
type exitedBeforeItsTable struct {
	*fakeProc
	pid int
}

func (p exitedBeforeItsTable) Mountinfo(pid int) (uint32, []*procfs.Mount, error) {
	if pid == p.pid {
		return 0, nil, fmt.Errorf("open /proc/%d/mountinfo: no such process", pid)
	}
	return p.fakeProc.Mountinfo(pid)
}

// TestStaleBindCallerExitedWhileRead: runc's init fails to bind a subPath
// whose file was deleted (ENOENT) and exits while its table is read: the
// process list still had it, its mountinfo is gone. The node, the
// namespace it was copied from, answers with the stale bind; that the
// caller's table could not be read is no gap then, and the finding says
// nothing is missing (TestStaleBindSeenFromTheParent: the caller gone
// before the list was read).
func TestStaleBindCallerExitedWhileRead(t *testing.T) {
	const containerNS = 90
	src := "/pods/x/volume-subpaths/cfg/c/0"
	bind := func(root string) string {
		return hostTable + "12 1 254:0 " + root + " " + src + " rw shared:1 - ext4 /dev/vda rw\n"
	}
	w := newWorld(t, []procfs.Process{proc(1, "systemd", hostNS, ""), proc(1300, "runc", containerNS, "")},
		map[uint32]string{hostNS: bind("/pods/x/volumes/cfg/extra.ini")})
	w.c = correlate.New(exitedBeforeItsTable{w.proc, 1300}, correlate.Options{LeakSettle: -1}, func(f *finding.Finding) { w.findings = append(w.findings, f) })
	if err := w.c.Start(); err != nil {
		t.Fatal(err)
	}
	w.send(unshareEv(1300, "runc", hostNS, containerNS))
	w.proc.tables[hostNS] = bind("/pods/x/volumes/cfg/extra.ini//deleted") // the ConfigMap was updated
	w.send(mountEv(1300, "runc", containerNS, src, "/rootfs/etc/extra.ini", "", unix.MS_BIND, -int64(unix.ENOENT)))
	f := w.only()
	if f.Kind != finding.KindFailure || f.Cause != finding.CauseStaleBind || len(f.Holders) != 1 || f.Holders[0].MntNS != hostNS {
		t.Fatalf("want one stale-bind failure held in the node's namespace: %s", f.Line())
	}
	if len(f.Missing) != 0 {
		t.Errorf("the parent answered, yet the finding says it misses %q: %s", f.Missing, f.Line())
	}
}

// countingReads is /proc counting the mount tables read through a process.
type countingReads struct {
	*fakeProc
	reads *int
}

func (p countingReads) Mountinfo(pid int) (uint32, []*procfs.Mount, error) {
	*p.reads++
	return p.fakeProc.Mountinfo(pid)
}

// TestStaleBindMissingSourceReadsNothing: runc fails with ENOENT many times
// per container for mount sources that do not exist (no mount at the
// source in any table). A table read after the last mount change that has
// no mount at the source cannot hold a stale bind there: such a failure
// reads no mount table again, and explains nothing.
func TestStaleBindMissingSourceReadsNothing(t *testing.T) {
	w := newWorld(t, []procfs.Process{proc(1, "systemd", hostNS, ""), proc(1300, "runc", hostNS, "")}, map[uint32]string{hostNS: hostTable})
	reads := 0
	w.c = correlate.New(countingReads{w.proc, &reads}, correlate.Options{LeakSettle: -1}, func(f *finding.Finding) { w.findings = append(w.findings, f) })
	if err := w.c.Start(); err != nil {
		t.Fatal(err)
	}
	before := reads
	w.send(mountEv(1300, "runc", hostNS, "/run/missing/src", "/rootfs/etc/x", "", unix.MS_BIND, -int64(unix.ENOENT)))
	if reads != before {
		t.Errorf("an ENOENT for a source no table has a mount at read %d mount tables again, want 0", reads-before)
	}
	if len(w.findings) != 0 {
		t.Errorf("%d findings, want none: %s", len(w.findings), w.findings[0].Line())
	}
}

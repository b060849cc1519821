package correlate_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/correlate"
	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/finding"
	"github.com/mntleak/mntleak/procfs"
)

// pinsOf is a finding's pins as "mnt:[NS] comm[pid] how", holder by holder.
func pinsOf(f *finding.Finding) string {
	var out []string
	for _, h := range f.Holders {
		for _, p := range h.Pins {
			out = append(out, fmt.Sprintf("mnt:[%d] %s[%d] %s", p.MntNS, p.Comm, p.PID, p.How()))
		}
	}
	return strings.Join(out, ", ")
}

const netnsRow = "9 1 0:4 net:[4026532290] /run/netns/cni-x rw shared:9 - nsfs nsfs rw\n"

// TestNetnsFileNamesTheProcessesThatHoldItOpen: `ip netns delete cni-x`
// fails to remove /run/netns/cni-x (a bind of net:[4026532290]) with
// EBUSY; cni[20], in mnt:[80], holds the namespace open (its fd shows "/":
// opened through a copy the kernel detached since), and agent[21] holds
// another network namespace open on the same nsfs device. The finding
// names cni[20]'s fd as the namespace it is, and not agent[21], whether
// /proc answers a search of every process or of some namespaces'.
func TestNetnsFileNamesTheProcessesThatHoldItOpen(t *testing.T) {
	for _, scoped := range []bool{false, true} {
		t.Run(fmt.Sprintf("scoped=%v", scoped), func(t *testing.T) {
			as := func(f *fakeProc) procfs.Proc { return f }
			if scoped {
				as = func(f *fakeProc) procfs.Proc { return &pinnerProc{fakeProc: f} }
			}
			cni, agent := proc(20, "cni", 80, ""), proc(21, "agent", 80, "")
			w := newWorldOf(t, correlate.Options{}, []procfs.Process{proc(1, "systemd", hostNS, ""), cni, agent},
				map[uint32]string{hostNS: hostTable + netnsRow, 80: "110 109 254:0 / / rw - ext4 /dev/vda rw\n"}, as)
			fd5, fd6 := 5, 6
			w.proc.pins = []procfs.Pin{
				{Process: cni, Kind: procfs.PinFD, Dev: event.MakeDev(0, 4), Path: "/", FD: &fd5, Ino: 4026532290},
				{Process: agent, Kind: procfs.PinFD, Dev: event.MakeDev(0, 4), Path: "net:[4026532999]", FD: &fd6, Ino: 4026532999},
			}
			w.send(failEv(50, "ip", hostNS, 263, "/run/netns/cni-x", int64(unix.EBUSY)))
			f := w.only()
			if got, want := pinsOf(f), "mnt:[80] cni[20] fd 5 net:[4026532290]"; got != want {
				t.Errorf("pins %q, want %q:\n%s", got, want, f.Line())
			}
		})
	}
}

// TestPinOutsideTheCopyIsNotNamed: the node's umount2 of /srv/src fails
// with EINVAL, and mnt:[80] has a copy there (a bind of the tmpfs's
// /pods/a). app[20] works in the copy; worker[22], of the same namespace,
// works on the same tmpfs elsewhere: it keeps the filesystem busy, not the
// copy, and is not named.
func TestPinOutsideTheCopyIsNotNamed(t *testing.T) {
	w, _ := boundWorld(t, 0, boundNone)
	w.proc.pins = []procfs.Pin{
		{Process: proc(20, "app", 80, ""), Kind: procfs.PinCwd, Dev: tmpfs77, Path: "/srv/src/x"},
		{Process: proc(22, "worker", 80, ""), Kind: procfs.PinCwd, Dev: tmpfs77, Path: "/srv/pods-b"},
	}
	f := w.fail()
	if got, want := pinsOf(f), "mnt:[80] app[20] cwd /srv/src/x"; got != want {
		t.Errorf("pins %q, want %q:\n%s", got, want, f.Line())
	}
}

// TestObjectNoNamespaceHasReadsNoProcess: `why` asks about a bind of a
// tmpfs's /pods/z that no namespace has mounted. Only a process of a
// namespace that has the object can pin it (pinInObject), so nothing is
// read: no search of every process's files (a crowd process works on the
// same tmpfs elsewhere), no namespace link; and nothing holds it.
func TestObjectNoNamespaceHasReadsNoProcess(t *testing.T) {
	w, p := boundWorld(t, 300, boundNone)
	tmpfs99 := event.MakeDev(0, 99)
	w.proc.pins = []procfs.Pin{{Process: proc(1000, "sleep", hostNS, ""), Kind: procfs.PinCwd, Dev: tmpfs99, Path: "/scratch"}}
	p.links, p.scans = 0, 0
	if f := w.c.Why(correlate.Target{Path: "/srv/gone", Dev: tmpfs99, Root: "/pods/z"}, w.now.Add(time.Second)); f != nil {
		t.Errorf("a finding on an object no namespace has:\n%s", f.Line())
	}
	if p.scans != 0 || p.links != 0 {
		t.Errorf("read %d searches of every process and %d namespace links, want none", p.scans, p.links)
	}
}

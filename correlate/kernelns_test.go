package correlate_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/correlate"
	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/finding"
	"github.com/mntleak/mntleak/internal/kmount"
	"github.com/mntleak/mntleak/procfs"
)

// kernelProc is the fake /proc with the kernel's own namespace walk
// (procfs.KernelNamespaces): nss is every namespace there is (by inode,
// birth id = inode + 1000), each table read from the world's tables; a
// nil nss answers as a kernel without the walk. It counts the scans of
// every process's open files.
type kernelProc struct {
	*fakeProc
	nss     []uint32
	fdScans int
	walks   int // walks of the namespaces asked for
}

func (k *kernelProc) NSFDs() ([]procfs.NSFD, error) {
	k.fdScans++
	return k.fakeProc.NSFDs()
}

func (k *kernelProc) MountNamespaces() ([]kmount.Namespace, error) {
	k.walks++
	if k.nss == nil {
		return nil, fmt.Errorf("walk the mount namespaces: %w", unix.ENOTTY)
	}
	var out []kmount.Namespace
	for _, ino := range k.nss {
		out = append(out, kmount.Namespace{Ino: ino, ID: uint64(ino) + 1000})
	}
	return out, nil
}

func (k *kernelProc) NamespaceTable(id uint64) ([]*procfs.Mount, error) {
	text, ok := k.tables[uint32(id-1000)]
	if !ok {
		return nil, errors.New("listmount: no such namespace")
	}
	return mountsOf(text)
}

// withKernelWalk gives the world a correlator that asks the kernel for
// its namespaces (nss; nil: a kernel without the walk).
func withKernelWalk(w *world, nss []uint32) *kernelProc {
	w.t.Helper()
	k := &kernelProc{fakeProc: w.proc, nss: nss}
	w.c = correlate.New(k, correlate.Options{LeakSettle: -1}, func(f *finding.Finding) { w.findings = append(w.findings, f) })
	if err := w.c.Start(); err != nil {
		w.t.Fatal(err)
	}
	return k
}

// keptByAnOpenFile is TestNamespaceKeptByAnOpenFile's world: mnt:[95], no
// process in it, held open by pinner[60], keeps /dev/loop0 mounted after
// the host unmounted it; plus mnt:[96], the kernel's devtmpfs namespace
// (no process either, nothing of the object). It returns the line of the
// mkfs.ext4 EBUSY and how many times every process's open files were read.
func keptByAnOpenFile(t *testing.T, nss []uint32, keptHolds bool) (string, int) {
	const kept = 95
	w := newWorld(t, []procfs.Process{proc(1, "systemd", hostNS, ""), proc(60, "pinner", hostNS, "")}, map[uint32]string{hostNS: hostTable})
	w.proc.tables[kept] = "110 109 254:0 / / rw - ext4 /dev/vda rw\n"
	if keptHolds {
		w.proc.tables[kept] += "111 110 7:0 / /srv/vol rw - ext4 /dev/loop0 rw\n"
	}
	w.proc.tables[96] = "120 120 0:6 / / rw - devtmpfs devtmpfs rw,size=4096k\n"
	w.proc.nsfiles = map[string]uint32{"/proc/60/fd/3": kept}
	w.proc.nsfds = []procfs.NSFD{{Process: proc(60, "pinner", hostNS, ""), FD: 3, NS: kept}}
	k := withKernelWalk(w, nss)
	w.proc.tables[hostNS] = hostWithoutVol
	w.send(umountEv(40, "umount", hostNS, "/srv/vol", 0))
	w.findings = nil
	k.fdScans = 0
	w.send(failEv(50, "mkfs.ext4", hostNS, 257, "/dev/loop0", int64(unix.EBUSY)))
	if !keptHolds {
		if len(w.findings) != 0 {
			t.Fatalf("%d findings, want none: %s", len(w.findings), w.findings[0].Line())
		}
		return "", k.fdScans
	}
	return w.only().Line(), k.fdScans
}

// Where the kernel lists its namespaces, a failure reads every process's
// open files only when a namespace that no process runs in may hold the
// object; the finding is the same, byte for byte, as on a kernel without
// the walk.
func TestOpenFileScanOnlyWhereTheKernelShowsACopy(t *testing.T) {
	want, scans := keptByAnOpenFile(t, nil, true)
	if scans != 1 {
		t.Errorf("without the walk: %d scans of the open files, want 1", scans)
	}
	if !strings.Contains(want, "kept by fd 3 of pinner[60] in the host") {
		t.Fatalf("without the walk: line lacks the open file that keeps mnt:[95]:\n%s", want)
	}
	got, scans := keptByAnOpenFile(t, []uint32{hostNS, 95, 96}, true)
	if got != want || scans != 1 {
		t.Errorf("with the walk: %d scans, line\n%s\nwant 1 scan and\n%s", scans, got, want)
	}
	if _, scans := keptByAnOpenFile(t, []uint32{hostNS, 95, 96}, false); scans != 0 {
		t.Errorf("no namespace without processes holds it: %d scans of the open files, want 0", scans)
	}
	if _, scans := keptByAnOpenFile(t, nil, false); scans != 1 {
		t.Errorf("without the walk, nothing held: %d scans of the open files, want 1 (the fallback)", scans)
	}
}

// batchProc is the fake /proc reading many tables at once
// (procfs.TableReader); the pids in gone answer as a process that exited
// within the batch (and after it, read alone), so the correlator reads
// their namespace again member by member. It records every batch, and
// counts the tables read one by one (Mountinfo) besides.
type batchProc struct {
	*fakeProc
	gone    map[int]bool
	batches [][]int
	single  int
}

func (b *batchProc) Mountinfo(pid int) (uint32, []*procfs.Mount, error) {
	b.single++
	if b.gone[pid] {
		return 0, nil, fmt.Errorf("open /proc/%d/mountinfo: %w", pid, unix.ESRCH)
	}
	return b.fakeProc.Mountinfo(pid)
}

func (b *batchProc) Mountinfos(pids []int) []procfs.TableAnswer {
	b.batches = append(b.batches, append([]int(nil), pids...))
	out := make([]procfs.TableAnswer, len(pids))
	for i, pid := range pids {
		if b.gone[pid] {
			out[i].Err = fmt.Errorf("open /proc/%d/mountinfo: %w", pid, unix.ESRCH)
			continue
		}
		out[i].NS, out[i].Mounts, out[i].Err = b.fakeProc.Mountinfo(pid)
	}
	return out
}

// The tables of the startup snapshot are read in one batch, one process
// per namespace; a namespace whose process was gone in the batch is read
// through its other members; the finding is the one read table by table.
func TestTablesReadInOneBatch(t *testing.T) {
	const agentNS, sidecarNS = 30, 31
	copyTable := "40 39 254:0 / / rw - ext4 /dev/vda rw\n41 40 7:0 / /srv/vol rw - ext4 /dev/loop0 rw\n"
	run := func(batch bool) (string, *batchProc) {
		w := newWorld(t, []procfs.Process{proc(1, "systemd", hostNS, ""), proc(50, "agent", agentNS, ""),
			proc(51, "sidecar", sidecarNS, ""), proc(52, "sidecar", sidecarNS, "")},
			map[uint32]string{hostNS: hostWithoutVol, agentNS: copyTable, sidecarNS: "60 59 254:0 / / rw - ext4 /dev/vda rw\n"})
		var b *batchProc
		if batch {
			b = &batchProc{fakeProc: w.proc, gone: map[int]bool{51: true}}
			w.c = correlate.New(b, correlate.Options{LeakSettle: -1}, func(f *finding.Finding) { w.findings = append(w.findings, f) })
			if err := w.c.Start(); err != nil {
				t.Fatal(err)
			}
		}
		w.send(failEv(70, "mkfs.ext4", hostNS, 257, "/dev/loop0", int64(unix.EBUSY)))
		return w.only().Line(), b
	}
	want, _ := run(false)
	got, b := run(true)
	if got != want {
		t.Errorf("read in a batch:\n%s\nwant, as read table by table:\n%s", got, want)
	}
	if len(b.batches) == 0 || fmt.Sprint(slices.Sorted(slices.Values(b.batches[0]))) != "[1 50 51]" {
		t.Errorf("batches %v, want the first of pids 1, 50 and 51 (one process per namespace, the oldest)", b.batches)
	}
	if !strings.Contains(want, "mnt:[30]") {
		t.Errorf("the finding does not name the agent's namespace:\n%s", want)
	}
}

// The kernel's namespace walk is made again only when its answer may have
// changed: not for a second failure with nothing between; again once a
// namespace was made and its last process left (it may be kept open: here
// it is, and holds the object, and the finding names the open file that
// keeps it); again after lost events; again when a namespace of the last
// walk is gone (its table cannot be read). Each answer is the one a fresh
// walk gives.
func TestKernelWalkReusedUntilTheLineageChanged(t *testing.T) {
	w := newWorld(t, []procfs.Process{proc(1, "systemd", hostNS, ""), proc(60, "pinner", hostNS, "")}, map[uint32]string{hostNS: hostTable})
	w.proc.tables[96] = "120 120 0:6 / / rw - devtmpfs devtmpfs rw,size=4096k\n"
	k := withKernelWalk(w, []uint32{hostNS, 96})
	w.proc.tables[hostNS] = hostWithoutVol
	w.send(umountEv(40, "umount", hostNS, "/srv/vol", 0))
	fail := func(what string, walks, scans int) []*finding.Finding {
		t.Helper()
		w.findings, k.walks, k.fdScans = nil, 0, 0
		// Past the retry window: a repeat within it is folded into the first.
		w.now = w.now.Add(31 * time.Second)
		w.send(failEv(50, "mkfs.ext4", hostNS, 257, "/dev/loop0", int64(unix.EBUSY)))
		if k.walks != walks || k.fdScans != scans {
			t.Errorf("%s: %d walks, %d scans of the open files; want %d and %d", what, k.walks, k.fdScans, walks, scans)
		}
		return w.findings
	}
	fail("the first failure", 1, 0)
	fail("a second failure, nothing between", 0, 0)

	// mnt:[95] is made, its only process exits; pinner[60] holds it open,
	// and it keeps /dev/loop0 mounted.
	w.send(unshareEv(70, "unshare", hostNS, 95))
	w.proc.tables[95] = "110 109 254:0 / / rw - ext4 /dev/vda rw\n111 110 7:0 / /srv/vol rw - ext4 /dev/loop0 rw\n"
	w.send(exitEv(70, "unshare", 95))
	k.nss = []uint32{hostNS, 95, 96}
	w.proc.nsfiles = map[string]uint32{"/proc/60/fd/3": 95}
	w.proc.nsfds = []procfs.NSFD{{Process: proc(60, "pinner", hostNS, ""), FD: 3, NS: 95}}
	found := fail("a namespace made and left since", 1, 1)
	if len(found) != 1 || !strings.Contains(found[0].Line(), "kept by fd 3 of pinner[60] in the host") {
		t.Errorf("a namespace made and left since: findings %v, want one naming the open file that keeps mnt:[95]", found)
	}
	fail("a third failure, nothing between", 0, 1)

	w.send(&event.Event{Kind: event.KindLost, Lost: 2, SyscallNr: -1})
	fail("events lost since", 1, 1)

	// mnt:[95] and its open file go; so does mnt:[96].
	k.nss, w.proc.nsfds, w.proc.nsfiles = []uint32{hostNS}, nil, nil
	delete(w.proc.tables, 95)
	delete(w.proc.tables, 96)
	fail("namespaces of the last walk gone", 1, 0)
}

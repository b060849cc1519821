package correlate_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/mntleak/mntleak/correlate"
	"github.com/mntleak/mntleak/finding"
	"github.com/mntleak/mntleak/procfs"
)

// walkWorld: the node and keeper[20]'s namespace mnt:[80], which keeps a
// copy of /srv/vol; the correlator asks the kernel for its namespaces
// (nss). The node's table has binds (mountinfo lines) besides its mounts;
// mnt:[96] is the kernel's devtmpfs namespace. The node unmounts /srv/vol.
func walkWorld(t *testing.T, nss []uint32, binds string) (*world, *kernelProc) {
	t.Helper()
	w := newWorld(t, []procfs.Process{proc(1, "systemd", hostNS, ""), proc(20, "keeper", 80, ""), proc(60, "pinner", hostNS, "")},
		map[uint32]string{hostNS: hostTable + binds, 80: copyOfVol, 96: "120 120 0:6 / / rw - devtmpfs devtmpfs rw,size=4096k\n"})
	w.proc.nsfiles = map[string]uint32{}
	k := withKernelWalk(w, nss)
	w.proc.tables[hostNS] = hostWithoutVol + binds
	w.send(umountEv(40, "umount", hostNS, "/srv/vol", 0))
	w.findings = nil
	return w, k
}

// A namespace with processes that holds the object is searched as any
// other: it is no reason to read every process's open files when the
// kernel shows no namespace without processes holds it.
func TestOpenFileScanSkipsNamespacesWithProcesses(t *testing.T) {
	w, k := walkWorld(t, []uint32{80, 96, hostNS}, "")
	k.fdScans = 0
	wantHolders(t, w, []string{liveHolder}, nil)
	if k.fdScans != 0 {
		t.Errorf("%d scans of the open files, want 0 (only mnt:[80], which has a process, holds it)", k.fdScans)
	}
}

// mnt:[95], made by unshare[30], which exited, is kept by a bind on the
// node when a collection passes: the lineage keeps it alive with no
// process. The bind goes, pinner[60] holds mnt:[95] open: the kernel
// shows it holding the object, so the open files are read and it is named.
func TestOpenFileScanForALiveNamespaceWithoutProcesses(t *testing.T) {
	w, k := walkWorld(t, []uint32{80, 95, 96, hostNS}, "9 1 0:4 mnt:[95] /run/mntns/keep rw - nsfs nsfs rw\n")
	keptBindGoesHeldOpen(w)
	k.fdScans = 0
	wantHolders(t, w, []string{liveHolder, "mnt:[95] /srv/vol kept by fd 3 of pinner[60] in the host, an open file of its nsfs file"}, nil)
	if k.fdScans != 1 {
		t.Errorf("%d scans of the open files, want 1", k.fdScans)
	}
}

// batchWorld is a world whose correlator reads many tables at once
// (batchProc; the pids in gone exit within a batch).
func batchWorld(t *testing.T, procs []procfs.Process, tables map[uint32]string, gone map[int]bool) (*world, *batchProc) {
	t.Helper()
	w := newWorld(t, procs, tables)
	b := &batchProc{fakeProc: w.proc, gone: gone}
	w.c = correlate.New(b, correlate.Options{LeakSettle: -1}, func(f *finding.Finding) { w.findings = append(w.findings, f) })
	if err := w.c.Start(); err != nil {
		t.Fatal(err)
	}
	return w, b
}

// The startup snapshot reads in one batch as soon as there are two
// namespaces, and reads one by one only a namespace whose answer in the
// batch is not its table.
func TestTablesReadOneByOneOnlyWhereTheBatchFailed(t *testing.T) {
	_, b := batchWorld(t, []procfs.Process{proc(1, "systemd", hostNS, ""), proc(50, "agent", 30, "")},
		map[uint32]string{hostNS: hostTable, 30: copyOfVol}, nil)
	if fmt.Sprint(b.batches) != "[[50 1]]" || b.single != 0 {
		t.Errorf("two namespaces: batches %v and %d tables read one by one, want [[50 1]] and 0", b.batches, b.single)
	}
	_, b = batchWorld(t, []procfs.Process{proc(1, "systemd", hostNS, ""), proc(50, "agent", 30, ""),
		proc(51, "sidecar", 31, ""), proc(52, "sidecar", 31, "")},
		map[uint32]string{hostNS: hostTable, 30: copyOfVol, 31: copyOfVol}, map[int]bool{51: true})
	if len(b.batches) != 1 || fmt.Sprint(slices.Sorted(slices.Values(b.batches[0]))) != "[1 50 51]" || b.single != 2 {
		t.Errorf("pid 51 gone in the batch: batches %v and %d tables read one by one, want one of [1 50 51] and 2 (mnt:[31] through pids 51 and 52)", b.batches, b.single)
	}
}

// A namespace whose last known process exited (not retired yet: no
// process list since) has no process to read in the batch: it is read
// alone, and the failure names the copy of the namespace that has one.
func TestNamespaceWithoutProcessesBesideABatch(t *testing.T) {
	w, _ := batchWorld(t, []procfs.Process{proc(1, "systemd", hostNS, ""), proc(20, "keeper", 80, "")},
		map[uint32]string{hostNS: hostTable, 80: copyOfVol}, nil)
	w.proc.tables[hostNS] = hostWithoutVol
	w.send(umountEv(40, "umount", hostNS, "/srv/vol", 0), unshareEv(30, "unshare", hostNS, 95), exitEv(30, "unshare", 95))
	w.findings = nil
	wantHolders(t, w, []string{liveHolder}, nil)
}

// A namespace whose only process is gone in the batch and alone, with a
// fresh process list, is said to be unreadable.
func TestNamespaceUnreadableInABatchIsMissing(t *testing.T) {
	w, _ := batchWorld(t, []procfs.Process{proc(1, "systemd", hostNS, ""), proc(20, "keeper", 80, ""), proc(51, "sidecar", 31, "")},
		map[uint32]string{hostNS: hostTable, 80: copyOfVol, 31: copyOfVol}, map[int]bool{51: true})
	w.proc.tables[hostNS] = hostWithoutVol
	w.send(umountEv(40, "umount", hostNS, "/srv/vol", 0))
	w.findings = nil
	w.now = w.now.Add(2 * time.Minute) // past ScanInterval: the failure reads the process list
	wantHolders(t, w, []string{liveHolder}, []string{"mount table of mnt:[31]: no process of it could be read"})
}

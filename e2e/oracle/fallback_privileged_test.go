package oracle

import (
	"path/filepath"
	"testing"

	"github.com/mntleak/mntleak/e2e/testkit/privtest"
)

// TestFallbackAgreesWithTheWalk: without the namespace walk (kernels before
// 6.12), the namespaces of processes are found with the same holders of a
// device as by the walk, read through their members' mountinfo; one no
// process runs in is listed, unread.
func TestFallbackAgreesWithTheWalk(t *testing.T) {
	privtest.Require(t)
	privtest.RequireCommands(t, "unshare", "nsenter", "mount", "umount", "losetup", "mkfs.ext4")
	dev := privtest.LoopDevice(t, 16)
	vol := privtest.Mkdir(t, filepath.Join(t.TempDir(), "vol"))
	node := privtest.StartNode(t)
	node.Run(t, "mount", dev, vol)
	holder := node.StartHolder(t, "private", "true")
	pins := privtest.Mkdir(t, filepath.Join(t.TempDir(), "pins"))
	node.Run(t, "mount", "--bind", pins, pins)
	node.Run(t, "mount", "--make-private", pins)
	file := filepath.Join(pins, "mnt")
	node.Run(t, "touch", file)
	kept := node.KeepNamespace(t, file)
	node.Run(t, "umount", vol)
	target, err := PathTarget(dev)
	if err != nil {
		t.Fatal(err)
	}
	walked, err := Take()
	if err != nil {
		t.Fatal(err)
	}
	fallback := &Snapshot{Taken: walked.Taken, Procs: walked.Procs, NSFSDev: walked.NSFSDev}
	fallback.readNamespacesFromProcs()
	w, f := walked.Holders(target), fallback.Holders(target)
	t.Logf("walk: %s\nfallback: %s", w, f)
	if _, ok := w.Holding(uint64(holder.MntNS)); !ok || len(w.Namespaces) != 2 {
		t.Fatalf("the walk: %v, want the holder's mnt:[%d] and the kept mnt:[%d]", w.Namespaces, holder.MntNS, kept)
	}
	if h, ok := f.Holding(uint64(holder.MntNS)); !ok || len(f.Namespaces) != 1 || len(h.Members) != 1 || h.Members[0].PID != holder.PID {
		t.Errorf("the fallback: %v, want the holder's mnt:[%d] with its member", f.Namespaces, holder.MntNS)
	}
	unread := false
	for _, ns := range fallback.Namespaces {
		unread = unread || (ns.Inode == uint64(kept) && ns.Unread != "")
	}
	if !unread {
		t.Errorf("the fallback does not list the kept mnt:[%d] as unread", kept)
	}
}

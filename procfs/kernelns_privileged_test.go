package procfs

import (
	"os/exec"
	"strconv"
	"testing"

	"github.com/mntleak/mntleak/e2e/testkit/privtest"
)

// TestKernelNamespaceTable: the kernel's walk lists a namespace made by
// unshare with the birth id NS_GET_MNTNS_ID gives through its process,
// and its table read by that id (listmount, statmount; no process) is the
// one its process's /proc/PID/mountinfo shows, field for field (the
// source and super options too), for a tmpfs mounted in it alone and a
// read-only one with the superblock flags mountinfo names (sync, dirsync,
// lazytime), besides everything the host has (the oracle is the kernel's
// mountinfo).
func TestKernelNamespaceTable(t *testing.T) {
	privtest.Require(t)
	privtest.RequireCommands(t, "unshare", "sh", "sleep", "mount")
	h := Host{}
	dir := t.TempDir()
	inner := start(t, exec.Command("unshare", "-m", "--propagation", "private", "sh", "-c",
		"mount -t tmpfs -o size=1m,nosuid kntest "+dir+" && mount --make-shared "+dir+
			" && mkdir "+dir+"/ro && mount -t tmpfs -o ro,sync,dirsync,lazytime,size=1m 'kn test' "+dir+"/ro && echo ready && exec sleep 600"))
	ino, id, err := h.MntNSID(inner)
	if err != nil {
		t.Fatal(err)
	}
	nss, err := h.MountNamespaces()
	if err != nil {
		t.Fatal(err)
	}
	listed := false
	for _, ns := range nss {
		listed = listed || (ns.Ino == ino && ns.ID == id)
	}
	if !listed {
		t.Fatalf("the walk (%d namespaces) lacks mnt:[%d] born with id %d", len(nss), ino, id)
	}
	got, err := h.NamespaceTable(id)
	if err != nil {
		t.Fatal(err)
	}
	_, want, err := h.Mountinfo(inner)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("statmount: %d mounts, mountinfo of %d: %d", len(got), inner, len(want))
	}
	byID := map[int]int{}
	for i, m := range want {
		byID[m.ID] = i
	}
	sawTmpfs, sawRO := false, false
	for _, g := range got {
		i, ok := byID[g.ID]
		if !ok {
			t.Errorf("statmount has mount %d at %s, mountinfo does not", g.ID, g.Mountpoint)
			continue
		}
		w := want[i]
		sawTmpfs = sawTmpfs || (g.Mountpoint == dir && g.FSType == "tmpfs" && g.Source == "kntest")
		sawRO = sawRO || (g.Mountpoint == dir+"/ro" && g.Source == "kn test")
		if g.Parent != w.Parent || g.Major != w.Major || g.Minor != w.Minor || g.Root != w.Root || g.Mountpoint != w.Mountpoint ||
			g.FSType != w.FSType || g.Optional != w.Optional || g.Options != w.Options || g.Source != w.Source || g.VFSOptions != w.VFSOptions {
			t.Errorf("mount %d:\nstatmount %+v\nmountinfo %+v", g.ID, deref([]*Mount{g}), deref([]*Mount{w}))
		}
	}
	if !sawTmpfs || !sawRO {
		t.Errorf("no tmpfs kntest at %s (%v) or 'kn test' at %s/ro (%v) in mnt:[%d] (pid %s)", dir, sawTmpfs, dir, sawRO, ino, strconv.Itoa(inner))
	}
}

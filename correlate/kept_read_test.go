package correlate_test

import (
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/mntleak/mntleak/procfs"
)

// copyOfVol is a namespace's table with its own copy of /dev/loop0.
const copyOfVol = "110 109 254:0 / / rw - ext4 /dev/vda rw\n111 110 7:0 / /srv/vol rw - ext4 /dev/loop0 rw\n"

// liveHolder is how a finding names keeper[20]'s namespace mnt:[80].
const liveHolder = "mnt:[80] /srv/vol"

// keptWorld: the node, whose table has binds (mountinfo lines) besides
// its mounts, unmounted /srv/vol; keeper[20]'s namespace mnt:[80] keeps a
// copy. pinner[60] runs on the node; no nsfs file is readable yet.
func keptWorld(t *testing.T, binds string) *world {
	t.Helper()
	w := newWorld(t, []procfs.Process{proc(1, "systemd", hostNS, ""), proc(20, "keeper", 80, ""), proc(60, "pinner", hostNS, "")},
		map[uint32]string{hostNS: hostTable + binds, 80: copyOfVol})
	w.proc.nsfiles = map[string]uint32{}
	w.proc.tables[hostNS] = hostWithoutVol + binds
	w.send(umountEv(40, "umount", hostNS, "/srv/vol", 0))
	w.findings = nil
	return w
}

// heldOpen is p's open fd of namespace ns's nsfs file, readable as that
// namespace.
func heldOpen(w *world, p procfs.Process, fd int, ns uint32) procfs.NSFD {
	w.proc.nsfiles["/proc/"+strconv.Itoa(p.PID)+"/fd/"+strconv.Itoa(fd)] = ns
	return procfs.NSFD{Process: p, FD: fd, NS: ns}
}

// wantHolders checks a finding's holders (holdersOf) and what it says it
// could not read, exactly.
func wantHolders(t *testing.T, w *world, holders, missing []string) {
	t.Helper()
	f := mkfsFails(w)
	if got := holdersOf(f); !slices.Equal(got, holders) {
		t.Errorf("got holders %q, want %q:\n%s", got, holders, f.Line())
	}
	if !slices.Equal(f.Missing, missing) {
		t.Errorf("got missing %q, want %q", f.Missing, missing)
	}
}

// A namespace no process runs in, kept by a bind on the node, whose bind
// cannot be read as that namespace (it now names another: the path was
// bound again; or it is no nsfs file any more) is said to be unreadable,
// and the other namespace's table is never taken for its own.
func TestKeptNamespaceUnreadableIsMissing(t *testing.T) {
	const bind = "9 1 0:4 mnt:[95] /run/mntns/keep rw - nsfs nsfs rw\n"
	t.Run("its bind names another namespace now", func(t *testing.T) {
		w := keptWorld(t, bind)
		w.proc.tables[96] = copyOfVol
		w.proc.nsfiles["/run/mntns/keep"] = 96
		wantHolders(t, w, []string{liveHolder}, []string{"mount table of mnt:[95] (kept by /run/mntns/keep): /run/mntns/keep now names mnt:[96]"})
	})
	t.Run("its bind is no namespace file", func(t *testing.T) {
		w := keptWorld(t, bind)
		wantHolders(t, w, []string{liveHolder}, []string{"mount table of mnt:[95] (kept by /run/mntns/keep): /run/mntns/keep is not a namespace file"})
	})
}

// Namespaces no process runs in, held open by pinner[60]: mnt:[95] is read
// through its fd and holds a copy; mnt:[96]'s fd cannot be read, and some
// processes' open files could not be listed: both are said to be missing.
func TestNamespaceHeldOpenUnreadableIsMissing(t *testing.T) {
	w := keptWorld(t, "")
	w.proc.tables[95] = copyOfVol
	pinner := proc(60, "pinner", hostNS, "")
	w.proc.nsfds = []procfs.NSFD{heldOpen(w, pinner, 3, 95), {Process: pinner, FD: 4, NS: 96}}
	w.proc.nsfdsErr = &procfs.UnreadableError{Processes: 2}
	wantHolders(t, w, []string{liveHolder, "mnt:[95] /srv/vol kept by fd 3 of pinner[60] in the host, an open file of its nsfs file"},
		[]string{"the processes holding a namespace open: 2 processes unreadable",
			"mount table of mnt:[96] (held open by pinner[60]): /proc/60/fd/4 is not a namespace file"})
}

// A namespace no process runs in that several processes hold open is read
// through, and named as kept by, the lowest pid's lowest fd, whatever the
// order /proc lists them in.
func TestNamespaceHeldOpenByManyNamesTheLowestPidAndFd(t *testing.T) {
	pinner, helper := proc(60, "pinner", hostNS, ""), proc(61, "helper", hostNS, "")
	for _, order := range [][]int{{2, 1, 0}, {0, 1, 2}, {1, 2, 0}} {
		w := keptWorld(t, "")
		w.proc.procs = append(w.proc.procs, helper)
		w.proc.tables[95] = copyOfVol
		fds := []procfs.NSFD{heldOpen(w, pinner, 4, 95), heldOpen(w, pinner, 5, 95), heldOpen(w, helper, 3, 95)}
		for _, i := range order {
			w.proc.nsfds = append(w.proc.nsfds, fds[i])
		}
		wantHolders(t, w, []string{liveHolder, "mnt:[95] /srv/vol kept by fd 4 of pinner[60] in the host, an open file of its nsfs file"}, nil)
	}
}

// mnt:[95], made by unshare[30], which exited, is kept by a bind on the
// node when a collection passes: the lineage keeps it alive with no
// process. The bind is unmounted, but pinner[60] holds mnt:[95] open
// before the next collection: it is read through that fd as any
// namespace no process runs in, and its copy is named.
func TestNamespaceHeldOpenAfterItsBindWentIsReadThroughItsOpenFile(t *testing.T) {
	w := keptWorld(t, "9 1 0:4 mnt:[95] /run/mntns/keep rw - nsfs nsfs rw\n")
	keptBindGoesHeldOpen(w)
	wantHolders(t, w, []string{liveHolder, "mnt:[95] /srv/vol kept by fd 3 of pinner[60] in the host, an open file of its nsfs file"}, nil)
}

// mnt:[95], which no process runs in, is kept by a bind on the node; its
// own table has a bind of mnt:[96]'s nsfs file, which mntleak cannot
// reach (no process of mnt:[95] to go through). pinner[60] holds mnt:[96]
// open: it is read through that fd, and its copy is named.
func TestNamespaceBoundWhereNoProcessRunsIsReadThroughItsOpenFile(t *testing.T) {
	w := keptWorld(t, "9 1 0:4 mnt:[95] /run/mntns/keep rw - nsfs nsfs rw\n")
	w.proc.tables[95] = "130 129 254:0 / / rw - ext4 /dev/vda rw\n131 130 0:4 mnt:[96] /keep96 rw - nsfs nsfs rw\n"
	w.proc.nsfiles["/run/mntns/keep"] = 95
	w.proc.tables[96] = copyOfVol
	w.proc.nsfds = []procfs.NSFD{heldOpen(w, proc(60, "pinner", hostNS, ""), 3, 96)}
	wantHolders(t, w, []string{liveHolder, "mnt:[96] /srv/vol kept by fd 3 of pinner[60] in the host, an open file of its nsfs file"}, nil)
}

// keptBindGoesHeldOpen: in w, whose node binds mnt:[95] at /run/mntns/keep,
// unshare[30] makes mnt:[95] (with a copy of /srv/vol) and exits; a
// collection passes; the node unmounts /srv/vol and the bind, and
// pinner[60] of the host holds mnt:[95] open by fd 3. The findings so far
// are dropped.
func keptBindGoesHeldOpen(w *world) {
	w.proc.tables[95] = copyOfVol
	w.proc.nsfiles["/run/mntns/keep"] = 95
	w.send(unshareEv(30, "unshare", hostNS, 95), exitEv(30, "unshare", 95))
	w.now = w.now.Add(31 * time.Second) // past GCInterval: a collection
	w.send(exitEv(90, "true", hostNS))
	w.proc.tables[hostNS] = hostWithoutVol
	w.send(umountEv(41, "umount", hostNS, "/run/mntns/keep", 0))
	w.proc.nsfds = []procfs.NSFD{heldOpen(w, proc(60, "pinner", hostNS, ""), 3, 95)}
	w.findings = nil
}

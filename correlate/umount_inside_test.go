package correlate_test

import (
	"slices"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/procfs"
)

// TestBusyUmountOfTheCallersRoot: a busy umount2 whose caller's root (not
// its cwd) is on a mount below the one unmounted is explained by that
// root, and the evidence cites the root's mount id, not the cwd's.
func TestBusyUmountOfTheCallersRoot(t *testing.T) {
	table := hostTable + "4 3 7:0 /sub /srv/vol/sub rw shared:3 - ext4 /dev/loop0 rw\n"
	w := newWorld(t, []procfs.Process{proc(1, "systemd", hostNS, "/init.scope")}, map[uint32]string{hostNS: table})
	ev := umountEv(50, "umount", hostNS, "/srv/vol", -int64(unix.EBUSY))
	ev.CwdMntID, ev.RootMntID = 2, 4 // cwd on /tmp, root on /srv/vol/sub
	w.send(ev)
	if len(w.findings) != 1 {
		t.Fatalf("%d findings, want 1", len(w.findings))
	}
	f := w.findings[0]
	const wantSummary = "not a leak: umount[50]'s own root is inside /srv/vol (a shell that runs umount from there passes its cwd on)"
	if f.Summary != wantSummary {
		t.Errorf("summary %q, want %q", f.Summary, wantSummary)
	}
	want := []string{
		"the call: umount2 /srv/vol by umount[50] = -1 EBUSY",
		"mnt:[4026531840] mount 3 at /srv/vol (ext4 /dev/loop0, root /, shared:3)",
		"umount[50]'s root at the call: mount 4, on or under /srv/vol",
	}
	var got []string
	for _, e := range f.Evidence {
		got = append(got, e.What)
	}
	if !slices.Equal(got, want) {
		t.Errorf("evidence\n%q\nwant\n%q", got, want)
	}
}

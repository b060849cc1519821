package procfs

import (
	"testing"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/internal/kmount"
)

// A mount's options from statmount's attributes are the words mountinfo
// prints: the kernel (show_mnt_opts) prints relatime, noatime and
// nodiratime but never strictatime, which is the absence of both.
func TestMountOptionsAsMountinfoPrintsThem(t *testing.T) {
	for _, tc := range []struct {
		attr uint64
		want string
	}{
		{0, "rw,relatime"},
		{unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV | unix.MOUNT_ATTR_NOEXEC, "ro,nosuid,nodev,noexec,relatime"},
		{unix.MOUNT_ATTR_NOATIME | unix.MOUNT_ATTR_NODIRATIME, "rw,noatime,nodiratime"},
		{unix.MOUNT_ATTR_STRICTATIME, "rw"},
		{unix.MOUNT_ATTR_STRICTATIME | unix.MOUNT_ATTR_NOSUID, "rw,nosuid"},
	} {
		if got := mountOptions(tc.attr); got != tc.want {
			t.Errorf("mountOptions(%#x) = %q, want %q", tc.attr, got, tc.want)
		}
	}
}

// A statmount answer as a mountinfo line shows it: a FUSE mount's type
// with its subtype, its source, and the super options led by ro or rw and
// the superblock's flags.
func TestEntryOfAsMountinfoPrintsIt(t *testing.T) {
	m := kmount.Mount{FSType: "fuse", Subtype: "sshfs", Source: "me@host:/srv", HasSource: true,
		SBFlags: unix.MS_RDONLY | unix.MS_SYNCHRONOUS | unix.MS_LAZYTIME, Opts: "user_id=0,group_id=0"}
	got := entryOf(&m, &shapes{})
	if got.FSType != "fuse.sshfs" || got.Source != "me@host:/srv" || got.VFSOptions != "ro,sync,lazytime,user_id=0,group_id=0" {
		t.Errorf("type %q, source %q, super options %q", got.FSType, got.Source, got.VFSOptions)
	}
	m = kmount.Mount{FSType: "proc", Source: "proc", HasSource: true}
	if got := entryOf(&m, &shapes{}); got.FSType != "proc" || got.VFSOptions != "rw" {
		t.Errorf("type %q, super options %q; want proc, rw", got.FSType, got.VFSOptions)
	}
}

// The statmount answers of a mount's copies (their ids apart) made into
// entries through one interner share a shape.
func TestEntryOfSharesShapes(t *testing.T) {
	var sh shapes
	m := kmount.Mount{OldID: 30, OldParent: 1, Dev: 0x800003, FSType: "ext4", Root: "/", Point: "/srv", Source: "/dev/sda3", HasSource: true}
	a := entryOf(&m, &sh)
	m.OldID, m.OldParent = 90, 80
	b := entryOf(&m, &sh)
	if a.MountShape != b.MountShape || a.ID != 30 || b.ID != 90 || b.Parent != 80 || b.Mountpoint != "/srv" {
		t.Errorf("two copies: %d/%d and %d/%d, one shape %v; want their ids, one shape", a.ID, a.Parent, b.ID, b.Parent, a.MountShape == b.MountShape)
	}
	m.Point = "/other"
	if c := entryOf(&m, &sh); c.MountShape == a.MountShape || c.Mountpoint != "/other" {
		t.Errorf("a mount elsewhere shares the copies' shape")
	}
}

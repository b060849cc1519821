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
func TestInfoOfAsMountinfoPrintsIt(t *testing.T) {
	m := kmount.Mount{FSType: "fuse", Subtype: "sshfs", Source: "me@host:/srv", HasSource: true,
		SBFlags: unix.MS_RDONLY | unix.MS_SYNCHRONOUS | unix.MS_LAZYTIME, Opts: "user_id=0,group_id=0"}
	got := infoOf(&m)
	if got.FSType != "fuse.sshfs" || got.Source != "me@host:/srv" || got.VFSOptions != "ro,sync,lazytime,user_id=0,group_id=0" {
		t.Errorf("type %q, source %q, super options %q", got.FSType, got.Source, got.VFSOptions)
	}
	m = kmount.Mount{FSType: "proc", Source: "proc", HasSource: true}
	if got := infoOf(&m); got.FSType != "proc" || got.VFSOptions != "rw" {
		t.Errorf("type %q, super options %q; want proc, rw", got.FSType, got.VFSOptions)
	}
}

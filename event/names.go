package event

import (
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// SyscallName returns the name of syscall nr on the arch mntleak runs on
// (the BPF objects are built per arch), or "syscall_NNN".
func SyscallName(nr int32) string {
	if name, ok := syscallNames[nr]; ok {
		return name
	}
	return "syscall_" + strconv.Itoa(int(nr))
}

// ErrnoName returns the symbolic name of a positive errno ("EBUSY").
func ErrnoName(errno int64) string {
	if errno > 0 && errno < 4096 {
		if name := unix.ErrnoName(syscall.Errno(errno)); name != "" {
			return name
		}
	}
	return "errno " + strconv.FormatInt(errno, 10)
}

type flagName struct {
	bit  uint64
	name string
}

// Mount flags (MS_*), in bit order, as strace prints them.
var mountFlags = []flagName{
	{unix.MS_RDONLY, "MS_RDONLY"}, {unix.MS_NOSUID, "MS_NOSUID"},
	{unix.MS_NODEV, "MS_NODEV"}, {unix.MS_NOEXEC, "MS_NOEXEC"},
	{unix.MS_SYNCHRONOUS, "MS_SYNCHRONOUS"}, {unix.MS_REMOUNT, "MS_REMOUNT"},
	{unix.MS_MANDLOCK, "MS_MANDLOCK"}, {unix.MS_DIRSYNC, "MS_DIRSYNC"},
	{unix.MS_NOSYMFOLLOW, "MS_NOSYMFOLLOW"}, {unix.MS_NOATIME, "MS_NOATIME"},
	{unix.MS_NODIRATIME, "MS_NODIRATIME"}, {unix.MS_BIND, "MS_BIND"},
	{unix.MS_MOVE, "MS_MOVE"}, {unix.MS_REC, "MS_REC"},
	{unix.MS_SILENT, "MS_SILENT"}, {unix.MS_POSIXACL, "MS_POSIXACL"},
	{unix.MS_UNBINDABLE, "MS_UNBINDABLE"}, {unix.MS_PRIVATE, "MS_PRIVATE"},
	{unix.MS_SLAVE, "MS_SLAVE"}, {unix.MS_SHARED, "MS_SHARED"},
	{unix.MS_RELATIME, "MS_RELATIME"}, {unix.MS_KERNMOUNT, "MS_KERNMOUNT"},
	{unix.MS_I_VERSION, "MS_I_VERSION"}, {unix.MS_STRICTATIME, "MS_STRICTATIME"},
	{unix.MS_LAZYTIME, "MS_LAZYTIME"},
}

var umountFlags = []flagName{
	{unix.MNT_FORCE, "MNT_FORCE"}, {unix.MNT_DETACH, "MNT_DETACH"},
	{unix.MNT_EXPIRE, "MNT_EXPIRE"}, {unix.UMOUNT_NOFOLLOW, "UMOUNT_NOFOLLOW"},
}

var cloneFlags = []flagName{
	{unix.CLONE_NEWTIME, "CLONE_NEWTIME"}, {unix.CLONE_FS, "CLONE_FS"},
	{unix.CLONE_FILES, "CLONE_FILES"}, {unix.CLONE_NEWNS, "CLONE_NEWNS"},
	{unix.CLONE_SYSVSEM, "CLONE_SYSVSEM"}, {unix.CLONE_NEWCGROUP, "CLONE_NEWCGROUP"},
	{unix.CLONE_NEWUTS, "CLONE_NEWUTS"}, {unix.CLONE_NEWIPC, "CLONE_NEWIPC"},
	{unix.CLONE_NEWUSER, "CLONE_NEWUSER"}, {unix.CLONE_NEWPID, "CLONE_NEWPID"},
	{unix.CLONE_NEWNET, "CLONE_NEWNET"},
}

// AT_* flags shared by open_tree and mount_setattr.
var atFlags = []flagName{
	{unix.AT_SYMLINK_NOFOLLOW, "AT_SYMLINK_NOFOLLOW"},
	{unix.AT_NO_AUTOMOUNT, "AT_NO_AUTOMOUNT"},
	{unix.AT_EMPTY_PATH, "AT_EMPTY_PATH"},
	{unix.AT_RECURSIVE, "AT_RECURSIVE"},
}

var openTreeFlags = append([]flagName{
	{unix.OPEN_TREE_CLONE, "OPEN_TREE_CLONE"},
	{unix.OPEN_TREE_CLOEXEC, "OPEN_TREE_CLOEXEC"},
}, atFlags...)

var moveMountFlags = []flagName{
	{unix.MOVE_MOUNT_F_SYMLINKS, "MOVE_MOUNT_F_SYMLINKS"},
	{unix.MOVE_MOUNT_F_AUTOMOUNTS, "MOVE_MOUNT_F_AUTOMOUNTS"},
	{unix.MOVE_MOUNT_F_EMPTY_PATH, "MOVE_MOUNT_F_EMPTY_PATH"},
	{unix.MOVE_MOUNT_T_SYMLINKS, "MOVE_MOUNT_T_SYMLINKS"},
	{unix.MOVE_MOUNT_T_AUTOMOUNTS, "MOVE_MOUNT_T_AUTOMOUNTS"},
	{unix.MOVE_MOUNT_T_EMPTY_PATH, "MOVE_MOUNT_T_EMPTY_PATH"},
	{unix.MOVE_MOUNT_SET_GROUP, "MOVE_MOUNT_SET_GROUP"},
	{0x200, "MOVE_MOUNT_BENEATH"}, // not in x/sys/unix yet
}

var cloexecFlags = []flagName{{1, "CLOEXEC"}} // FSOPEN_CLOEXEC, FSMOUNT_CLOEXEC

// FlagNames renders the flags of an event of kind k, "A|B|0x40" style.
// setns with nstype 0 (any namespace) renders as "0".
func FlagNames(k Kind, flags uint64) string {
	var table []flagName
	switch k {
	case KindMount:
		// Old callers put the magic 0xC0ED in the top half; it means nothing.
		if flags&0xffff0000 == unix.MS_MGC_VAL {
			flags &^= 0xffff0000
		}
		table = mountFlags
	case KindUmount:
		table = umountFlags
	case KindUnshare, KindSetns:
		table = cloneFlags
	case KindOpenTree:
		table = openTreeFlags
	case KindMoveMount:
		table = moveMountFlags
	case KindMountSetattr:
		table = atFlags
	case KindFsopen, KindFsmount:
		table = cloexecFlags
	default:
		return ""
	}
	return joinFlags(table, flags)
}

func joinFlags(table []flagName, flags uint64) string {
	if flags == 0 {
		return ""
	}
	var parts []string
	for _, f := range table {
		if flags&f.bit != 0 {
			parts = append(parts, f.name)
			flags &^= f.bit
		}
	}
	if flags != 0 {
		parts = append(parts, "0x"+strconv.FormatUint(flags, 16))
	}
	return strings.Join(parts, "|")
}

// PropagationName names a propagation type as set by mount_setattr.
func PropagationName(p uint64) string {
	switch p {
	case 0:
		return ""
	case unix.MS_PRIVATE:
		return "MS_PRIVATE"
	case unix.MS_SLAVE:
		return "MS_SLAVE"
	case unix.MS_SHARED:
		return "MS_SHARED"
	case unix.MS_UNBINDABLE:
		return "MS_UNBINDABLE"
	}
	return "0x" + strconv.FormatUint(p, 16)
}

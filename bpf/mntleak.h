/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Event records shared by the BPF programs and the Go decoder
 * (event/decode.go mirrors these layouts; tracer/layout_test.go checks the
 * sizes against the bpf2go-generated types).
 *
 * Every record starts with struct event_header. Layouts are padded by hand
 * so that no member has implicit padding: the Go side reads them with a
 * sequential cursor.
 *
 * The records whose strings come last (mount, umount, pivot_root,
 * open_tree, move_mount, fsopen, mount_setattr) are built as these structs
 * but go out packed (pack.bpf.h): the struct up to its first
 * char array, then each char array's string with its NUL, in order. The
 * others (process records, failure) go out as the structs.
 */
#ifndef __MNTLEAK_H__
#define __MNTLEAK_H__

#define TASK_COMM_LEN 16
#define PATH_LEN 512	/* bytes kept of one path, NUL included */
#define FSTYPE_LEN 32
#define DATA_LEN 128	/* first bytes of mount(2) data */
#define CMDLINE_LEN 256	/* first bytes of the caller's argv, NUL-separated */
#define PAYLOAD_LEN 320	/* first bytes of a failing teardown call's buffer */
#define TASK_MNTNS_MAX 65536	/* tasks task_mntns_map keeps (common.bpf.h) */

/* Event kinds. Zero is invalid so that an all-zero record never decodes. */
enum event_kind {
	EVENT_INVALID = 0,
	EVENT_MOUNT = 1,
	EVENT_UMOUNT = 2,
	EVENT_UNSHARE = 3,
	EVENT_SETNS = 4,
	EVENT_NEWNS_FORK = 5,
	EVENT_EXIT = 6,
	EVENT_PIVOT_ROOT = 7,
	EVENT_OPEN_TREE = 8,
	EVENT_MOVE_MOUNT = 9,
	EVENT_FSOPEN = 10,
	EVENT_FSMOUNT = 11,
	EVENT_MOUNT_SETATTR = 12,
	EVENT_FAILURE = 13,
	/* Never sent by the kernel: the reader synthesizes it when the lost
	 * counters grew, so the loss is in the event stream (and in records). */
	EVENT_LOST = 14,
	EVENT_KIND_MAX = 15,
};

/* Bits of event_header.truncated: which string did not fit. */
enum trunc_bit {
	TRUNC_PATH1 = 1 << 0,	/* source / new_root / from_path / path */
	TRUNC_PATH2 = 1 << 1,	/* target / put_old / to_path */
	TRUNC_FSTYPE = 1 << 2,
	TRUNC_DATA = 1 << 3,
};

struct event_header {
	__u64 ts_ns;		/* bpf_ktime_get_ns: CLOCK_MONOTONIC */
	__u64 cgroup_id;
	__s64 ret;		/* syscall return value; 0 for fork/exit */
	__u32 kind;		/* enum event_kind */
	__u32 tgid;
	__u32 tid;
	__u32 ptgid;		/* real parent's tgid */
	__u32 uid;
	__u32 mntns;		/* caller's mount namespace inode, at exit */
	__s32 syscall_nr;	/* -1 when the event is not a syscall */
	__u32 truncated;	/* enum trunc_bit */
	char comm[TASK_COMM_LEN];
};

struct mount_event {
	struct event_header hdr;
	__u64 flags;
	char fstype[FSTYPE_LEN];
	char source[PATH_LEN];
	char target[PATH_LEN];
	char data[DATA_LEN];
};

struct umount_event {
	struct event_header hdr;
	__u64 flags;
	/*
	 * On -EBUSY, the mount ids of the caller's cwd and root: a shell that
	 * runs umount from inside the mount pins it through the cwd umount
	 * inherits, and exits before /proc can show it. 0 otherwise.
	 */
	__s32 cwd_mnt_id;
	__s32 root_mnt_id;
	char target[PATH_LEN];
};

/* unshare(2) and setns(2). */
struct ns_event {
	struct event_header hdr;
	__u64 flags;		/* unshare flags, or setns nstype */
	__s32 fd;		/* setns fd; -1 for unshare */
	__u32 mntns_before;
	__u32 mntns_after;
	__u32 target_ino;	/* inode the setns fd refers to (nsfs) */
};

/* A process created in a mount namespace other than its parent's. */
struct fork_event {
	struct event_header hdr;	/* the parent */
	__u32 child_tgid;
	__u32 child_tid;
	__u32 parent_mntns;
	__u32 child_mntns;
};

/*
 * task_mntns_map's value: a task's mount namespace as last seen, and its
 * thread group, so userspace can list the processes forked under tracing
 * and where they are without listing /proc.
 */
struct task_ns {
	__u32 mntns;
	__u32 tgid;
};

/* A thread-group leader exited. */
struct exit_event {
	struct event_header hdr;
	__s32 exit_code;
	__u32 _pad;
};

struct pivot_root_event {
	struct event_header hdr;
	char new_root[PATH_LEN];
	char put_old[PATH_LEN];
};

struct open_tree_event {
	struct event_header hdr;
	__u64 flags;
	__s32 dfd;
	__s32 mnt_id;		/* mount id of the returned tree, or 0 */
	char path[PATH_LEN];
};

struct move_mount_event {
	struct event_header hdr;
	__u64 flags;
	__s32 from_dfd;
	__s32 to_dfd;
	__s32 mnt_id;		/* mount id behind from_dfd, or 0 */
	__u32 _pad;
	char from_path[PATH_LEN];
	char to_path[PATH_LEN];
};

struct fsopen_event {
	struct event_header hdr;
	__u64 flags;
	char fstype[FSTYPE_LEN];
};

struct fsmount_event {
	struct event_header hdr;
	__u64 flags;
	__u64 attr_flags;
	__s32 fs_fd;
	__s32 mnt_id;		/* mount id of the returned mount, or 0 */
};

struct mount_setattr_event {
	struct event_header hdr;
	__u64 flags;
	__u64 attr_set;
	__u64 attr_clr;
	__u64 propagation;
	__s32 dfd;
	__u32 _pad;
	char path[PATH_LEN];
};

/*
 * Any other syscall that failed in a way that points at a mount: EBUSY from
 * anything (open O_EXCL of a block device, rmdir/unlinkat of a mountpoint,
 * ioctl, a write to sysfs). path is the path argument made absolute, or the
 * path of the fd argument; rdev is the fd's block device (kernel dev_t).
 */
struct failure_event {
	struct event_header hdr;
	__s32 fd;		/* fd argument, or -1 */
	__u32 rdev;		/* block device behind fd (kernel encoding), or 0 */
	__u32 dev;		/* device of the filesystem holding fd, or 0 */
	__u32 cmdline_len;	/* bytes of cmdline used */
	char path[PATH_LEN];
	/* The caller's command line, read in its own context: a failing tool
	 * (mkfs.ext4) is often gone before userspace could read /proc. */
	char cmdline[CMDLINE_LEN];
	/* What names the device a teardown call was about: for a write to a
	 * sysfs file, its first bytes ("1\n" to zram-control/hot_remove, "3"
	 * to rbd/remove_single_major); for a device-mapper ioctl, the struct
	 * dm_ioctl (dev, name, uuid). Empty for anything else. */
	__u32 ioctl_cmd;	/* ioctl: the request number */
	__u32 payload_len;	/* bytes of payload used */
	__u8 payload[PAYLOAD_LEN];
};

#endif /* __MNTLEAK_H__ */

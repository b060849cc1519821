// SPDX-License-Identifier: GPL-2.0
/*
 * The catch-all: any syscall that returns -EBUSY. The dispatcher
 * (dispatch.bpf.c) tail-calls this handler only for a syscall without a
 * handler of its own that returned -EBUSY, so a successful unlinkat, rmdir
 * or openat never gets here.
 *
 * The arguments are read back from the saved user registers (pt_regs), so no
 * entry program and no per-thread state are needed. Syscalls traced by the
 * dedicated handlers (mount.bpf.c, newmount.bpf.c, nsproc.bpf.c) are skipped
 * here too, should one of their slots be empty; their events already carry
 * the return value.
 *
 * Syscall numbers come from syscall_nr.h (generated per arch); a syscall the
 * arch lacks (arm64 has no open, mkdir, rmdir...) is left out with #ifdef.
 */
#include "path.bpf.h"

const struct failure_event *unused_failure_event __attribute__((unused));

#define S_IFMT 00170000
#define S_IFBLK 0060000
#define SYSFS_MAGIC 0x62656572
#define DM_IOCTL_TYPE 0xfd	/* _IOC_TYPE of device-mapper's ioctls */
#define SYSFS_PAYLOAD 64	/* bytes kept of a sysfs write */

/*
 * The payload of a teardown call: a write to a sysfs file (the device id
 * written to zram-control/hot_remove, rbd/remove, block/NAME/reset), or a
 * device-mapper ioctl's struct dm_ioctl. Only failing calls get here, and
 * only these two shapes are read: no other write's data leaves the kernel.
 */
static __always_inline void read_payload(struct failure_event *e, struct pt_regs *regs,
					 long nr, struct file *file)
{
	__u64 len = 0;

	if (nr == NR_write || nr == NR_pwrite64) {
		if (BPF_CORE_READ(file, f_inode, i_sb, s_magic) != SYSFS_MAGIC)
			return;
		len = SC_ARG2(regs);
		if (len > SYSFS_PAYLOAD)
			len = SYSFS_PAYLOAD;
		asm volatile("%[len] &= 0x7f" : [len] "+r"(len));
		if (len > 0 && bpf_probe_read_user(e->payload, len, (void *)SC_ARG1(regs)) == 0)
			e->payload_len = len;
	} else if (nr == NR_ioctl) {
		__u32 cmd = (__u32)SC_ARG1(regs);

		if (((cmd >> 8) & 0xff) != DM_IOCTL_TYPE)
			return;
		e->ioctl_cmd = cmd;
		if (bpf_probe_read_user(e->payload, PAYLOAD_LEN, (void *)SC_ARG2(regs)) == 0)
			e->payload_len = PAYLOAD_LEN;
	}
}

/* Where the object of a failing syscall is. */
enum arg_kind {
	ARG_NONE = 0,
	ARG_PATH0,		/* arg0 is a path, relative to the cwd */
	ARG_DIRFD0_PATH1,	/* arg0 is a dirfd, arg1 a path relative to it */
	ARG_FD0,		/* arg0 is an fd */
	ARG_OWNED,		/* reported by a dedicated program */
};

static __always_inline enum arg_kind classify(long nr)
{
	switch (nr) {
#ifdef NR_open
	case NR_open:
#endif
	case NR_truncate:
	case NR_chdir:
#ifdef NR_rename
	case NR_rename:
#endif
#ifdef NR_mkdir
	case NR_mkdir:
#endif
#ifdef NR_rmdir
	case NR_rmdir:
#endif
#ifdef NR_creat
	case NR_creat:
#endif
#ifdef NR_link
	case NR_link:
#endif
#ifdef NR_unlink
	case NR_unlink:
#endif
	case NR_chroot:
	case NR_acct:
	case NR_swapon:
	case NR_swapoff:
		return ARG_PATH0;
	case NR_openat:
	case NR_mkdirat:
	case NR_unlinkat:
	case NR_renameat:
	case NR_linkat:
	case NR_renameat2:
	case NR_openat2:
		return ARG_DIRFD0_PATH1;
	case NR_read:
	case NR_write:
	case NR_close:
	case NR_ioctl:
	case NR_pwrite64:
	case NR_writev:
	case NR_flock:
	case NR_fsync:
	case NR_fdatasync:
	case NR_ftruncate:
	case NR_fallocate:
	case NR_pwritev:
	case NR_syncfs:
	case NR_finit_module:
	case NR_pwritev2:
	case NR_fsconfig:
		return ARG_FD0;
	case NR_pivot_root:
	case NR_mount:
	case NR_umount2:
	case NR_unshare:
	case NR_setns:
	case NR_open_tree:
	case NR_move_mount:
	case NR_fsopen:
	case NR_fsmount:
	case NR_mount_setattr:
		return ARG_OWNED;
	}
	return ARG_NONE;
}

SYSCALL_HANDLER(failure_exit)
{
	struct failure_event *e;
	enum arg_kind kind;
	long nr = SC_NR(regs);

	if (ret != -EBUSY)
		return 0;
	kind = classify(nr);
	if (kind == ARG_OWNED)
		return 0;

	e = reserve_event(sizeof(*e), EVENT_FAILURE);
	if (!e)
		return 0;
	fill_header(&e->hdr, EVENT_FAILURE, (__s32)nr, -EBUSY);
	e->fd = -1;
	e->rdev = 0;
	e->dev = 0;
	e->path[0] = 0;
	e->cmdline_len = 0;
	e->ioctl_cmd = 0;
	e->payload_len = 0;
	{
		struct mm_struct *mm = BPF_CORE_READ(current_task(), mm);
		unsigned long start = BPF_CORE_READ(mm, arg_start);
		unsigned long end = BPF_CORE_READ(mm, arg_end);
		__u64 len = end > start ? end - start : 0;

		if (len > CMDLINE_LEN - 1)
			len = CMDLINE_LEN - 1;
		/* A barrier so clang keeps the mask the verifier needs to see. */
		asm volatile("%[len] &= 0xff" : [len] "+r"(len));
		if (len > 0 && bpf_probe_read_user(e->cmdline, len, (void *)start) == 0)
			e->cmdline_len = len;
	}

	if (kind == ARG_PATH0) {
		if (resolve_user_path(e->path, AT_FDCWD, (const char *)SC_ARG0(regs)))
			e->hdr.truncated = TRUNC_PATH1;
	} else if (kind == ARG_DIRFD0_PATH1) {
		if (resolve_user_path(e->path, (int)SC_ARG0(regs),
				      (const char *)SC_ARG1(regs)))
			e->hdr.truncated = TRUNC_PATH1;
	} else if (kind == ARG_FD0) {
		int fd = (int)SC_ARG0(regs);
		struct file *file = task_fd_file(current_task(), fd);

		e->fd = fd;
		if (file) {
			struct inode *inode = BPF_CORE_READ(file, f_inode);

			if ((BPF_CORE_READ(inode, i_mode) & S_IFMT) == S_IFBLK)
				e->rdev = BPF_CORE_READ(inode, i_rdev);
			e->dev = BPF_CORE_READ(inode, i_sb, s_dev);
			if (resolve_fd_path(e->path, file))
				e->hdr.truncated = TRUNC_PATH1;
			read_payload(e, regs, nr, file);
		}
	}
	submit_event(ctx, e, sizeof(*e));
	return 0;
}

char LICENSE[] SEC("license") = "GPL";

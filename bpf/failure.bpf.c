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
 * Syscall numbers are x86_64's: the objects are generated for amd64 only.
 */
#include "path.bpf.h"

const struct failure_event *unused_failure_event __attribute__((unused));

#define S_IFMT 00170000
#define S_IFBLK 0060000

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
	case 2:   /* open */
	case 76:  /* truncate */
	case 80:  /* chdir */
	case 82:  /* rename */
	case 83:  /* mkdir */
	case 84:  /* rmdir */
	case 85:  /* creat */
	case 86:  /* link */
	case 87:  /* unlink */
	case 161: /* chroot */
	case 163: /* acct */
	case 167: /* swapon */
	case 168: /* swapoff */
		return ARG_PATH0;
	case 257: /* openat */
	case 258: /* mkdirat */
	case 263: /* unlinkat */
	case 264: /* renameat */
	case 265: /* linkat */
	case 316: /* renameat2 */
	case 437: /* openat2 */
		return ARG_DIRFD0_PATH1;
	case 0:   /* read */
	case 1:   /* write */
	case 3:   /* close */
	case 16:  /* ioctl */
	case 18:  /* pwrite64 */
	case 20:  /* writev */
	case 73:  /* flock */
	case 74:  /* fsync */
	case 75:  /* fdatasync */
	case 77:  /* ftruncate */
	case 285: /* fallocate */
	case 296: /* pwritev */
	case 306: /* syncfs */
	case 313: /* finit_module */
	case 328: /* pwritev2 */
	case 431: /* fsconfig */
		return ARG_FD0;
	case 155: /* pivot_root */
	case 165: /* mount */
	case 166: /* umount2 */
	case 272: /* unshare */
	case 308: /* setns */
	case 428: /* open_tree */
	case 429: /* move_mount */
	case 430: /* fsopen */
	case 432: /* fsmount */
	case 442: /* mount_setattr */
		return ARG_OWNED;
	}
	return ARG_NONE;
}

SYSCALL_HANDLER(failure_exit)
{
	struct failure_event *e;
	enum arg_kind kind;
	long nr = regs->orig_ax;

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
		if (resolve_user_path(e->path, AT_FDCWD, (const char *)regs->di))
			e->hdr.truncated = TRUNC_PATH1;
	} else if (kind == ARG_DIRFD0_PATH1) {
		if (resolve_user_path(e->path, (int)regs->di,
				      (const char *)regs->si))
			e->hdr.truncated = TRUNC_PATH1;
	} else if (kind == ARG_FD0) {
		int fd = (int)regs->di;
		struct file *file = task_fd_file(current_task(), fd);

		e->fd = fd;
		if (file) {
			struct inode *inode = BPF_CORE_READ(file, f_inode);

			if ((BPF_CORE_READ(inode, i_mode) & S_IFMT) == S_IFBLK)
				e->rdev = BPF_CORE_READ(inode, i_rdev);
			e->dev = BPF_CORE_READ(inode, i_sb, s_dev);
			if (resolve_fd_path(e->path, file))
				e->hdr.truncated = TRUNC_PATH1;
		}
	}
	submit_event(ctx, e, sizeof(*e));
	return 0;
}

char LICENSE[] SEC("license") = "GPL";

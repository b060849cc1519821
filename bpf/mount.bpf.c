// SPDX-License-Identifier: GPL-2.0
/*
 * The classic mount syscalls: mount(2), umount2(2), pivot_root(2).
 * Every call is reported, successful or not: the return value is part of
 * the event (umount2 -> EINVAL and mount -> ENOENT are failures mntleak
 * explains).
 *
 * Each handler runs at the syscall's exit (see dispatch.bpf.c) and reads
 * the arguments from the saved user registers; paths are resolved then.
 */
#include "path.bpf.h"
#include "pack.bpf.h"

/* bpf2go -type needs each exported struct referenced in the object. */
const struct mount_event *unused_mount_event __attribute__((unused));
const struct umount_event *unused_umount_event __attribute__((unused));
const struct pivot_root_event *unused_pivot_root_event __attribute__((unused));

/* Each record goes out packed (pack.bpf.h): its fixed part, then its strings. */
static __always_inline void submit_mount(void *ctx, struct mount_event *e)
{
	struct packer p;

	pack_begin(&p, e, offsetof(struct mount_event, fstype));
	pack_str(&p, e->fstype, sizeof(e->fstype));
	pack_str(&p, e->source, sizeof(e->source));
	pack_str(&p, e->target, sizeof(e->target));
	pack_str(&p, e->data, sizeof(e->data));
	pack_submit(ctx, &p, EVENT_MOUNT);
}

static __always_inline void submit_umount(void *ctx, struct umount_event *e)
{
	struct packer p;

	pack_begin(&p, e, offsetof(struct umount_event, target));
	pack_str(&p, e->target, sizeof(e->target));
	pack_submit(ctx, &p, EVENT_UMOUNT);
}

static __always_inline void submit_pivot_root(void *ctx, struct pivot_root_event *e)
{
	struct packer p;

	pack_begin(&p, e, offsetof(struct pivot_root_event, new_root));
	pack_str(&p, e->new_root, sizeof(e->new_root));
	pack_str(&p, e->put_old, sizeof(e->put_old));
	pack_submit(ctx, &p, EVENT_PIVOT_ROOT);
}

/* mount(source, target, fstype, flags, data) */
SYSCALL_HANDLER(mount_exit)
{
	struct mount_event *e;
	__u32 trunc = 0;

	e = stage_event(EVENT_MOUNT);
	if (!e)
		return 0;
	fill_header(&e->hdr, EVENT_MOUNT, (__s32)SC_NR(regs), ret);
	e->flags = SC_ARG3(regs);
	if (read_user_str(e->fstype, sizeof(e->fstype), (const char *)SC_ARG2(regs)))
		trunc |= TRUNC_FSTYPE;
	/* The source is a path only for binds and moves; else a device name. */
	if (e->flags & (MS_BIND | MS_MOVE)) {
		if (resolve_user_path(e->source, AT_FDCWD, (const char *)SC_ARG0(regs)))
			trunc |= TRUNC_PATH1;
	} else if (read_user_str(e->source, sizeof(e->source), (const char *)SC_ARG0(regs))) {
		trunc |= TRUNC_PATH1;
	}
	if (resolve_user_path(e->target, AT_FDCWD, (const char *)SC_ARG1(regs)))
		trunc |= TRUNC_PATH2;
	if (read_user_str(e->data, sizeof(e->data), (const char *)SC_ARG4(regs)))
		trunc |= TRUNC_DATA;
	e->hdr.truncated = trunc;
	submit_mount(ctx, e);
	return 0;
}

/* umount2(target, flags) */
SYSCALL_HANDLER(umount_exit)
{
	struct umount_event *e;

	e = stage_event(EVENT_UMOUNT);
	if (!e)
		return 0;
	fill_header(&e->hdr, EVENT_UMOUNT, (__s32)SC_NR(regs), ret);
	e->flags = SC_ARG1(regs);
	e->cwd_mnt_id = 0;
	e->root_mnt_id = 0;
	if (ret == -EBUSY) {
		struct task_struct *task = current_task();
		struct vfsmount *cwd = BPF_CORE_READ(task, fs, pwd.mnt);
		struct vfsmount *root = BPF_CORE_READ(task, fs, root.mnt);

		if (cwd)
			e->cwd_mnt_id = BPF_CORE_READ(real_mount(cwd), mnt_id);
		if (root)
			e->root_mnt_id = BPF_CORE_READ(real_mount(root), mnt_id);
	}
	if (resolve_user_path(e->target, AT_FDCWD, (const char *)SC_ARG0(regs)))
		e->hdr.truncated = TRUNC_PATH2;
	submit_umount(ctx, e);
	return 0;
}

/*
 * pivot_root(new_root, put_old). The paths are resolved at exit, against
 * the caller's root and cwd as they are after the call: a successful
 * pivot_root has moved both to new_root, so the paths are as seen from
 * inside the new root. runc's pivot_root(".", ".") from the new root is
 * reported as new_root "/" and put_old "/"; absolute paths are kept as
 * given. A failed call changed nothing: its paths are as at entry.
 */
SYSCALL_HANDLER(pivot_root_exit)
{
	struct pivot_root_event *e;
	__u32 trunc = 0;

	e = stage_event(EVENT_PIVOT_ROOT);
	if (!e)
		return 0;
	fill_header(&e->hdr, EVENT_PIVOT_ROOT, (__s32)SC_NR(regs), ret);
	if (resolve_user_path(e->new_root, AT_FDCWD, (const char *)SC_ARG0(regs)))
		trunc |= TRUNC_PATH1;
	if (resolve_user_path(e->put_old, AT_FDCWD, (const char *)SC_ARG1(regs)))
		trunc |= TRUNC_PATH2;
	e->hdr.truncated = trunc;
	submit_pivot_root(ctx, e);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";

// SPDX-License-Identifier: GPL-2.0
/*
 * The new mount API: open_tree(2), move_mount(2), fsopen(2), fsmount(2),
 * mount_setattr(2). A clone made by open_tree(OPEN_TREE_CLONE|AT_RECURSIVE)
 * and attached by move_mount is the same leak as mount(MS_BIND|MS_REC), so
 * both events carry the mount id of the tree to tie them together.
 */
#include "path.bpf.h"
#include "pack.bpf.h"

const struct open_tree_event *unused_open_tree_event __attribute__((unused));
const struct move_mount_event *unused_move_mount_event __attribute__((unused));
const struct fsopen_event *unused_fsopen_event __attribute__((unused));
const struct fsmount_event *unused_fsmount_event __attribute__((unused));
const struct mount_setattr_event *unused_mount_setattr_event __attribute__((unused));

/* Each record goes out packed (pack.bpf.h): its fixed part, then its strings. */
static __always_inline void submit_open_tree(void *ctx, struct open_tree_event *e)
{
	struct packer p;

	pack_begin(&p, e, offsetof(struct open_tree_event, path));
	pack_str(&p, e->path, sizeof(e->path));
	pack_submit(ctx, &p, EVENT_OPEN_TREE);
}

static __always_inline void submit_move_mount(void *ctx, struct move_mount_event *e)
{
	struct packer p;

	pack_begin(&p, e, offsetof(struct move_mount_event, from_path));
	pack_str(&p, e->from_path, sizeof(e->from_path));
	pack_str(&p, e->to_path, sizeof(e->to_path));
	pack_submit(ctx, &p, EVENT_MOVE_MOUNT);
}

static __always_inline void submit_fsopen(void *ctx, struct fsopen_event *e)
{
	struct packer p;

	pack_begin(&p, e, offsetof(struct fsopen_event, fstype));
	pack_str(&p, e->fstype, sizeof(e->fstype));
	pack_submit(ctx, &p, EVENT_FSOPEN);
}

static __always_inline void submit_mount_setattr(void *ctx, struct mount_setattr_event *e)
{
	struct packer p;

	pack_begin(&p, e, offsetof(struct mount_setattr_event, path));
	pack_str(&p, e->path, sizeof(e->path));
	pack_submit(ctx, &p, EVENT_MOUNT_SETATTR);
}

/* struct mount_attr from include/uapi/linux/mount.h (MOUNT_ATTR_SIZE_VER0). */
struct user_mount_attr {
	__u64 attr_set;
	__u64 attr_clr;
	__u64 propagation;
	__u64 userns_fd;
};

/* open_tree(dfd, path, flags) */
SYSCALL_HANDLER(open_tree_exit)
{
	struct open_tree_event *e;

	e = stage_event(EVENT_OPEN_TREE);
	if (!e)
		return 0;
	fill_header(&e->hdr, EVENT_OPEN_TREE, (__s32)SC_NR(regs), ret);
	e->dfd = (__s32)SC_ARG0(regs);
	e->flags = SC_ARG2(regs);
	e->mnt_id = ret >= 0 ? fd_mnt_id((int)ret) : 0;
	if (resolve_user_path(e->path, e->dfd, (const char *)SC_ARG1(regs)))
		e->hdr.truncated = TRUNC_PATH1;
	submit_open_tree(ctx, e);
	return 0;
}

/* move_mount(from_dfd, from_path, to_dfd, to_path, flags) */
SYSCALL_HANDLER(move_mount_exit)
{
	struct move_mount_event *e;
	__u32 trunc = 0;

	e = stage_event(EVENT_MOVE_MOUNT);
	if (!e)
		return 0;
	fill_header(&e->hdr, EVENT_MOVE_MOUNT, (__s32)SC_NR(regs), ret);
	e->from_dfd = (__s32)SC_ARG0(regs);
	e->to_dfd = (__s32)SC_ARG2(regs);
	e->flags = SC_ARG4(regs);
	e->_pad = 0;
	e->mnt_id = (e->flags & MOVE_MOUNT_F_EMPTY_PATH) ? fd_mnt_id(e->from_dfd) : 0;
	if (resolve_user_path(e->from_path, e->from_dfd, (const char *)SC_ARG1(regs)))
		trunc |= TRUNC_PATH1;
	if (resolve_user_path(e->to_path, e->to_dfd, (const char *)SC_ARG3(regs)))
		trunc |= TRUNC_PATH2;
	e->hdr.truncated = trunc;
	submit_move_mount(ctx, e);
	return 0;
}

/* fsopen(fstype, flags) */
SYSCALL_HANDLER(fsopen_exit)
{
	struct fsopen_event *e;

	e = stage_event(EVENT_FSOPEN);
	if (!e)
		return 0;
	fill_header(&e->hdr, EVENT_FSOPEN, (__s32)SC_NR(regs), ret);
	e->flags = SC_ARG1(regs);
	if (read_user_str(e->fstype, sizeof(e->fstype), (const char *)SC_ARG0(regs)))
		e->hdr.truncated = TRUNC_FSTYPE;
	submit_fsopen(ctx, e);
	return 0;
}

/* fsmount(fs_fd, flags, attr_flags) */
SYSCALL_HANDLER(fsmount_exit)
{
	struct fsmount_event *e;

	e = reserve_event(sizeof(*e), EVENT_FSMOUNT);
	if (!e)
		return 0;
	fill_header(&e->hdr, EVENT_FSMOUNT, (__s32)SC_NR(regs), ret);
	e->fs_fd = (__s32)SC_ARG0(regs);
	e->flags = SC_ARG1(regs);
	e->attr_flags = SC_ARG2(regs);
	e->mnt_id = ret >= 0 ? fd_mnt_id((int)ret) : 0;
	submit_event(ctx, e, sizeof(*e));
	return 0;
}

/* mount_setattr(dfd, path, flags, uattr, usize) */
SYSCALL_HANDLER(mount_setattr_exit)
{
	struct user_mount_attr attr = {};
	struct mount_setattr_event *e;
	__u64 uattr = SC_ARG3(regs), usize = SC_ARG4(regs);

	e = stage_event(EVENT_MOUNT_SETATTR);
	if (!e)
		return 0;
	fill_header(&e->hdr, EVENT_MOUNT_SETATTR, (__s32)SC_NR(regs), ret);
	e->dfd = (__s32)SC_ARG0(regs);
	e->flags = SC_ARG2(regs);
	e->_pad = 0;
	if (uattr && usize >= sizeof(attr))
		bpf_probe_read_user(&attr, sizeof(attr), (void *)uattr);
	e->attr_set = attr.attr_set;
	e->attr_clr = attr.attr_clr;
	e->propagation = attr.propagation;
	if (resolve_user_path(e->path, e->dfd, (const char *)SC_ARG1(regs)))
		e->hdr.truncated = TRUNC_PATH1;
	submit_mount_setattr(ctx, e);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";

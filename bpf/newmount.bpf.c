// SPDX-License-Identifier: GPL-2.0
/*
 * The new mount API: open_tree(2), move_mount(2), fsopen(2), fsmount(2),
 * mount_setattr(2). A clone made by open_tree(OPEN_TREE_CLONE|AT_RECURSIVE)
 * and attached by move_mount is the same leak as mount(MS_BIND|MS_REC), so
 * both events carry the mount id of the tree to tie them together.
 */
#include "path.bpf.h"

const struct open_tree_event *unused_open_tree_event __attribute__((unused));
const struct move_mount_event *unused_move_mount_event __attribute__((unused));
const struct fsopen_event *unused_fsopen_event __attribute__((unused));
const struct fsmount_event *unused_fsmount_event __attribute__((unused));
const struct mount_setattr_event *unused_mount_setattr_event __attribute__((unused));

/* struct mount_attr from include/uapi/linux/mount.h (MOUNT_ATTR_SIZE_VER0). */
struct user_mount_attr {
	__u64 attr_set;
	__u64 attr_clr;
	__u64 propagation;
	__u64 userns_fd;
};

SEC("tracepoint/syscalls/sys_enter_open_tree")
int open_tree_enter(struct trace_event_raw_sys_enter *ctx)
{
	return save_args(ctx, 3);
}

SEC("tracepoint/syscalls/sys_exit_open_tree")
int open_tree_exit(struct trace_event_raw_sys_exit *ctx)
{
	struct open_tree_event *e;
	struct enter_state st;

	if (!take_args(&st))
		return 0;
	e = reserve_event(sizeof(*e), EVENT_OPEN_TREE);
	if (!e)
		return 0;
	fill_header(&e->hdr, EVENT_OPEN_TREE, st.nr, ctx->ret);
	e->dfd = (__s32)st.args[0];
	e->flags = st.args[2];
	e->mnt_id = ctx->ret >= 0 ? fd_mnt_id((int)ctx->ret) : 0;
	if (resolve_user_path(e->path, e->dfd, (const char *)st.args[1]))
		e->hdr.truncated = TRUNC_PATH1;
	submit_event(ctx, e, sizeof(*e));
	return 0;
}

SEC("tracepoint/syscalls/sys_enter_move_mount")
int move_mount_enter(struct trace_event_raw_sys_enter *ctx)
{
	return save_args(ctx, 5);
}

SEC("tracepoint/syscalls/sys_exit_move_mount")
int move_mount_exit(struct trace_event_raw_sys_exit *ctx)
{
	struct move_mount_event *e;
	struct enter_state st;
	__u32 trunc = 0;

	if (!take_args(&st))
		return 0;
	e = reserve_event(sizeof(*e), EVENT_MOVE_MOUNT);
	if (!e)
		return 0;
	fill_header(&e->hdr, EVENT_MOVE_MOUNT, st.nr, ctx->ret);
	e->from_dfd = (__s32)st.args[0];
	e->to_dfd = (__s32)st.args[2];
	e->flags = st.args[4];
	e->_pad = 0;
	e->mnt_id = (e->flags & MOVE_MOUNT_F_EMPTY_PATH) ? fd_mnt_id(e->from_dfd) : 0;
	if (resolve_user_path(e->from_path, e->from_dfd, (const char *)st.args[1]))
		trunc |= TRUNC_PATH1;
	if (resolve_user_path(e->to_path, e->to_dfd, (const char *)st.args[3]))
		trunc |= TRUNC_PATH2;
	e->hdr.truncated = trunc;
	submit_event(ctx, e, sizeof(*e));
	return 0;
}

SEC("tracepoint/syscalls/sys_enter_fsopen")
int fsopen_enter(struct trace_event_raw_sys_enter *ctx)
{
	return save_args(ctx, 2);
}

SEC("tracepoint/syscalls/sys_exit_fsopen")
int fsopen_exit(struct trace_event_raw_sys_exit *ctx)
{
	struct fsopen_event *e;
	struct enter_state st;

	if (!take_args(&st))
		return 0;
	e = reserve_event(sizeof(*e), EVENT_FSOPEN);
	if (!e)
		return 0;
	fill_header(&e->hdr, EVENT_FSOPEN, st.nr, ctx->ret);
	e->flags = st.args[1];
	if (read_user_str(e->fstype, sizeof(e->fstype), (const char *)st.args[0]))
		e->hdr.truncated = TRUNC_FSTYPE;
	submit_event(ctx, e, sizeof(*e));
	return 0;
}

SEC("tracepoint/syscalls/sys_enter_fsmount")
int fsmount_enter(struct trace_event_raw_sys_enter *ctx)
{
	return save_args(ctx, 3);
}

SEC("tracepoint/syscalls/sys_exit_fsmount")
int fsmount_exit(struct trace_event_raw_sys_exit *ctx)
{
	struct fsmount_event *e;
	struct enter_state st;

	if (!take_args(&st))
		return 0;
	e = reserve_event(sizeof(*e), EVENT_FSMOUNT);
	if (!e)
		return 0;
	fill_header(&e->hdr, EVENT_FSMOUNT, st.nr, ctx->ret);
	e->fs_fd = (__s32)st.args[0];
	e->flags = st.args[1];
	e->attr_flags = st.args[2];
	e->mnt_id = ctx->ret >= 0 ? fd_mnt_id((int)ctx->ret) : 0;
	submit_event(ctx, e, sizeof(*e));
	return 0;
}

SEC("tracepoint/syscalls/sys_enter_mount_setattr")
int mount_setattr_enter(struct trace_event_raw_sys_enter *ctx)
{
	return save_args(ctx, 5);
}

SEC("tracepoint/syscalls/sys_exit_mount_setattr")
int mount_setattr_exit(struct trace_event_raw_sys_exit *ctx)
{
	struct user_mount_attr attr = {};
	struct mount_setattr_event *e;
	struct enter_state st;

	if (!take_args(&st))
		return 0;
	e = reserve_event(sizeof(*e), EVENT_MOUNT_SETATTR);
	if (!e)
		return 0;
	fill_header(&e->hdr, EVENT_MOUNT_SETATTR, st.nr, ctx->ret);
	e->dfd = (__s32)st.args[0];
	e->flags = st.args[2];
	e->_pad = 0;
	if (st.args[3] && st.args[4] >= sizeof(attr))
		bpf_probe_read_user(&attr, sizeof(attr), (void *)st.args[3]);
	e->attr_set = attr.attr_set;
	e->attr_clr = attr.attr_clr;
	e->propagation = attr.propagation;
	if (resolve_user_path(e->path, e->dfd, (const char *)st.args[1]))
		e->hdr.truncated = TRUNC_PATH1;
	submit_event(ctx, e, sizeof(*e));
	return 0;
}

char LICENSE[] SEC("license") = "GPL";

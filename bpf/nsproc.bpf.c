// SPDX-License-Identifier: GPL-2.0
/*
 * Mount-namespace lineage: unshare(2) and setns(2) with the namespace before
 * and after, processes born into a new mount namespace, and the exit of
 * thread-group leaders (so userspace knows when a namespace lost its last
 * member).
 */
#include "common.bpf.h"

const struct ns_event *unused_ns_event __attribute__((unused));
const struct fork_event *unused_fork_event __attribute__((unused));
const struct exit_event *unused_exit_event __attribute__((unused));

/* Only calls that can touch the mount namespace are worth a map entry. */
SEC("tracepoint/syscalls/sys_enter_unshare")
int unshare_enter(struct trace_event_raw_sys_enter *ctx)
{
	if (!(ctx->args[0] & CLONE_NEWNS))
		return 0;
	return save_args(ctx, 1);
}

/* nstype 0 accepts any namespace fd; a pidfd may carry CLONE_NEWNS. */
SEC("tracepoint/syscalls/sys_enter_setns")
int setns_enter(struct trace_event_raw_sys_enter *ctx)
{
	__u64 nstype = ctx->args[1];

	if (nstype != 0 && !(nstype & CLONE_NEWNS))
		return 0;
	return save_args(ctx, 2);
}

static __always_inline int ns_exit(struct trace_event_raw_sys_exit *ctx, __u32 kind)
{
	struct task_struct *task = current_task();
	struct enter_state st;
	struct ns_event *e;
	__u32 after;

	if (!take_args(&st))
		return 0;
	after = task_mntns(task);
	/* setns(fd, 0) into some other kind of namespace: not ours. */
	if (kind == EVENT_SETNS && st.args[1] == 0 && after == st.mntns_before)
		return 0;
	e = reserve_event(sizeof(*e), kind);
	if (!e)
		return 0;
	fill_header(&e->hdr, kind, st.nr, ctx->ret);
	e->mntns_before = st.mntns_before;
	e->mntns_after = after;
	if (kind == EVENT_SETNS) {
		struct file *file = NULL;
		struct file **fds = BPF_CORE_READ(task, files, fdt, fd);
		__s32 fd = (__s32)st.args[0];

		e->flags = st.args[1];
		e->fd = fd;
		e->target_ino = 0;
		if (fd >= 0 && (unsigned int)fd < BPF_CORE_READ(task, files, fdt, max_fds)) {
			bpf_probe_read_kernel(&file, sizeof(file), &fds[fd]);
			if (file)
				e->target_ino = (__u32)BPF_CORE_READ(file, f_inode, i_ino);
		}
	} else {
		e->flags = st.args[0];
		e->fd = -1;
		e->target_ino = 0;
	}
	submit_event(ctx, e, sizeof(*e));
	return 0;
}

SEC("tracepoint/syscalls/sys_exit_unshare")
int unshare_exit(struct trace_event_raw_sys_exit *ctx)
{
	return ns_exit(ctx, EVENT_UNSHARE);
}

SEC("tracepoint/syscalls/sys_exit_setns")
int setns_exit(struct trace_event_raw_sys_exit *ctx)
{
	return ns_exit(ctx, EVENT_SETNS);
}

/*
 * clone/clone3/fork with CLONE_NEWNS: the flags are not visible here, but
 * the child's namespace already differs from the parent's when the
 * tracepoint fires (copy_process has run). Threads share the namespace, so
 * the comparison is cheap and exact.
 */
SEC("raw_tracepoint/sched_process_fork")
int newns_fork(struct bpf_raw_tracepoint_args *ctx)
{
	struct task_struct *parent = (struct task_struct *)ctx->args[0];
	struct task_struct *child = (struct task_struct *)ctx->args[1];
	__u32 parent_ns = task_mntns(parent);
	__u32 child_ns = task_mntns(child);
	struct fork_event *e;

	if (parent_ns == child_ns)
		return 0;
	e = reserve_event(sizeof(*e), EVENT_NEWNS_FORK);
	if (!e)
		return 0;
	fill_header(&e->hdr, EVENT_NEWNS_FORK, -1, 0);
	e->child_tgid = BPF_CORE_READ(child, tgid);
	e->child_tid = BPF_CORE_READ(child, pid);
	e->parent_mntns = parent_ns;
	e->child_mntns = child_ns;
	submit_event(ctx, e, sizeof(*e));
	return 0;
}

/* Fires in the exiting task's context, before its namespaces are dropped. */
SEC("raw_tracepoint/sched_process_exit")
int leader_exit(struct bpf_raw_tracepoint_args *ctx)
{
	struct task_struct *task = (struct task_struct *)ctx->args[0];
	struct exit_event *e;

	if (BPF_CORE_READ(task, pid) != BPF_CORE_READ(task, tgid))
		return 0;
	e = reserve_event(sizeof(*e), EVENT_EXIT);
	if (!e)
		return 0;
	fill_header(&e->hdr, EVENT_EXIT, -1, 0);
	e->exit_code = BPF_CORE_READ(task, exit_code);
	e->_pad = 0;
	submit_event(ctx, e, sizeof(*e));
	return 0;
}

char LICENSE[] SEC("license") = "GPL";

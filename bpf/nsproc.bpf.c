// SPDX-License-Identifier: GPL-2.0
/*
 * Mount-namespace lineage: unshare(2) and setns(2) with the namespace before
 * and after, processes born into a new mount namespace, and the exit of
 * thread-group leaders (so userspace knows when a namespace lost its last
 * member), and a count of the changes of processes' cgroups.
 */
#include "common.bpf.h"

const struct ns_event *unused_ns_event __attribute__((unused));
const struct fork_event *unused_fork_event __attribute__((unused));
const struct exit_event *unused_exit_event __attribute__((unused));

/*
 * task_mntns_map's entries added less those deleted: never fewer than it
 * holds, as an LRU eviction deletes one untold. Once it reaches
 * tasks_full_at (set at load: the share of the map's bound below which
 * userspace reads it as every task born under tracing), tasks_full stays
 * set: the map may have evicted a task since, whatever it holds later, and
 * userspace never reads it as complete again (tracer.Tasks).
 */
volatile const __s64 tasks_full_at = TASK_MNTNS_MAX * 9 / 10;
volatile __s64 tasks_added;
volatile __u32 tasks_full;

static __always_inline void task_added(void)
{
	__sync_fetch_and_add(&tasks_added, 1);
	if (tasks_added >= tasks_full_at)
		tasks_full = 1;
}

/*
 * unshare(flags) and setns(fd, nstype), at exit. mntns_before is what
 * task_mntns_map (common.bpf.h) holds for the thread: its namespace when it
 * was forked under tracing, or after its last unshare/setns. With no entry
 * (the thread predates tracing, or the LRU evicted it) it is the current
 * namespace when the call failed, a failed call changing nothing, and else
 * 0: unknown, left to userspace to fill from what it knows of the process.
 * mntns_after is always read at exit.
 */
static __always_inline int ns_exit(void *ctx, struct pt_regs *regs, long ret, __u32 kind)
{
	struct task_struct *task = current_task();
	__u64 arg0 = SC_ARG0(regs), arg1 = SC_ARG1(regs);
	__u32 tid = current_tid(), before = 0, after, target_ino = 0;
	struct task_ns *known, now;
	struct ns_event *e;

	/* Only calls that can touch the mount namespace; nstype 0 accepts any
	 * namespace fd, and a pidfd may carry CLONE_NEWNS. */
	if (kind == EVENT_UNSHARE && !(arg0 & CLONE_NEWNS))
		return 0;
	if (kind == EVENT_SETNS && arg1 != 0 && !(arg1 & CLONE_NEWNS))
		return 0;
	after = task_mntns(task);
	known = bpf_map_lookup_elem(&task_mntns_map, &tid);
	if (known)
		before = known->mntns;
	else if (ret < 0)
		before = after;
	if (!known || before != after) {
		now.mntns = after;
		now.tgid = BPF_CORE_READ(task, tgid);
		bpf_map_update_elem(&task_mntns_map, &tid, &now, BPF_ANY);
		if (!known)
			task_added();
	}
	if (kind == EVENT_SETNS) {
		struct file *file = NULL;
		struct file **fds = BPF_CORE_READ(task, files, fdt, fd);
		__s32 fd = (__s32)arg0;

		if (fd >= 0 && (unsigned int)fd < BPF_CORE_READ(task, files, fdt, max_fds)) {
			bpf_probe_read_kernel(&file, sizeof(file), &fds[fd]);
			if (file)
				target_ino = (__u32)BPF_CORE_READ(file, f_inode, i_ino);
		}
		/* setns(fd, 0) into some other kind of namespace: not ours. With
		 * before unknown, a successful setns into a mount namespace is
		 * the one whose inode the fd names. */
		if (arg1 == 0 && (known ? after == before : after != target_ino))
			return 0;
	}
	e = reserve_event(sizeof(*e), kind);
	if (!e)
		return 0;
	fill_header(&e->hdr, kind, SC_NR(regs), ret);
	e->mntns_before = before;
	e->mntns_after = after;
	e->target_ino = target_ino;
	if (kind == EVENT_SETNS) {
		e->flags = arg1;
		e->fd = (__s32)arg0;
	} else {
		e->flags = arg0;
		e->fd = -1;
	}
	submit_event(ctx, e, sizeof(*e));
	return 0;
}

SYSCALL_HANDLER(unshare_exit)
{
	return ns_exit(ctx, regs, ret, EVENT_UNSHARE);
}

SYSCALL_HANDLER(setns_exit)
{
	return ns_exit(ctx, regs, ret, EVENT_SETNS);
}

/*
 * clone/clone3/fork with CLONE_NEWNS: the flags are not visible here, but
 * the child's namespace already differs from the parent's when the
 * tracepoint fires (copy_process has run). Threads share the namespace, so
 * the comparison is cheap and exact. Every new task's namespace also goes
 * into task_mntns_map, for the unshare/setns handlers.
 */
SEC("raw_tracepoint/sched_process_fork")
int newns_fork(struct bpf_raw_tracepoint_args *ctx)
{
	struct task_struct *parent = (struct task_struct *)ctx->args[0];
	struct task_struct *child = (struct task_struct *)ctx->args[1];
	__u32 parent_ns = task_mntns(parent);
	__u32 child_ns = task_mntns(child);
	__u32 child_tid = BPF_CORE_READ(child, pid);
	struct task_ns now = { .mntns = child_ns, .tgid = BPF_CORE_READ(child, tgid) };
	struct fork_event *e;

	bpf_map_update_elem(&task_mntns_map, &child_tid, &now, BPF_ANY);
	task_added();
	if (parent_ns == child_ns)
		return 0;
	e = reserve_event(sizeof(*e), EVENT_NEWNS_FORK);
	if (!e)
		return 0;
	fill_header(&e->hdr, EVENT_NEWNS_FORK, -1, 0);
	e->child_tgid = BPF_CORE_READ(child, tgid);
	e->child_tid = child_tid;
	e->parent_mntns = parent_ns;
	e->child_mntns = child_ns;
	submit_event(ctx, e, sizeof(*e));
	return 0;
}

/*
 * Set while the daemon's kernel mount notes keep its tables true
 * (Tracer.SetQuietExits): an exit's record then does not wake the reader,
 * which reads it with the next record that does or at its next periodic
 * wakeup. Exits are most of a node's records, and each wakeup costs the
 * daemon more than the record it brings.
 */
volatile __u32 quiet_exits;

/*
 * Fires in the exiting task's context, before its namespaces are dropped.
 * Every thread's task_mntns_map entry goes, so a reused tid starts unknown.
 */
SEC("raw_tracepoint/sched_process_exit")
int leader_exit(struct bpf_raw_tracepoint_args *ctx)
{
	struct task_struct *task = (struct task_struct *)ctx->args[0];
	__u32 tid = BPF_CORE_READ(task, pid);
	struct exit_event *e;

	if (bpf_map_delete_elem(&task_mntns_map, &tid) == 0)
		__sync_fetch_and_add(&tasks_added, -1);
	if (tid != BPF_CORE_READ(task, tgid))
		return 0;
	e = reserve_event(sizeof(*e), EVENT_EXIT);
	if (!e)
		return 0;
	fill_header(&e->hdr, EVENT_EXIT, -1, 0);
	e->exit_code = BPF_CORE_READ(task, exit_code);
	e->_pad = 0;
	submit_event_quiet(ctx, e, sizeof(*e), quiet_exits != 0);
	return 0;
}

/*
 * Every change of what /proc/PID/cgroup says, counted: a task moved into
 * another cgroup (cgroup.procs or tasks written; on cgroup v1 also
 * cgroup_transfer_tasks), or a cgroup renamed. A process born since
 * starts where its parent was, or where clone3's CLONE_INTO_CGROUP put
 * it, and has no path read yet. Userspace keeps each process's cgroup
 * path, read once, while this count stands still (daemon/cgroups.go).
 */
volatile __u64 cgroup_changes;

SEC("raw_tracepoint/cgroup_attach_task")
int cgroup_attach(struct bpf_raw_tracepoint_args *ctx)
{
	__sync_fetch_and_add(&cgroup_changes, 1);
	return 0;
}

SEC("raw_tracepoint/cgroup_transfer_tasks")
int cgroup_transfer(struct bpf_raw_tracepoint_args *ctx)
{
	__sync_fetch_and_add(&cgroup_changes, 1);
	return 0;
}

SEC("raw_tracepoint/cgroup_rename")
int cgroup_renamed(struct bpf_raw_tracepoint_args *ctx)
{
	__sync_fetch_and_add(&cgroup_changes, 1);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";

// SPDX-License-Identifier: GPL-2.0
/*
 * The classic mount syscalls: mount(2), umount2(2), pivot_root(2).
 * Every call is reported, successful or not: the return value is part of
 * the event (umount2 -> EINVAL and mount -> ENOENT are failures mntleak
 * explains).
 */
#include "path.bpf.h"

/* bpf2go -type needs each exported struct referenced in the object. */
const struct mount_event *unused_mount_event __attribute__((unused));
const struct umount_event *unused_umount_event __attribute__((unused));
const struct pivot_root_event *unused_pivot_root_event __attribute__((unused));

SEC("tracepoint/syscalls/sys_enter_mount")
int mount_enter(struct trace_event_raw_sys_enter *ctx)
{
	return save_args(ctx, 5);
}

SEC("tracepoint/syscalls/sys_exit_mount")
int mount_exit(struct trace_event_raw_sys_exit *ctx)
{
	struct enter_state st;
	struct mount_event *e;
	__u32 trunc = 0;

	if (!take_args(&st))
		return 0;
	e = reserve_event(sizeof(*e), EVENT_MOUNT);
	if (!e)
		return 0;
	fill_header(&e->hdr, EVENT_MOUNT, st.nr, ctx->ret);
	e->flags = st.args[3];
	if (read_user_str(e->fstype, sizeof(e->fstype), (const char *)st.args[2]))
		trunc |= TRUNC_FSTYPE;
	/* The source is a path only for binds and moves; else a device name. */
	if (e->flags & (MS_BIND | MS_MOVE)) {
		if (resolve_user_path(e->source, AT_FDCWD, (const char *)st.args[0]))
			trunc |= TRUNC_PATH1;
	} else if (read_user_str(e->source, sizeof(e->source), (const char *)st.args[0])) {
		trunc |= TRUNC_PATH1;
	}
	if (resolve_user_path(e->target, AT_FDCWD, (const char *)st.args[1]))
		trunc |= TRUNC_PATH2;
	if (read_user_str(e->data, sizeof(e->data), (const char *)st.args[4]))
		trunc |= TRUNC_DATA;
	e->hdr.truncated = trunc;
	submit_event(ctx, e, sizeof(*e));
	return 0;
}

SEC("tracepoint/syscalls/sys_enter_umount")
int umount_enter(struct trace_event_raw_sys_enter *ctx)
{
	return save_args(ctx, 2);
}

SEC("tracepoint/syscalls/sys_exit_umount")
int umount_exit(struct trace_event_raw_sys_exit *ctx)
{
	struct enter_state st;
	struct umount_event *e;

	if (!take_args(&st))
		return 0;
	e = reserve_event(sizeof(*e), EVENT_UMOUNT);
	if (!e)
		return 0;
	fill_header(&e->hdr, EVENT_UMOUNT, st.nr, ctx->ret);
	e->flags = st.args[1];
	if (resolve_user_path(e->target, AT_FDCWD, (const char *)st.args[0]))
		e->hdr.truncated = TRUNC_PATH2;
	submit_event(ctx, e, sizeof(*e));
	return 0;
}

/*
 * pivot_root changes what "." and "/" mean, so its paths are resolved at
 * entry (runc calls pivot_root(".", ".") from the new root) and kept per
 * thread until the exit program reports them with the result.
 */
struct pivot_paths {
	char new_root[PATH_LEN];
	char put_old[PATH_LEN];
	__u32 truncated;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, struct pivot_paths);
} pivot_state SEC(".maps");

/* Staging for pivot_paths, too large for the BPF stack. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct pivot_paths);
} pivot_staging SEC(".maps");

SEC("tracepoint/syscalls/sys_enter_pivot_root")
int pivot_root_enter(struct trace_event_raw_sys_enter *ctx)
{
	__u32 zero = 0, tid = current_tid();
	struct pivot_paths *p = bpf_map_lookup_elem(&pivot_staging, &zero);

	if (!p)
		return 0;
	p->truncated = 0;
	if (resolve_user_path(p->new_root, AT_FDCWD, (const char *)ctx->args[0]))
		p->truncated |= TRUNC_PATH1;
	if (resolve_user_path(p->put_old, AT_FDCWD, (const char *)ctx->args[1]))
		p->truncated |= TRUNC_PATH2;
	bpf_map_update_elem(&pivot_state, &tid, p, BPF_ANY);
	return 0;
}

SEC("tracepoint/syscalls/sys_exit_pivot_root")
int pivot_root_exit(struct trace_event_raw_sys_exit *ctx)
{
	__u32 tid = current_tid();
	struct pivot_paths *p = bpf_map_lookup_elem(&pivot_state, &tid);
	struct pivot_root_event *e;

	if (!p)
		return 0;
	e = reserve_event(sizeof(*e), EVENT_PIVOT_ROOT);
	if (e) {
		fill_header(&e->hdr, EVENT_PIVOT_ROOT, (__s32)ctx->id, ctx->ret);
		bpf_probe_read_kernel(e->new_root, sizeof(e->new_root), p->new_root);
		bpf_probe_read_kernel(e->put_old, sizeof(e->put_old), p->put_old);
		e->hdr.truncated = p->truncated;
		submit_event(ctx, e, sizeof(*e));
	}
	bpf_map_delete_elem(&pivot_state, &tid);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";

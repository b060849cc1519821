/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Maps and helpers shared by every mntleak object. Each .bpf.c includes this
 * file, so each object carries the same map definitions; the Go loader
 * creates the maps once and hands them to every object (MapReplacements), so
 * all programs write one events buffer and one set of counters.
 *
 * Records go to a BPF ring buffer, or, when the loader sets use_perf
 * (kernels before 5.8, or --buffer=perf), to a perf event array: the loader
 * then turns the events map into a PERF_EVENT_ARRAY before creating it, so
 * no ring buffer map is ever created on a kernel without one. use_perf is a
 * read-only constant, so the verifier knows it and removes the other branch
 * of reserve_event/submit_event, helper calls included
 * (tracer/load_privileged_test.go checks the loaded programs).
 */
#ifndef __MNTLEAK_COMMON_BPF_H__
#define __MNTLEAK_COMMON_BPF_H__

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "mntleak.h"

#define EBUSY 16
#define EINVAL 22
#define ENOENT 2
#define AT_FDCWD -100
#define AT_EMPTY_PATH 0x1000
#define MS_BIND 4096
#define MS_MOVE 8192
#define CLONE_NEWNS 0x00020000
#define MOVE_MOUNT_F_EMPTY_PATH 0x00000004
#define BPF_F_CURRENT_CPU 0xffffffffULL	/* BPF_F_INDEX_MASK */

/* Set by the loader (rodata): records go through the perf event array. */
volatile const bool use_perf = false;

/* All events. The type and size are defaults; the loader may change both. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 << 20);
} events SEC(".maps");

/*
 * Records that could not be queued (ring buffer reservation or perf output
 * failed), per event kind, in one per-CPU slot: userspace reads every
 * counter with one lookup, so it can check them before each failure event.
 */
struct lost_counts {
	__u64 n[EVENT_KIND_MAX];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct lost_counts);
} lost SEC(".maps");

/* Every record, so that the perf staging buffer fits the largest. */
union any_event {
	struct mount_event mount;
	struct umount_event umount;
	struct ns_event ns;
	struct fork_event fork;
	struct exit_event exit;
	struct pivot_root_event pivot_root;
	struct open_tree_event open_tree;
	struct move_mount_event move_mount;
	struct fsopen_event fsopen;
	struct fsmount_event fsmount;
	struct mount_setattr_event mount_setattr;
	struct failure_event failure;
};

/*
 * In perf mode a record is built here, then copied out by
 * bpf_perf_event_output. One slot per CPU is enough: the programs run in
 * process context with preemption disabled (syscall and sched tracepoints)
 * and none of them fires from an interrupt, so two records are never built
 * at once on one CPU.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, union any_event);
} perf_buf SEC(".maps");

/*
 * Arguments saved at syscall entry for the rare syscalls whose exit event
 * needs them (mount family, unshare, setns). Keyed by tid; the exit program
 * always deletes its entry, and the LRU bound covers threads that were
 * inside such a syscall when the programs were attached.
 */
struct enter_state {
	__u64 args[6];
	__u32 mntns_before;
	__s32 nr;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct enter_state);
} enter_state SEC(".maps");

static __always_inline struct task_struct *current_task(void)
{
	return (struct task_struct *)bpf_get_current_task();
}

static __always_inline __u32 task_mntns(struct task_struct *task)
{
	return BPF_CORE_READ(task, nsproxy, mnt_ns, ns.inum);
}

static __always_inline __u32 current_tid(void)
{
	return (__u32)bpf_get_current_pid_tgid();
}

static __always_inline void fill_header(struct event_header *h, __u32 kind,
					__s32 nr, __s64 ret)
{
	struct task_struct *task = current_task();
	__u64 pid_tgid = bpf_get_current_pid_tgid();

	h->ts_ns = bpf_ktime_get_ns();
	h->cgroup_id = bpf_get_current_cgroup_id();
	h->ret = ret;
	h->kind = kind;
	h->tgid = pid_tgid >> 32;
	h->tid = (__u32)pid_tgid;
	h->ptgid = BPF_CORE_READ(task, real_parent, tgid);
	h->uid = (__u32)bpf_get_current_uid_gid();
	h->mntns = task_mntns(task);
	h->syscall_nr = nr;
	h->truncated = 0;
	bpf_get_current_comm(h->comm, sizeof(h->comm));
}

static __always_inline void count_lost(__u32 kind)
{
	__u32 zero = 0;
	struct lost_counts *c = bpf_map_lookup_elem(&lost, &zero);

	if (c && kind < EVENT_KIND_MAX)
		c->n[kind] += 1; /* per-CPU slot: no other writer */
}

/*
 * Reserves a record of size bytes; a failure is counted, never silent.
 * Every reserved record must go to submit_event with the same size.
 */
static __always_inline void *reserve_event(__u64 size, __u32 kind)
{
	__u32 zero = 0;
	void *rec;

	if (use_perf)
		rec = bpf_map_lookup_elem(&perf_buf, &zero);
	else
		rec = bpf_ringbuf_reserve(&events, size, 0);
	if (!rec)
		count_lost(kind);
	return rec;
}

/*
 * Queues a record from reserve_event. In perf mode the copy can fail (the
 * CPU's buffer is full): counted like a failed reservation, under the kind
 * in the record's header.
 */
static __always_inline void submit_event(void *ctx, void *rec, __u64 size)
{
	if (use_perf) {
		if (bpf_perf_event_output(ctx, &events, BPF_F_CURRENT_CPU, rec, size) < 0)
			count_lost(((struct event_header *)rec)->kind);
	} else {
		bpf_ringbuf_submit(rec, 0);
	}
}

/*
 * Saves the first nargs arguments (a constant). Reading past a syscall's
 * last argument would raise the program's context size above the
 * tracepoint's and the kernel would refuse to attach it (EACCES).
 */
static __always_inline int save_args(struct trace_event_raw_sys_enter *ctx, int nargs)
{
	struct enter_state st = {};
	__u32 tid = current_tid();

	/* Spelled out: a loop lets clang form ctx+16, which the verifier rejects. */
	if (nargs > 0)
		st.args[0] = ctx->args[0];
	if (nargs > 1)
		st.args[1] = ctx->args[1];
	if (nargs > 2)
		st.args[2] = ctx->args[2];
	if (nargs > 3)
		st.args[3] = ctx->args[3];
	if (nargs > 4)
		st.args[4] = ctx->args[4];
	if (nargs > 5)
		st.args[5] = ctx->args[5];
	st.nr = (__s32)ctx->id;
	st.mntns_before = task_mntns(current_task());
	bpf_map_update_elem(&enter_state, &tid, &st, BPF_ANY);
	return 0;
}

/* Copies out and deletes the entry saved by save_args. */
static __always_inline bool take_args(struct enter_state *out)
{
	__u32 tid = current_tid();
	struct enter_state *st = bpf_map_lookup_elem(&enter_state, &tid);

	if (!st)
		return false;
	*out = *st;
	bpf_map_delete_elem(&enter_state, &tid);
	return true;
}

/* Reads a user string into dst; returns true when it did not fit. */
static __always_inline bool read_user_str(char *dst, __u32 size, const char *src)
{
	char next = 0;
	long n;

	if (!src) {
		dst[0] = 0;
		return false;
	}
	n = bpf_probe_read_user_str(dst, size, src);
	if (n < 0) {
		dst[0] = 0;
		return false;
	}
	if (n < size)
		return false;
	/* The buffer is full: truncated unless the string ended exactly there. */
	bpf_probe_read_user(&next, 1, src + size - 1);
	return next != 0;
}

#endif /* __MNTLEAK_COMMON_BPF_H__ */

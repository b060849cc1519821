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
 * of reserve_event/submit_event and pack_submit (pack.bpf.h), helper calls
 * included (tracer/load_privileged_test.go checks the loaded programs).
 */
#ifndef __MNTLEAK_COMMON_BPF_H__
#define __MNTLEAK_COMMON_BPF_H__

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include "mntleak.h"
#include "syscall_nr.h"

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
	__uint(max_entries, 2 << 20);
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

/*
 * Set when a quiet record went into the ring buffer without waking the
 * reader (submit_event_quiet), cleared by the next record that forces the
 * wakeup: one word shared by every object, read and written without
 * atomics (a lost update delays a wakeup to the reader's own, never a
 * record).
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} quiet_pending SEC(".maps");

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
 * A record with strings (mount, umount, pivot_root and the new mount API's)
 * goes out packed: its fixed part, up to its first string, then each string
 * with its NUL, in the struct's order (bpf/mntleak.h; event/decode.go reads
 * it so). A mount record is then a hundred-odd bytes instead of 1,264, so
 * the events buffer holds several times as many records as it would of the
 * structs: what keeps a small buffer from overflowing in a mount storm.
 */
#define PACKED_SIZE 4096
#define PACKED_OFF_MASK 2047	/* a string starts below: fixed part + earlier strings */

/*
 * Each CPU's stage: a packed kind's record is built in rec, packed into
 * packed and copied out (bpf_ringbuf_output or bpf_perf_event_output); in
 * perf mode every other record is built in rec too. None of the programs
 * fires from an interrupt, but a program can be preempted where the kernel
 * runs it with only migration disabled (fexit programs; syscall
 * tracepoints on kernels that let them fault) and preempts kernel code:
 * busy is set while a record is in the stage, and a program that finds it
 * set counts its own record lost instead of overwriting the other's. (Not
 * atomic: kernels before 5.12 have no BPF exchange; only two preemptions
 * at two exact instructions of one record could still meet.)
 */
struct stage {
	union any_event rec;
	char packed[PACKED_SIZE];
	__u32 busy;
	__u32 _pad;
};

static __always_inline void count_lost(__u32 kind);

/* Takes the CPU's stage for a record of kind, or counts the record lost. */
static __always_inline struct stage *take_stage(__u32 kind);

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct stage);
} stage SEC(".maps");

/*
 * The syscall handlers, by x86_64 syscall number, plus SLOT_FAILURE for the
 * -EBUSY catch-all. The only per-syscall hook is the dispatcher on the
 * sys_exit tracepoint (dispatch.bpf.c): it tail-calls the slot of the
 * syscall that returned, so each handler has its own verifier budget (the
 * path walks are big) and an uninteresting syscall costs one failed tail
 * call. Hooking nothing on sys_enter is the point: any syscalls:sys_enter_*
 * tracepoint makes the kernel run its perf probe on every syscall entry.
 * The loader fills the slots; numbers the kernel lacks stay empty.
 */
#define NR_SLOTS 512
#define SLOT_FAILURE (NR_SLOTS - 1)	/* above every x86_64 syscall number */

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, NR_SLOTS);
	__type(key, __u32);
	__type(value, __u32);
} handlers SEC(".maps");

/*
 * The mount namespace of each task, by tid, as last seen, with its thread
 * group: written for every new task by the sched_process_fork program and
 * by the unshare/setns handlers after a change, deleted at the task's exit.
 * It stands in for the state an entry program would have saved: at
 * unshare/setns exit the namespace before the call is this entry. Tasks
 * that predate tracing have none (mntns_before 0, see nsproc.bpf.c); the
 * LRU bound keeps the map's size fixed whatever the number of threads (an
 * evicted task is unknown: userspace reads the map as complete only well
 * below the bound). Userspace reads it too: the processes forked since
 * tracing began, and where they are now (tracer.Tasks).
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, TASK_MNTNS_MAX);
	__type(key, __u32);
	__type(value, struct task_ns);
} task_mntns_map SEC(".maps");

/*
 * The syscall and its arguments, read from the saved user registers at
 * exit (a syscall does not change them), and whether the call is a 32-bit
 * compat one: its number is then of another table, which would select the
 * wrong handler (the syscalls:* tracepoints ignored compat calls too,
 * trace_get_syscall_nr). Numbers: syscall_nr.h, generated per arch.
 */
#if defined(__TARGET_ARCH_x86)
#define SC_NR(r)	((long)(r)->orig_ax)
#define SC_ARG0(r)	((r)->di)
#define SC_ARG1(r)	((r)->si)
#define SC_ARG2(r)	((r)->dx)
#define SC_ARG3(r)	((r)->r10)
#define SC_ARG4(r)	((r)->r8)
#define SC_ARG5(r)	((r)->r9)
#define TS_COMPAT 0x0002	/* arch/x86/include/asm/thread_info.h */

static __always_inline bool compat_syscall(void)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();

	return BPF_CORE_READ(task, thread_info.status) & TS_COMPAT;
}
#elif defined(__TARGET_ARCH_arm64)
/* x0 holds the return value at exit: the first argument is orig_x0. */
#define SC_NR(r)	((long)(r)->syscallno)
#define SC_ARG0(r)	((r)->orig_x0)
#define SC_ARG1(r)	((r)->regs[1])
#define SC_ARG2(r)	((r)->regs[2])
#define SC_ARG3(r)	((r)->regs[3])
#define SC_ARG4(r)	((r)->regs[4])
#define SC_ARG5(r)	((r)->regs[5])
#define TIF_32BIT 22	/* arch/arm64/include/asm/thread_info.h */

static __always_inline bool compat_syscall(void)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();

	return BPF_CORE_READ(task, thread_info.flags) & (1UL << TIF_32BIT);
}
#endif

/*
 * Defines a handler: a tp_btf program on sys_exit, never attached itself,
 * only reached through the dispatcher's tail call (a prog array takes
 * programs of the dispatcher's type and attach point only). The body gets
 * ctx, the saved user registers and the return value; the registers hold
 * the syscall's arguments (SC_ARG0..SC_ARG5), which a syscall does not
 * change, so no entry state is needed.
 */
#define SYSCALL_HANDLER(name)							\
	static __always_inline int name##_body(void *ctx, struct pt_regs *regs,	\
					       long ret);			\
	SEC("tp_btf/sys_exit")							\
	int BPF_PROG(name, struct pt_regs *regs, long ret)			\
	{									\
		if (compat_syscall())						\
			return 0;						\
		return name##_body(ctx, regs, ret);				\
	}									\
	static __always_inline int name##_body(void *ctx, struct pt_regs *regs,	\
					       long ret)

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

static __always_inline struct stage *take_stage(__u32 kind)
{
	__u32 zero = 0;
	struct stage *s = bpf_map_lookup_elem(&stage, &zero);

	if (!s || s->busy) {
		count_lost(kind);
		return NULL;
	}
	s->busy = 1;
	return s;
}

/*
 * Reserves a record of size bytes (in perf mode, in the CPU's stage); a
 * failure is counted, never silent. Every reserved record must go to
 * submit_event with the same size.
 */
static __always_inline void *reserve_event(__u64 size, __u32 kind)
{
	void *rec;

	if (use_perf) {
		struct stage *s = take_stage(kind);

		return s ? &s->rec : NULL;
	}
	rec = bpf_ringbuf_reserve(&events, size, 0);
	if (!rec)
		count_lost(kind);
	return rec;
}

#define RB_NO_WAKEUP 1		/* BPF_RB_NO_WAKEUP */
#define RB_FORCE_WAKEUP 2	/* BPF_RB_FORCE_WAKEUP */
#define RB_AVAIL_DATA 0		/* BPF_RB_AVAIL_DATA */
#define RB_RING_SIZE 1		/* BPF_RB_RING_SIZE */

/*
 * Queues a record from reserve_event. In perf mode the copy can fail (the
 * CPU's buffer is full): counted like a failed reservation, under the kind
 * in the record's header. A quiet ring buffer record (one the reader may
 * read late: nsproc.bpf.c, quiet_exits) does not wake the reader, unless a
 * quarter of the buffer is pending. Any other record wakes it by the
 * kernel's rule (only a record right after what the reader consumed wakes
 * it), and forces the wakeup when a quiet record went in since the last
 * forced one: the reader, asleep, has not consumed that one.
 */
static __always_inline void submit_event_quiet(void *ctx, void *rec, __u64 size, bool quiet)
{
	__u32 zero = 0, *pending;
	__u64 flags = 0;

	if (use_perf) {
		if (bpf_perf_event_output(ctx, &events, BPF_F_CURRENT_CPU, rec, size) < 0)
			count_lost(((struct event_header *)rec)->kind);
		((struct stage *)rec)->busy = 0; /* rec is the stage's first member */
		return;
	}
	pending = bpf_map_lookup_elem(&quiet_pending, &zero);
	if (quiet) {
		flags = RB_FORCE_WAKEUP;
		if (bpf_ringbuf_query(&events, RB_AVAIL_DATA) * 4 < bpf_ringbuf_query(&events, RB_RING_SIZE)) {
			flags = RB_NO_WAKEUP;
			if (pending && !*pending)
				*pending = 1;
		}
	} else if (pending && *pending) {
		*pending = 0;
		flags = RB_FORCE_WAKEUP;
	}
	bpf_ringbuf_submit(rec, flags);
}

/* Queues a record from reserve_event; it wakes the reader. */
static __always_inline void submit_event(void *ctx, void *rec, __u64 size)
{
	submit_event_quiet(ctx, rec, size, false);
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

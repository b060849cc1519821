/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Packed records (common.bpf.h, struct stage): a handler builds its record
 * in the CPU's stage with stage_event, then packs it: pack_begin copies
 * the fixed part, pack_str each string with its NUL, and pack_submit
 * queues the result. Included by the objects whose records have strings
 * (mount.bpf.c, newmount.bpf.c).
 */
#ifndef __MNTLEAK_PACK_BPF_H__
#define __MNTLEAK_PACK_BPF_H__

#include "common.bpf.h"

/*
 * Returns the CPU's stage for a record of a packed kind, built there in any
 * mode and queued by pack_submit; a record that cannot have it (another's
 * is there, take_stage) is counted lost, never silent.
 */
static __always_inline void *stage_event(__u32 kind)
{
	struct stage *s = take_stage(kind);

	return s ? &s->rec : NULL;
}

/* A packed record being written: its stage, the packed half, its length. */
struct packer {
	struct stage *stage;
	char *out;
	__u32 off;
};

/*
 * Starts the packed copy of rec (stage_event's record) with its fixed
 * part, the first fixed bytes.
 */
static __always_inline void pack_begin(struct packer *p, void *rec, __u32 fixed)
{
	p->stage = rec; /* rec is the stage's first member */
	p->out = p->stage->packed;
	bpf_probe_read_kernel(p->out, fixed, rec);
	p->off = fixed;
}

/* Appends the string in the size-byte field src, with its NUL. */
static __always_inline void pack_str(struct packer *p, const char *src, __u32 size)
{
	__u32 off = p->off & PACKED_OFF_MASK;
	long n = bpf_probe_read_kernel_str(p->out + off, size, src);

	if (n < 1) {
		p->out[off] = 0;
		n = 1;
	}
	p->off = off + n;
}

/*
 * Queues the packed record, stamped now: the events buffer's order is the
 * order of the copies, and the stamp keeps its time order with it, as a
 * reserved record's does. It wakes the reader (as submit_event); a record
 * the buffer cannot take is counted under kind.
 */
static __always_inline void pack_submit(void *ctx, struct packer *p, __u32 kind)
{
	__u64 size = p->off & (PACKED_SIZE - 1);
	__u32 zero = 0, *pending;
	__u64 flags = 0;

	((struct event_header *)p->out)->ts_ns = bpf_ktime_get_ns();
	if (use_perf) {
		if (bpf_perf_event_output(ctx, &events, BPF_F_CURRENT_CPU, p->out, size) < 0)
			count_lost(kind);
	} else {
		pending = bpf_map_lookup_elem(&quiet_pending, &zero);
		if (pending && *pending)
			flags = RB_FORCE_WAKEUP;
		if (bpf_ringbuf_output(&events, p->out, size, flags) < 0)
			count_lost(kind);
		else if (pending && flags)
			*pending = 0;
	}
	p->stage->busy = 0;
}

#endif /* __MNTLEAK_PACK_BPF_H__ */

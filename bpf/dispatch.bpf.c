// SPDX-License-Identifier: GPL-2.0
/*
 * The only program on a per-syscall hook: one tp_btf program on the
 * sys_exit tracepoint, which hands the few syscalls mntleak reports to
 * their handlers (mount.bpf.c, newmount.bpf.c, nsproc.bpf.c, failure.bpf.c)
 * by a tail call into the handlers prog array, keyed by syscall number.
 *
 * It runs on every syscall exit of the node, so it does the least that can
 * tell: two loads (tp_btf makes SC_NR(regs) a plain load, where a raw
 * tracepoint needs a bpf_probe_read_kernel call), one tail call that fails
 * for an empty slot (an out-of-range number, a 32-bit x32 one included,
 * fails the same way), and one comparison with -EBUSY. Nothing is hooked
 * on sys_enter: see the handlers map in common.bpf.h.
 */
#include "common.bpf.h"

SEC("tp_btf/sys_exit")
int BPF_PROG(dispatch, struct pt_regs *regs, long ret)
{
	__u32 nr = (__u32)SC_NR(regs);

	/* Returns only when the slot is empty. */
	bpf_tail_call(ctx, &handlers, nr);
	if (ret == -EBUSY)
		bpf_tail_call(ctx, &handlers, SLOT_FAILURE);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";

// Package tracer loads mntleak's BPF programs, attaches them to their
// tracepoints, reads the shared buffer and hands decoded events (package
// event) to a sink. It is the only package that imports
// github.com/cilium/ebpf.
//
// The programs live in five objects, one per concern (bpf/*.bpf.c); the
// maps they share (the events buffer, the lost-event counters, the scratch
// buffers, the handlers prog array and the per-thread mount namespaces) are
// created once from the first object and handed to the others. One program
// runs on every syscall, the dispatcher on sys_exit (dispatch.bpf.c); it
// tail-calls the handler of the few syscalls mntleak reports, which the
// loader puts in the handlers prog array (attach.go). Nothing is attached
// to syscall entry.
//
// That is the tracepoint path. Where the kernel has BPF trampolines the
// tracer takes the trampoline path instead (Config.Hooks, hooks.go; auto
// probes by attaching an empty fexit program to a syscall function): the
// same handler programs, from the same objects, are loaded as fexit
// programs on the kernel's syscall functions (__x64_sys_mount...), the
// -EBUSY catch-all once per syscall it explains, and the dispatcher is not
// loaded (trampoline.go). An fexit program on a syscall function gets the
// saved user registers and the return value, as a handler does on
// sys_exit, so the same events come out; every other syscall stays on the
// kernel's fast path. The process lifecycle is on the sched tracepoints on
// both paths.
//
// The events buffer is a BPF ring buffer or, without one (or with
// Config.Buffer = BufferPerf), a perf event array; the loader sets the
// programs' use_perf constant to match (buffer.go, load.go). Every ring
// buffer record wakes the reader, but process exits once the consumer says
// they may wait (SetQuietExits, quiet.go): they are then read with the
// next record that wakes it, or at its wakeup every QuietExitDelay. A perf event
// array is in order per CPU only, so Run holds its events for a short
// window and releases them in kernel time order (reorder.go); the ring
// buffer is in order already and never waits. The records with paths go
// out packed (their strings one after another, bpf/mntleak.h), a few
// hundred bytes at most where the structs take 1.3 KiB, so a small buffer
// holds many. Records the kernel cannot queue are counted by kind, and Run
// puts each loss in the stream as a KindLost event (lost.go).
//
// Relative paths and fds are made absolute in the kernel by a dentry walk,
// through bpf_loop (5.17+) or, on kernels without it, a bounded loop; the
// loader picks one with the programs' no_bpf_loop constant (walk.go).
//
// The objects are generated for amd64 and arm64 (gen.go: bpf2go after
// internal/gensyscalls writes bpf/syscall_nr.h); the handlers' slots are
// golang.org/x/sys/unix's syscall numbers of the arch, and the kernel's
// syscall functions are named per arch (arch_<goarch>.go).
//
// Files: tracer.go (New, Run, Stats, Close), preflight.go and features.go
// (what the kernel offers), memlock.go (RLIMIT_MEMLOCK on older kernels),
// load.go, attach.go, hooks.go and trampoline.go (the two paths),
// buffer.go, reorder.go, lost.go, quiet.go, walk.go, clock.go, tasks.go (Tasks: the
// threads born or moved under tracing, where they are now, from the
// programs' task map; CgroupChanges: the count of the changes of
// processes' cgroups, read from the programs' memory), arch_amd64.go and arch_arm64.go (the kernel's syscall function names),
// gen.go and the generated *_bpfel.go with their .o (dispatch, failure,
// mount, newmount, nsproc; x86 and arm64).
package tracer

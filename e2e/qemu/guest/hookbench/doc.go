// Command hookbench runs in the lab's guest and measures what each of
// mntleak's hook paths costs the syscalls it does not trace, and what the
// calls it does trace cost: a null syscall (getppid), file churn (create,
// close, unlink on tmpfs), a read/write loop (pwrite and pread of 64
// bytes) and a mount storm (a tmpfs mounted and unmounted in a namespace
// of its own). The variants: no tracer; the tracepoint path's floor (the
// bench package's empty program on raw sys_exit); `mntleak trace
// --hooks=tracepoint`; `--hooks=trampoline`; and bpftrace with the bench
// package's probe set when the guest has it (guest/bench.sh installs it).
// They run in rounds that rotate their order; it prints every measure,
// then each workload's median ns per operation, the ratio of medians to
// no tracer and the spread (the lowest and highest of the rounds' own
// ratios), and the events mntleak lost (read from its metrics after each
// round); it exits non-zero when mntleak lost any. A test harness, never
// shipped.
//
// Usage: hookbench MNTLEAK ROUNDS
//
// Files: doc.go; main.go (the rounds, the summary); variants.go (the
// variants, mntleak started on a path); workload.go (the four loops).
package main

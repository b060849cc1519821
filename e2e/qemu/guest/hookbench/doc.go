// Command hookbench runs in the lab's guest and measures what each of
// mntleak's hook paths costs the syscalls it does not trace: a null
// syscall (getppid), file churn (create, close, unlink on tmpfs) and a
// read/write loop (pwrite and pread of 64 bytes), with no tracer, with
// `mntleak trace --hooks=tracepoint` and with `--hooks=trampoline`, in
// rounds that rotate the variants' order; it prints each workload's
// median ns per operation and the ratios to no tracer, one line each. A
// test harness, never shipped.
//
// Usage: hookbench MNTLEAK ROUNDS
//
// Files: doc.go; main.go (the rounds, the variants); workload.go (the
// three loops).
package main

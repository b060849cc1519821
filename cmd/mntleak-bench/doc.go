// Command mntleak-bench measures mntleak's cost and responsiveness next to
// no tracer, an empty BPF program and bpftrace; see bench/ and
// docs/BENCHMARKS.md.
//
// Files: main.go (the flags, the run and its table, the exit status),
// soak.go (mntleak-bench soak).
package main

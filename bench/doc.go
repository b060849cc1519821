// Package bench holds the workloads and the measurement harness of
// `mntleak-bench`: the null syscall loop, file churn, process churn, the mount storm,
// container churn, failure injection among a crowd of processes and
// namespaces, memory, startup and the after-the-fact commands.
//
// Every ratio is a ratio of medians over rounds that interleave the
// variants (no tracer, the empty BPF program that is the design's floor,
// `mntleak trace`, and bpftrace with an equivalent probe set) in one
// process run, rotating their order each round: on a shared machine the
// noise then hits every variant alike instead of whichever ran last.
//
// The workloads that change mount tables do so in mount namespaces of their
// own (a locked OS thread that unshares and never unlocks, so the namespace
// dies with the thread, or a private "node" namespace held by a child), so
// nothing they mount is copied by other processes on the machine, and
// nothing is left behind when a run ends or is interrupted.
//
// Files: run.go and runner.go (a run: Config, the rounds, the Report),
// variants.go (no tracer, the empty-program floors, mntleak, bpftrace),
// floor.go and nullsys.go (the empty programs, the getppid loop),
// threads.go, procstat.go and stats.go (CPU time, medians), filechurn.go, spawn.go,
// storm.go and stormworker.go, docker.go, crowd.go, procs.go, memory.go
// (the workloads), smaps.go (where the daemon's resident pages are),
// kubeapi.go (the fake API server of the memory figure with Kubernetes
// naming on), daemon.go and bpftrace.go (the tracers as children),
// node.go (the private node namespace), tracefs.go (tracefs mounted for
// bpftrace when it is not), guest.go (the floor, bpftrace and the
// lost-event count for the lab guest's hookbench), machine.go, report.go and
// markdown.go (the table and docs/BENCHMARKS.md), soak.go and
// soakreport.go (make soak).
package bench

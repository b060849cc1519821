// Package metrics exposes mntleak's Prometheus metrics: events by kind,
// events lost in the kernel, findings by cause, leaks currently open,
// namespaces tracked, and the latency from a failing syscall to its
// finding. It uses a registry of its own, never the global one.
//
// Files: metrics.go (the collectors, Serve, ListenAddr, and ServePprof
// and PprofAddr: the daemon's own profiles, on a loopback listener of
// their own, never on the metrics address).
package metrics

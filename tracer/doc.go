// Package tracer loads mntleak's BPF programs, attaches them to their
// tracepoints, reads the shared ring buffer and hands decoded events
// (package event) to a sink. It is the only package that imports
// github.com/cilium/ebpf.
//
// The programs live in four objects, one per concern (bpf/*.bpf.c); the
// maps they share (the ring buffer, the lost-event counters, the per-thread
// entry state and the path scratch buffer) are created once from the first
// object and handed to the others.
package tracer

package tracer

import (
	"errors"
	"os"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/features"
	"golang.org/x/sys/unix"
)

// Features is what the running kernel offers mntleak.
type Features struct {
	Kernel     string `json:"kernel"`
	BTF        bool   `json:"btf"`
	RingBuffer string `json:"ring_buffer"` // yes, no, or why it is unknown
	// Buffer is what --buffer=auto picks: ringbuf, perf, or why it is
	// unknown (the probes need CAP_BPF).
	Buffer string `json:"buffer"`
	// PathWalk is how the programs will walk paths: bpf_loop, or the
	// bounded loop of kernels without it, or why it is unknown.
	PathWalk    string            `json:"path_walk"`
	Tracefs     string            `json:"tracefs"`     // where, or "not mounted"
	Tracepoints map[string]bool   `json:"tracepoints"` // syscall tracepoints mntleak attaches
	Missing     map[string]string `json:"missing,omitempty"`
	// Disabled lists the events whose optional tracepoints are missing:
	// tracing runs without them.
	Disabled []string `json:"disabled,omitempty"`
	// RequiredMissing lists missing tracepoints tracing cannot run without.
	RequiredMissing []string `json:"required_missing,omitempty"`
}

// DetectFeatures probes the kernel without loading anything. The map
// probes need CAP_BPF; without it the answers say so.
func DetectFeatures() Features {
	f := Features{Tracepoints: map[string]bool{}, Missing: map[string]string{}}
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		f.Kernel = unix.ByteSliceToString(u.Release[:])
	}
	_, err := os.Stat(DefaultBTFPath)
	f.BTF = err == nil
	switch err := features.HaveMapType(ebpf.RingBuf); {
	case err == nil:
		f.RingBuffer, f.Buffer = "yes", BufferRingbuf.String()
	case errors.Is(err, ebpf.ErrNotSupported):
		f.RingBuffer = "no"
		f.Buffer = BufferPerf.String()
		if err := features.HaveMapType(ebpf.PerfEventArray); err != nil {
			f.Buffer = "none: " + err.Error()
		}
	default:
		f.RingBuffer = "unknown: " + err.Error()
		f.Buffer = "unknown (probing needs CAP_BPF)"
	}
	switch w, err := probePathWalk(); {
	case err != nil:
		f.PathWalk = "unknown (probing needs CAP_BPF; tracing would use the " + WalkBounded.String() + ")"
	case w == WalkBounded:
		f.PathWalk = w.String() + " (the kernel has no bpf_loop)"
	default:
		f.PathWalk = w.String()
	}
	f.Tracefs = "not mounted"
	for _, dir := range tracefsDirs {
		if _, err := os.Stat(dir + "/events"); err == nil {
			f.Tracefs = dir
			break
		}
	}
	if f.Tracefs != "not mounted" {
		for _, p := range (&objects{}).probes() {
			ok := true
			for _, a := range p.points {
				if a.group != "syscalls" {
					continue
				}
				_, err := os.Stat(f.Tracefs + "/events/syscalls/" + a.name)
				f.Tracepoints[a.name] = err == nil
				if err != nil && ok {
					ok = false
					if p.optional {
						f.Disabled = append(f.Disabled, p.event)
					}
				}
				if err != nil && !p.optional {
					f.RequiredMissing = append(f.RequiredMissing, a.group+"/"+a.name)
				}
			}
		}
	}
	if !f.BTF {
		f.Missing["btf"] = DefaultBTFPath + ": build the kernel with CONFIG_DEBUG_INFO_BTF=y"
	}
	return f
}

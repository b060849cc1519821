package tracer

import (
	"errors"
	"os"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
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
	PathWalk string `json:"path_walk"`
	// Tracefs is where tracefs is mounted, or "not mounted": mntleak no
	// longer needs it (tp_btf and raw tracepoints are found by name).
	Tracefs string `json:"tracefs"`
	// Memlock is what RemoveMemlock did: nothing on kernels that charge
	// BPF memory to the memory cgroup, else the limit raised, or why not.
	Memlock string `json:"memlock"`
	// Kprobes and Fentry say whether the kernel has kprobes and an fentry
	// on vfs_statfs, which users' other tools may need (mntleak uses no
	// kprobe; its trampoline probe is Hooks): "yes", "no" and why, or
	// "unknown" and why.
	Kprobes string `json:"kprobes"`
	Fentry  string `json:"fentry"`
	// Hooks is the path --hooks=auto runs and why: "trampoline (...)" or
	// "tracepoint (...)", or why it is unknown.
	Hooks string `json:"hooks"`
	// Tracepoints are the tracepoints mntleak attaches to: sys_exit (the
	// only per-syscall hook) and the sched ones.
	Tracepoints map[string]bool `json:"tracepoints"`
	// Syscalls are the syscalls the sys_exit dispatcher hands to a
	// handler, and whether the kernel has each.
	Syscalls map[string]bool   `json:"syscalls"`
	Missing  map[string]string `json:"missing,omitempty"`
	// Disabled lists the events whose optional syscalls are missing:
	// tracing runs without them.
	Disabled []string `json:"disabled,omitempty"`
	// RequiredMissing lists missing tracepoints and syscalls tracing
	// cannot run without.
	RequiredMissing []string `json:"required_missing,omitempty"`
}

// DetectFeatures probes the kernel without loading anything. The map
// probes need CAP_BPF; without it the answers say so.
func DetectFeatures() Features {
	f := Features{Tracepoints: map[string]bool{}, Syscalls: map[string]bool{}, Missing: map[string]string{}}
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
	if m, err := RemoveMemlock(); err != nil {
		f.Memlock = err.Error()
	} else {
		f.Memlock = string(m)
	}
	f.Tracefs = "not mounted"
	for _, dir := range tracefsDirs {
		if _, err := os.Stat(dir + "/events"); err == nil {
			f.Tracefs = dir
			break
		}
	}
	f.Kprobes, f.Fentry = probeKprobes(), probeFentry()
	f.Hooks = describeHooks(chooseHooks(HooksAuto, probeTrampoline))
	// What New checks, from the kernel BTF: the tracepoints it attaches to
	// (each has a btf_trace_<name> type) and the syscalls the dispatcher
	// hands to a handler.
	if spec, err := btf.LoadKernelSpec(); err == nil {
		f.checkBTF(spec)
	}
	if !f.BTF {
		f.Missing["btf"] = DefaultBTFPath + ": build the kernel with CONFIG_DEBUG_INFO_BTF=y"
	}
	return f
}

// checkBTF fills Tracepoints, Syscalls, Disabled and RequiredMissing.
func (f *Features) checkBTF(spec *btf.Spec) {
	for _, a := range (&objects{}).attachPoints() {
		var td *btf.Typedef
		ok := spec.TypeByName("btf_trace_"+a.name, &td) == nil
		f.Tracepoints[a.name] = ok
		if !ok {
			f.RequiredMissing = append(f.RequiredMissing, a.name)
		}
	}
	for _, h := range (&objects{}).handlers() {
		if h.syscall == "" {
			continue
		}
		ok, err := haveSyscall(spec, h.syscall)
		f.Syscalls[h.syscall] = ok && err == nil
		switch {
		case err != nil || ok:
		case h.optional:
			f.Disabled = append(f.Disabled, h.event)
		default:
			f.RequiredMissing = append(f.RequiredMissing, "syscall "+h.syscall)
		}
	}
}

// probeKprobes: the kprobe PMU is how kprobes attach without tracefs.
func probeKprobes() string {
	if _, err := os.Stat("/sys/bus/event_source/devices/kprobe"); err != nil {
		return "no (no kprobe PMU in /sys/bus/event_source/devices)"
	}
	return "yes"
}

// fentryProbeFunc is the kernel function probeFentry tries.
const fentryProbeFunc = "vfs_statfs"

// probeFentry loads (does not attach) an empty fentry program on a kernel
// function: the kernel refuses it where BPF trampolines are missing. A
// kernel whose own BTF lacks the function (Debian's 6.12 cloud kernel)
// has nothing to attach it to, said without the loader's search of every
// module's BTF, which fails when a module comes and goes meanwhile (a
// cpufreq driver udev loads and the kernel unloads again at boot: seen in
// the lab's 6.12 guest).
func probeFentry() string {
	switch ok, err := haveKernelFunc(nil, fentryProbeFunc); {
	case err != nil:
		return "unknown (" + err.Error() + ")"
	case !ok:
		return "no (no " + fentryProbeFunc + " in the kernel BTF)"
	}
	p, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Type: ebpf.Tracing, AttachType: ebpf.AttachTraceFEntry, AttachTo: fentryProbeFunc, License: "GPL",
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()},
	})
	switch {
	case err == nil:
		p.Close()
		return "yes"
	case errors.Is(err, ebpf.ErrNotSupported):
		return "no (" + err.Error() + ")"
	}
	return "unknown (" + err.Error() + ")"
}

// describeHooks is Features.Hooks from chooseHooks's answer.
func describeHooks(h Hooks, why string, err error) string {
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	return h.String() + " (" + why + ")"
}

package tracer

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// Hooks is where the syscall programs run: on the raw sys_exit tracepoint
// (through the dispatcher), or as fexit programs on the kernel's syscall
// functions (BPF trampolines). The process lifecycle is on the sched
// tracepoints either way.
type Hooks int

const (
	// HooksAuto picks the trampolines when the kernel can attach an fexit
	// program to a syscall function, else the tracepoint.
	HooksAuto Hooks = iota
	// HooksTracepoint is the dispatcher on the sys_exit tracepoint: every
	// syscall of the node runs it.
	HooksTracepoint
	// HooksTrampoline is one fexit program per traced syscall function:
	// the other syscalls stay on the kernel's fast path.
	HooksTrampoline
)

var hooksNames = [...]string{HooksAuto: "auto", HooksTracepoint: "tracepoint", HooksTrampoline: "trampoline"}

func (h Hooks) String() string {
	if h >= 0 && int(h) < len(hooksNames) {
		return hooksNames[h]
	}
	return fmt.Sprintf("hooks(%d)", int(h))
}

// ParseHooks parses auto, tracepoint or trampoline.
func ParseHooks(s string) (Hooks, error) {
	for h, name := range hooksNames {
		if s == name {
			return Hooks(h), nil
		}
	}
	return HooksAuto, fmt.Errorf("unknown hooks %q: want auto, tracepoint or trampoline", s)
}

// probeSyscall is the syscall whose function the trampoline probe hooks:
// one the tracer hooks anyway, and rare.
const probeSyscall = "mount"

// chooseHooks resolves want with probe's answer (nil: the kernel attached
// a trivial fexit program to a syscall function) and says why. Only a
// forced trampoline on a kernel without them is an error.
func chooseHooks(want Hooks, probe func() error) (Hooks, string, error) {
	if want == HooksTracepoint {
		return HooksTracepoint, "forced by --hooks=tracepoint", nil
	}
	err := probe()
	switch {
	case err == nil && want == HooksTrampoline:
		return HooksTrampoline, "forced by --hooks=trampoline (the kernel has BPF trampolines)", nil
	case err == nil:
		return HooksTrampoline, "the kernel attaches fexit programs to its syscall functions", nil
	case want == HooksTrampoline:
		return want, "", fmt.Errorf("--hooks=trampoline: this kernel cannot attach an fexit program to %s (no BPF trampolines; use --hooks=auto or tracepoint): %w", syscallFunc(probeSyscall), err)
	}
	return HooksTracepoint, "no BPF trampolines: " + err.Error(), nil
}

// probeTrampoline loads an empty fexit program on a syscall function of
// the kernel BTF and attaches it for a moment: where trampolines are
// missing, the load or the attach is refused.
func probeTrampoline() error { return probeTrampolineIn(nil) }

// probeTrampolineIn is probeTrampoline with the kernel BTF parsed already
// (nil: the running kernel's, parsed here).
func probeTrampolineIn(kernel *btf.Spec) error {
	ok, err := haveSyscall(kernel, probeSyscall)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("no %s in the kernel BTF", syscallFunc(probeSyscall))
	}
	p, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Type: ebpf.Tracing, AttachType: ebpf.AttachTraceFExit, AttachTo: syscallFunc(probeSyscall), License: "GPL",
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()},
	})
	if err != nil {
		return fmt.Errorf("the kernel refuses to load an fexit program on %s: %w", syscallFunc(probeSyscall), errnoOf(err))
	}
	defer p.Close()
	l, err := link.AttachTracing(link.TracingOptions{Program: p})
	if err != nil {
		return fmt.Errorf("the kernel refuses to attach an fexit program to %s: %w", syscallFunc(probeSyscall), errnoOf(err))
	}
	return l.Close()
}

// errnoOf is err's errno when it has one: cilium/ebpf's own text around
// it (a hint about RLIMIT_MEMLOCK for any EPERM) would mislead here.
func errnoOf(err error) error {
	var errno unix.Errno
	if errors.As(err, &errno) {
		return errno
	}
	return err
}

package tracer

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
)

// The trampoline path (Hooks): the same programs as on the tracepoint
// path, from the same objects, loaded as fexit programs on the kernel's
// syscall functions (<syscallPrefix><name>, arch_<goarch>.go) instead of
// as tail-call targets of the sys_exit dispatcher, which is not loaded.
// A syscall function's fexit program gets the syscall's saved user
// registers and its return value, the two arguments a handler gets on
// sys_exit (SYSCALL_HANDLER in bpf/common.bpf.h): the instructions are
// the same, so the events are the same, field for field. Only the
// kernel's type information for the program changes.
//
// The handlers each hook their syscall (handlers). The -EBUSY catch-all
// is loaded once per syscall of ebusySyscalls, the calls that fail with
// EBUSY because a mount is held: a syscall outside that list that returns
// -EBUSY is reported (without its object) on the tracepoint path only.
// Each copy is verified on its own, which makes most of the path's
// start-up: the list is the calls that matter, not every syscall the
// catch-all classifies.

// ebusySyscalls are the syscalls without a handler of their own that can
// fail with EBUSY because a mount (or the device or module under it) is
// held, by kernel name: docs/hooks.md's table, row for row
// (TestHooksDocTable); those the arch or kernel lacks are left out. The
// catch-all classifies each (classify in bpf/failure.bpf.c: a path, a
// dirfd and path, or an fd), but objectlessFailureSyscalls
// (TestEBUSYSyscallsAreClassified).
var ebusySyscalls = append([]string{
	// a path
	"open", "rename", "rmdir", "unlink", "swapon",
	// a dirfd and a path
	"openat", "unlinkat", "renameat", "renameat2", "openat2",
	// an fd
	"write", "ioctl", "pwrite64", "writev", "pwritev", "pwritev2", "fsconfig",
}, objectlessFailureSyscalls...)

// objectlessFailureSyscalls return EBUSY because of a mount without an
// object classify reads (ARG_NONE: the event has no path): delete_module
// of a filesystem's module while a mount of it exists. The tracepoint
// path's catch-all sees every syscall; the trampoline path hooks these.
var objectlessFailureSyscalls = []string{"delete_module"}

// fexitProgram is a program loaded for one kernel function.
type fexitProgram struct {
	event string // the handler's event, or "failure"
	fn    string // the kernel function
	prog  *ebpf.Program
	owned bool // loaded apart from the objects (the catch-all's copies)
}

// retarget makes program name of spec an fexit program on fn.
func retarget(spec *ebpf.CollectionSpec, name, fn string) error {
	ps, ok := spec.Programs[name]
	if !ok {
		return fmt.Errorf("BPF object: no program %s", name)
	}
	ps.AttachType = ebpf.AttachTraceFExit
	ps.AttachTo = fn
	return nil
}

// retargetHandlers turns the handlers of one object's spec into fexit
// programs on their syscalls' functions. A handler whose syscall the
// kernel lacks keeps its tracepoint type: it is loaded, never attached
// (attachAll disables its events or fails, as on the tracepoint path).
func retargetHandlers(spec *ebpf.CollectionSpec, kernel *btf.Spec) error {
	for _, h := range (&objects{}).handlers() {
		if _, ok := spec.Programs[h.program]; !ok || h.syscall == "" {
			continue
		}
		ok, err := haveSyscall(kernel, h.syscall)
		if err != nil {
			return err
		}
		if ok {
			if err := retarget(spec, h.program, syscallFunc(h.syscall)); err != nil {
				return err
			}
		}
	}
	return nil
}

// presentFailureSyscalls are the ebusySyscalls the kernel has, and
// those it has more than one function of that name for (a kernel BTF can
// hold two __x64_sys_acct): an fexit program cannot name its target
// then, so the trampoline path leaves them out (the caller warns).
func presentFailureSyscalls(kernel *btf.Spec) (present, ambiguous []string, err error) {
	for _, name := range ebusySyscalls {
		ok, err := haveSyscall(kernel, name)
		switch {
		case errors.Is(err, btf.ErrMultipleMatches):
			ambiguous = append(ambiguous, name)
		case err != nil:
			return nil, nil, err
		case ok:
			present = append(present, name)
		}
	}
	if len(present) == 0 {
		return nil, nil, fmt.Errorf("none of the syscalls the failure program explains is in the kernel BTF (%s...)", syscallFunc(ebusySyscalls[0]))
	}
	return present, ambiguous, nil
}

// loadFailureCopies loads the catch-all for every syscall of names after
// the first (which the failure object itself hooks), each a copy of spec
// with the shared maps.
func loadFailureCopies(o *objects, spec *ebpf.CollectionSpec, names []string, opts ebpf.CollectionOptions) error {
	for _, name := range names {
		cp := spec.Copy()
		if err := retarget(cp, failureProgFailureExit, syscallFunc(name)); err != nil {
			return err
		}
		var p failurePrograms
		if err := cp.LoadAndAssign(&p, &opts); err != nil {
			return fmt.Errorf("load the failure program for %s: %w", syscallFunc(name), err)
		}
		o.fexits = append(o.fexits, fexitProgram{event: "failure", fn: syscallFunc(name), prog: p.FailureExit, owned: true})
	}
	return nil
}

// fexitPoints lists the trampoline path's programs: the handlers on their
// syscalls' functions (those the kernel has), the catch-all's copies, and
// the sched tracepoints.
func (o *objects) fexitPoints() []attachPoint {
	var out []attachPoint
	for _, f := range o.fexits {
		out = append(out, attachPoint{name: f.fn, kind: hookFexit, prog: f.prog})
	}
	return append(out, o.schedPoints()...)
}

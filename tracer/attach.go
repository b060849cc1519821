package tracer

import (
	"errors"
	"fmt"
	"os"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// attachPoint is one program and the hook it is attached to.
type attachPoint struct {
	// name is the tracepoint, or the kernel function of an fexit program.
	name string
	kind hookKind
	prog *ebpf.Program
}

// hookKind is how a program attaches. None needs tracefs.
type hookKind int

const (
	hookRawTracepoint hookKind = iota
	hookTPBTF                  // a BTF-typed (tp_btf) tracepoint program
	hookFexit                  // an fexit program on a kernel function
)

func (a attachPoint) String() string {
	switch a.kind {
	case hookTPBTF:
		return "tp_btf " + a.name
	case hookFexit:
		return "fexit " + a.name
	}
	return "raw tracepoint " + a.name
}

// attachPoints lists every program that is attached on the tracepoint
// path. Only the dispatcher runs on each syscall (on its exit; nothing is
// attached to sys_enter); the syscall handlers are reached through its
// tail call (handlers). It only reads program fields, so it also describes
// what a zero objects would attach (DetectFeatures).
func (o *objects) attachPoints() []attachPoint {
	return append([]attachPoint{{name: "sys_exit", kind: hookTPBTF, prog: o.dispatch.Dispatch}}, o.schedPoints()...)
}

// schedPoints are the process lifecycle's programs, and the count of the
// changes of processes' cgroups (CgroupChanges), on both paths.
func (o *objects) schedPoints() []attachPoint {
	return []attachPoint{
		{name: "sched_process_fork", prog: o.nsproc.NewnsFork},
		{name: "sched_process_exit", prog: o.nsproc.LeaderExit},
		{name: "cgroup_attach_task", prog: o.nsproc.CgroupAttach},
		{name: "cgroup_transfer_tasks", prog: o.nsproc.CgroupTransfer},
		{name: "cgroup_rename", prog: o.nsproc.CgroupRenamed},
	}
}

// slotFailure is the handlers slot of the -EBUSY catch-all (SLOT_FAILURE in
// bpf/common.bpf.h), above every syscall number.
const slotFailure = 511

// handler is one program in the dispatcher's handlers prog array, or, on
// the trampoline path, the fexit program on its syscall's function.
type handler struct {
	event string // what is lost without it: "open_tree", "failure"...
	// program is the program's name in its object (the C function), which
	// the trampoline path retargets to the syscall function.
	program string
	// syscall is the kernel's name for it (<syscallPrefix><syscall> in the
	// kernel BTF); empty for the failure catch-all, which needs none.
	syscall string
	slot    uint32 // the syscall's number on this arch (golang.org/x/sys/unix), or slotFailure
	// optional: a kernel without the syscall (the new mount API before
	// 5.2, mount_setattr before 5.12) only disables its events.
	optional bool
	prog     *ebpf.Program
}

// handlers lists every syscall handler by slot. Like attachPoints it only
// reads program fields.
func (o *objects) handlers() []handler {
	return []handler{
		{"mount", mountProgMountExit, "mount", unix.SYS_MOUNT, false, o.mount.MountExit},
		{"umount", mountProgUmountExit, "umount", unix.SYS_UMOUNT2, false, o.mount.UmountExit},
		{"unshare", nsprocProgUnshareExit, "unshare", unix.SYS_UNSHARE, false, o.nsproc.UnshareExit},
		{"setns", nsprocProgSetnsExit, "setns", unix.SYS_SETNS, false, o.nsproc.SetnsExit},
		{"pivot_root", mountProgPivotRootExit, "pivot_root", unix.SYS_PIVOT_ROOT, true, o.mount.PivotRootExit},
		{"open_tree", newmountProgOpenTreeExit, "open_tree", unix.SYS_OPEN_TREE, true, o.newmount.OpenTreeExit},
		{"move_mount", newmountProgMoveMountExit, "move_mount", unix.SYS_MOVE_MOUNT, true, o.newmount.MoveMountExit},
		{"fsopen", newmountProgFsopenExit, "fsopen", unix.SYS_FSOPEN, true, o.newmount.FsopenExit},
		{"fsmount", newmountProgFsmountExit, "fsmount", unix.SYS_FSMOUNT, true, o.newmount.FsmountExit},
		{"mount_setattr", newmountProgMountSetattrExit, "mount_setattr", unix.SYS_MOUNT_SETATTR, true, o.newmount.MountSetattrExit},
		{"failure", failureProgFailureExit, "", slotFailure, false, o.failure.FailureExit},
	}
}

// syscallFunc is the kernel function of a syscall, which the kernel BTF
// has when the kernel has the syscall. A syscall configured out is an
// alias of sys_ni_syscall, with no BTF of its own.
func syscallFunc(name string) string { return syscallPrefix + name }

// haveSyscall looks name's function up in the kernel BTF (spec, or the
// running kernel's when nil).
func haveSyscall(spec *btf.Spec, name string) (bool, error) {
	return haveKernelFunc(spec, syscallFunc(name))
}

// haveKernelFunc reports whether the kernel's own BTF (vmlinux, not a
// module's) has function fn; spec nil: the running kernel's, parsed here.
func haveKernelFunc(spec *btf.Spec, fn string) (bool, error) {
	if spec == nil {
		var err error
		if spec, err = btf.LoadKernelSpec(); err != nil {
			return false, fmt.Errorf("load kernel BTF: %w", err)
		}
	}
	var f *btf.Func
	err := spec.TypeByName(fn, &f)
	if errors.Is(err, btf.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("look up %s in the kernel BTF: %w", fn, err)
	}
	return true, nil
}

// missingError is a syscall the kernel does not have.
type missingError struct {
	syscall string
}

func (e *missingError) Error() string {
	return fmt.Sprintf("syscall %s: the kernel has none (no %s in its BTF)", e.syscall, syscallFunc(e.syscall))
}

// checkSyscall checks that the kernel has h's syscall (a *missingError
// when not).
func checkSyscall(h handler, spec *btf.Spec) error {
	if h.syscall == "" {
		return nil
	}
	ok, err := haveSyscall(spec, h.syscall)
	if err != nil {
		return err
	}
	if !ok {
		return &missingError{syscall: h.syscall}
	}
	return nil
}

// install puts h in the handlers prog array, after checking that the
// kernel has its syscall (a *missingError when not).
func install(slots *ebpf.Map, h handler, spec *btf.Spec) error {
	if err := checkSyscall(h, spec); err != nil {
		return err
	}
	if err := slots.Put(h.slot, h.prog); err != nil {
		return fmt.Errorf("put %s handler in handlers slot %d: %w", h.event, h.slot, err)
	}
	return nil
}

func attach(a attachPoint) (link.Link, error) {
	var (
		l   link.Link
		err error
	)
	if a.kind != hookRawTracepoint {
		l, err = link.AttachTracing(link.TracingOptions{Program: a.prog})
	} else {
		l, err = link.AttachRawTracepoint(link.RawTracepointOptions{Name: a.name, Program: a.prog})
	}
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("attach %s: the kernel has no such tracepoint: %w", a, err)
		}
		return nil, fmt.Errorf("attach %s: %w", a, err)
	}
	return l, nil
}

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

// attachPoint is one program and the tracepoint it is attached to.
type attachPoint struct {
	name string
	// btf marks a BTF-typed (tp_btf) program; else a raw tracepoint
	// program. Neither needs tracefs.
	btf  bool
	prog *ebpf.Program
}

func (a attachPoint) String() string {
	if a.btf {
		return "tp_btf " + a.name
	}
	return "raw tracepoint " + a.name
}

// attachPoints lists every program that is attached. Only the dispatcher
// runs on each syscall (on its exit; nothing is attached to sys_enter);
// the syscall handlers are reached through its tail call (handlers). It
// only reads program fields, so it also describes what a zero objects
// would attach (DetectFeatures).
func (o *objects) attachPoints() []attachPoint {
	return []attachPoint{
		{name: "sys_exit", btf: true, prog: o.dispatch.Dispatch},
		{name: "sched_process_fork", prog: o.nsproc.NewnsFork},
		{name: "sched_process_exit", prog: o.nsproc.LeaderExit},
	}
}

// slotFailure is the handlers slot of the -EBUSY catch-all (SLOT_FAILURE in
// bpf/common.bpf.h), above every syscall number.
const slotFailure = 511

// handler is one program in the dispatcher's handlers prog array.
type handler struct {
	event string // what is lost without it: "open_tree", "failure"...
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
		{"mount", "mount", unix.SYS_MOUNT, false, o.mount.MountExit},
		{"umount", "umount", unix.SYS_UMOUNT2, false, o.mount.UmountExit},
		{"unshare", "unshare", unix.SYS_UNSHARE, false, o.nsproc.UnshareExit},
		{"setns", "setns", unix.SYS_SETNS, false, o.nsproc.SetnsExit},
		{"pivot_root", "pivot_root", unix.SYS_PIVOT_ROOT, true, o.mount.PivotRootExit},
		{"open_tree", "open_tree", unix.SYS_OPEN_TREE, true, o.newmount.OpenTreeExit},
		{"move_mount", "move_mount", unix.SYS_MOVE_MOUNT, true, o.newmount.MoveMountExit},
		{"fsopen", "fsopen", unix.SYS_FSOPEN, true, o.newmount.FsopenExit},
		{"fsmount", "fsmount", unix.SYS_FSMOUNT, true, o.newmount.FsmountExit},
		{"mount_setattr", "mount_setattr", unix.SYS_MOUNT_SETATTR, true, o.newmount.MountSetattrExit},
		{"failure", "", slotFailure, false, o.failure.FailureExit},
	}
}

// syscallFunc is the kernel function of a syscall, which the kernel BTF
// has when the kernel has the syscall. A syscall configured out is an
// alias of sys_ni_syscall, with no BTF of its own.
func syscallFunc(name string) string { return syscallPrefix + name }

// haveSyscall looks name's function up in the kernel BTF (spec, or the
// running kernel's when nil).
func haveSyscall(spec *btf.Spec, name string) (bool, error) {
	if spec == nil {
		var err error
		if spec, err = btf.LoadKernelSpec(); err != nil {
			return false, fmt.Errorf("load kernel BTF: %w", err)
		}
	}
	var fn *btf.Func
	err := spec.TypeByName(syscallFunc(name), &fn)
	if errors.Is(err, btf.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("look up %s in the kernel BTF: %w", syscallFunc(name), err)
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

// install puts h in the handlers prog array, after checking that the
// kernel has its syscall (a *missingError when not).
func install(slots *ebpf.Map, h handler, spec *btf.Spec) error {
	if h.syscall != "" {
		ok, err := haveSyscall(spec, h.syscall)
		if err != nil {
			return err
		}
		if !ok {
			return &missingError{syscall: h.syscall}
		}
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
	if a.btf {
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

package tracer

import (
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
)

// attachPoint is one program and where it goes. An empty group means a raw
// tracepoint (no tracefs id needed, fired with raw arguments).
type attachPoint struct {
	group, name string
	prog        *ebpf.Program
}

func (a attachPoint) String() string {
	if a.group == "" {
		return "raw tracepoint " + a.name
	}
	return "tracepoint " + a.group + "/" + a.name
}

// attachPoints lists every program. Exit programs come before their entry
// programs: an exit without saved arguments does nothing, while an entry
// attached alone would save state that no exit deletes.
func (o *objects) attachPoints() []attachPoint {
	return []attachPoint{
		{"syscalls", "sys_exit_mount", o.mount.MountExit},
		{"syscalls", "sys_exit_umount", o.mount.UmountExit},
		{"syscalls", "sys_exit_pivot_root", o.mount.PivotRootExit},
		{"syscalls", "sys_exit_open_tree", o.newmount.OpenTreeExit},
		{"syscalls", "sys_exit_move_mount", o.newmount.MoveMountExit},
		{"syscalls", "sys_exit_fsopen", o.newmount.FsopenExit},
		{"syscalls", "sys_exit_fsmount", o.newmount.FsmountExit},
		{"syscalls", "sys_exit_mount_setattr", o.newmount.MountSetattrExit},
		{"syscalls", "sys_exit_unshare", o.nsproc.UnshareExit},
		{"syscalls", "sys_exit_setns", o.nsproc.SetnsExit},

		{"syscalls", "sys_enter_mount", o.mount.MountEnter},
		{"syscalls", "sys_enter_umount", o.mount.UmountEnter},
		{"syscalls", "sys_enter_pivot_root", o.mount.PivotRootEnter},
		{"syscalls", "sys_enter_open_tree", o.newmount.OpenTreeEnter},
		{"syscalls", "sys_enter_move_mount", o.newmount.MoveMountEnter},
		{"syscalls", "sys_enter_fsopen", o.newmount.FsopenEnter},
		{"syscalls", "sys_enter_fsmount", o.newmount.FsmountEnter},
		{"syscalls", "sys_enter_mount_setattr", o.newmount.MountSetattrEnter},
		{"syscalls", "sys_enter_unshare", o.nsproc.UnshareEnter},
		{"syscalls", "sys_enter_setns", o.nsproc.SetnsEnter},

		{"", "sched_process_fork", o.nsproc.NewnsFork},
		{"", "sched_process_exit", o.nsproc.LeaderExit},
		{"", "sys_exit", o.failure.FailureExit},
	}
}

func attach(a attachPoint) (link.Link, error) {
	var (
		l   link.Link
		err error
	)
	if a.group == "" {
		l, err = link.AttachRawTracepoint(link.RawTracepointOptions{Name: a.name, Program: a.prog})
	} else {
		l, err = link.Tracepoint(a.group, a.name, a.prog, nil)
	}
	if err != nil {
		return nil, fmt.Errorf("attach %s: %w", a, err)
	}
	return l, nil
}

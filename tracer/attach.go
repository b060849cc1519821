package tracer

import (
	"errors"
	"fmt"
	"os"

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

// probe is the programs behind one kind of event, attached all or none.
// An optional probe whose tracepoint the kernel lacks (the new mount API
// before 5.2, mount_setattr before 5.12) only disables its events; any
// other failure, and a missing required one, fails the tracer.
type probe struct {
	event    string // what is lost without it: "open_tree", "failure"...
	optional bool
	// Exit programs come before entry programs: an exit without saved
	// arguments does nothing, while an entry attached alone would save
	// state that no exit deletes.
	points []attachPoint
}

// syscallProbe is the exit and entry programs of one syscall.
func syscallProbe(event, syscall string, optional bool, exit, enter *ebpf.Program) probe {
	return probe{event: event, optional: optional, points: []attachPoint{
		{"syscalls", "sys_exit_" + syscall, exit},
		{"syscalls", "sys_enter_" + syscall, enter},
	}}
}

// probes lists every program. It only reads program fields, so it also
// describes what a zero objects would attach (DetectFeatures).
func (o *objects) probes() []probe {
	return []probe{
		syscallProbe("mount", "mount", false, o.mount.MountExit, o.mount.MountEnter),
		syscallProbe("umount", "umount", false, o.mount.UmountExit, o.mount.UmountEnter),
		syscallProbe("unshare", "unshare", false, o.nsproc.UnshareExit, o.nsproc.UnshareEnter),
		syscallProbe("setns", "setns", false, o.nsproc.SetnsExit, o.nsproc.SetnsEnter),
		syscallProbe("pivot_root", "pivot_root", true, o.mount.PivotRootExit, o.mount.PivotRootEnter),
		syscallProbe("open_tree", "open_tree", true, o.newmount.OpenTreeExit, o.newmount.OpenTreeEnter),
		syscallProbe("move_mount", "move_mount", true, o.newmount.MoveMountExit, o.newmount.MoveMountEnter),
		syscallProbe("fsopen", "fsopen", true, o.newmount.FsopenExit, o.newmount.FsopenEnter),
		syscallProbe("fsmount", "fsmount", true, o.newmount.FsmountExit, o.newmount.FsmountEnter),
		syscallProbe("mount_setattr", "mount_setattr", true, o.newmount.MountSetattrExit, o.newmount.MountSetattrEnter),
		{event: "newns_fork", points: []attachPoint{{"", "sched_process_fork", o.nsproc.NewnsFork}}},
		{event: "exit", points: []attachPoint{{"", "sched_process_exit", o.nsproc.LeaderExit}}},
		{event: "failure", points: []attachPoint{{"", "sys_exit", o.failure.FailureExit}}},
	}
}

// missingError is an attach point the kernel does not have.
type missingError struct {
	point attachPoint
	err   error
}

func (e *missingError) Error() string { return fmt.Sprintf("attach %s: %v", e.point, e.err) }
func (e *missingError) Unwrap() error { return e.err }

// attachProbe attaches every point of p, or none: on an error it closes
// what it attached. A point the kernel lacks gives a *missingError.
func attachProbe(p probe) ([]link.Link, error) {
	var links []link.Link
	for _, a := range p.points {
		l, err := attach(a)
		if err != nil {
			for _, l := range links {
				_ = l.Close()
			}
			return nil, err
		}
		links = append(links, l)
	}
	return links, nil
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
	if errors.Is(err, os.ErrNotExist) {
		return nil, &missingError{point: a, err: err}
	}
	if err != nil {
		return nil, fmt.Errorf("attach %s: %w", a, err)
	}
	return l, nil
}

package bench

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
)

// floorTracer is an empty program on the raw sys_exit tracepoint: the cost
// every syscall pays once anything hooks sys_exit (the syscall-work flag on
// every task, the slow exit path, one program call). mntleak's dispatcher
// (its only per-syscall program) sits there, so this is the floor of its
// design.
type floorTracer struct {
	progs []*ebpf.Program
	links []link.Link
}

// attachFloor attaches the empty program to each raw tracepoint named
// (sys_exit alone is the floor; with sys_enter as well it is what any
// design that also hooks syscall entry pays, as mntleak's entry programs
// did through the per-syscall tracepoints before a9dbb7b).
func attachFloor(points ...string) (tracer, error) {
	f := &floorTracer{}
	for _, tp := range points {
		prog, l, err := attachEmpty(tp)
		if err != nil {
			_ = f.stop()
			return nil, err
		}
		f.progs, f.links = append(f.progs, prog), append(f.links, l)
	}
	return f, nil
}

func attachEmpty(tp string) (*ebpf.Program, link.Link, error) {
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Name:         "bench_floor",
		Type:         ebpf.RawTracepoint,
		License:      "GPL",
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()},
	})
	if err != nil {
		return nil, nil, fmt.Errorf("load the empty %s program: %w", tp, err)
	}
	l, err := link.AttachRawTracepoint(link.RawTracepointOptions{Name: tp, Program: prog})
	if err != nil {
		prog.Close()
		return nil, nil, fmt.Errorf("attach the empty program to raw tracepoint %s: %w", tp, err)
	}
	return prog, l, nil
}

func (f *floorTracer) stop() error {
	var errs []error
	for _, l := range f.links {
		errs = append(errs, l.Close())
	}
	for _, p := range f.progs {
		errs = append(errs, p.Close())
	}
	return errors.Join(errs...)
}

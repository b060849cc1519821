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
// every task, the slow exit path, one program call). mntleak's catch-all
// failure program sits there, so this is the floor of its design.
type floorTracer struct {
	prog *ebpf.Program
	l    link.Link
}

func attachFloor() (tracer, error) {
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Name:         "bench_floor",
		Type:         ebpf.RawTracepoint,
		License:      "GPL",
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()},
	})
	if err != nil {
		return nil, fmt.Errorf("load the empty sys_exit program: %w", err)
	}
	l, err := link.AttachRawTracepoint(link.RawTracepointOptions{Name: "sys_exit", Program: prog})
	if err != nil {
		prog.Close()
		return nil, fmt.Errorf("attach the empty program to raw tracepoint sys_exit: %w", err)
	}
	return &floorTracer{prog: prog, l: l}, nil
}

func (f *floorTracer) stop() error {
	return errors.Join(f.l.Close(), f.prog.Close())
}

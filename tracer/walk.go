package tracer

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/features"
)

// PathWalk is how the programs walk dentries to make a relative path or an
// fd absolute (bpf/path.bpf.h).
type PathWalk int

const (
	// WalkLoop runs the walk through the bpf_loop helper (Linux 5.17+).
	WalkLoop PathWalk = iota
	// WalkBounded runs it as a plain bounded loop, for kernels without
	// bpf_loop. It resolves the same paths, MaxWalk steps deep like
	// WalkLoop; a deeper path is marked truncated.
	WalkBounded
)

// MaxWalk is how many steps (path components plus mount crossings) either
// walk takes before it gives up and marks the path truncated (MAX_WALK in
// bpf/path.bpf.h).
const MaxWalk = 64

// walkCallback is the only function whose address the programs load: the
// bpf_loop callback.
const walkCallback = "walk_step"

var walkNames = [...]string{WalkLoop: "bpf_loop", WalkBounded: "bounded loop"}

func (w PathWalk) String() string {
	if w >= 0 && int(w) < len(walkNames) {
		return walkNames[w]
	}
	return fmt.Sprintf("walk(%d)", int(w))
}

// probePathWalk asks the kernel whether the program types mntleak loads
// may call bpf_loop. An error (the probe itself failed, e.g. without
// CAP_BPF) comes with WalkBounded, which every kernel accepts.
func probePathWalk() (PathWalk, error) {
	for _, pt := range []ebpf.ProgramType{ebpf.TracePoint, ebpf.RawTracepoint} {
		err := features.HaveProgramHelper(pt, asm.FnLoop)
		if errors.Is(err, ebpf.ErrNotSupported) {
			return WalkBounded, nil
		}
		if err != nil {
			return WalkBounded, fmt.Errorf("probe bpf_loop for %s programs: %w", pt, err)
		}
	}
	return WalkLoop, nil
}

// prepareWalk sets no_bpf_loop in one object's spec for the bounded walk.
// The verifier then drops the bpf_loop branch, call included; what it
// cannot drop is the load of the callback's address in that branch (a
// BPF_PSEUDO_FUNC load, which kernels before 5.13 refuse to parse, dead
// or not), so that load becomes a plain zero here. The callback stays: the
// bounded loop calls it as a function.
func prepareWalk(name string, spec *ebpf.CollectionSpec, walk PathWalk) error {
	if walk != WalkBounded {
		return nil
	}
	if v, ok := spec.Variables["no_bpf_loop"]; ok {
		if !v.Constant() {
			return fmt.Errorf("BPF object %s: no_bpf_loop is not read-only", name)
		}
		if err := v.Set(true); err != nil {
			return fmt.Errorf("BPF object %s: set no_bpf_loop: %w", name, err)
		}
	}
	for progName, prog := range spec.Programs {
		for i := range prog.Instructions {
			ins := &prog.Instructions[i]
			if !ins.IsLoadOfFunctionPointer() {
				continue
			}
			if ref := ins.Reference(); ref != walkCallback {
				return fmt.Errorf("BPF object %s: program %s loads the address of %q: only %s's is known to be dead code without bpf_loop",
					name, progName, ref, walkCallback)
			}
			*ins = asm.LoadImm(ins.Dst, 0, asm.DWord).WithSource(ins.Source())
		}
	}
	return nil
}

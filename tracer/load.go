package tracer

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"go.uber.org/zap"

	"github.com/mntleak/mntleak/internal/logkey"
)

// objects holds the loaded BPF objects.
type objects struct {
	mount    mountObjects
	newmount newmountObjects
	nsproc   nsprocObjects
	failure  failureObjects
	dispatch dispatchObjects
	// hooks is the path loaded: HooksTracepoint or HooksTrampoline, whose
	// fexit programs are fexits (trampoline.go).
	hooks  Hooks
	fexits []fexitProgram
}

// Maps every object defines (bpf/common.bpf.h, bpf/path.bpf.h) and that
// must be one instance for all of them.
var sharedMaps = []string{"events", "lost", "quiet_pending", "scratch", "stage", "handlers", "task_mntns_map"}

// loadOptions is what the loader changes in every object before loading.
type loadOptions struct {
	buffer       Buffer // BufferRingbuf or BufferPerf, never auto
	ringBufBytes int
	// kernelTypes is the kernel BTF for CO-RE relocations; nil means the
	// running kernel's, found by cilium/ebpf itself.
	kernelTypes *btf.Spec
	walk        PathWalk
	hooks       Hooks // HooksTracepoint or HooksTrampoline, never auto
	// logStats keeps the verifier's statistics (processed instructions,
	// verification time) in each Program's VerifierLog, for the tests.
	logStats bool
	// taskMapEntries bounds task_mntns_map (0: as the object has it).
	taskMapEntries uint32
}

// prepare sets the buffer and the path walk in one object's spec. A map
// replacement must match the spec it replaces, so every object gets the
// same events map.
func (lo loadOptions) prepare(name string, spec *ebpf.CollectionSpec) error {
	if err := prepareWalk(name, spec, lo.walk); err != nil {
		return err
	}
	events, ok := spec.Maps["events"]
	if !ok {
		return fmt.Errorf("BPF object %s: no events map", name)
	}
	if err := lo.prepareTasks(name, spec); err != nil {
		return err
	}
	usePerf, ok := spec.Variables["use_perf"]
	if !ok || !usePerf.Constant() {
		return fmt.Errorf("BPF object %s: no read-only use_perf constant", name)
	}
	if lo.buffer == BufferPerf {
		// One perf buffer per possible CPU: MaxEntries 0 lets cilium/ebpf
		// size the array, and no ring buffer map is created at all.
		events.Type, events.KeySize, events.ValueSize, events.MaxEntries = ebpf.PerfEventArray, 4, 4, 0
		if err := usePerf.Set(true); err != nil {
			return fmt.Errorf("BPF object %s: set use_perf: %w", name, err)
		}
		return nil
	}
	events.MaxEntries = uint32(lo.ringBufBytes)
	return nil
}

// prepareTasks bounds task_mntns_map in every object that has it, and
// sets where nsproc's count of its entries marks it as possibly evicting
// (tasks_full_at: tasksComplete of the bound, what Tasks trusts).
func (lo loadOptions) prepareTasks(name string, spec *ebpf.CollectionSpec) error {
	m, ok := spec.Maps["task_mntns_map"]
	if !ok {
		return nil
	}
	if lo.taskMapEntries != 0 {
		m.MaxEntries = lo.taskMapEntries
	}
	at, ok := spec.Variables["tasks_full_at"]
	if !ok {
		return nil
	}
	if err := at.Set(int64(tasksComplete * float64(m.MaxEntries))); err != nil {
		return fmt.Errorf("BPF object %s: set tasks_full_at: %w", name, err)
	}
	return nil
}

func loadObjects(lo loadOptions, log *zap.Logger) (*objects, error) {
	o := &objects{hooks: lo.hooks}
	all := []struct {
		name string
		load func() (*ebpf.CollectionSpec, error)
		dst  any
	}{
		// mount first: its maps are the shared ones.
		{"mount", loadMount, &o.mount},
		{"newmount", loadNewmount, &o.newmount},
		{"nsproc", loadNsproc, &o.nsproc},
		{"failure", loadFailure, &o.failure},
		{"dispatch", loadDispatch, &o.dispatch},
	}
	var (
		shared  map[string]*ebpf.Map
		failure []string // the trampoline path's catch-all syscalls
	)
	for _, obj := range all {
		if lo.hooks == HooksTrampoline && obj.name == "dispatch" {
			continue
		}
		spec, err := obj.load()
		if err != nil {
			o.close()
			return nil, fmt.Errorf("parse BPF object %s: %w", obj.name, err)
		}
		if err := lo.prepare(obj.name, spec); err != nil {
			o.close()
			return nil, err
		}
		if lo.hooks == HooksTrampoline {
			if failure, err = lo.retarget(obj.name, spec, log); err != nil {
				o.close()
				return nil, fmt.Errorf("BPF object %s: %w", obj.name, err)
			}
		}
		opts := lo.collectionOptions(spec, shared)
		if err := spec.LoadAndAssign(obj.dst, opts); err != nil {
			o.close()
			return nil, loadError(obj.name, err, log)
		}
		if len(failure) > 0 {
			o.fexits = append(o.fexits, fexitProgram{event: "failure", fn: syscallFunc(failure[0]), prog: o.failure.FailureExit})
			if err := loadFailureCopies(o, spec, failure[1:], *opts); err != nil {
				o.close()
				return nil, loadError(obj.name, err, log)
			}
			failure = nil
		}
		if shared == nil {
			shared = map[string]*ebpf.Map{
				"events":         o.mount.Events,
				"lost":           o.mount.Lost,
				"quiet_pending":  o.mount.QuietPending,
				"scratch":        o.mount.Scratch,
				"stage":          o.mount.Stage,
				"handlers":       o.mount.Handlers,
				"task_mntns_map": o.mount.TaskMntnsMap,
			}
		}
	}
	if lo.hooks == HooksTrampoline {
		if err := o.handlerFexits(lo.kernelTypes); err != nil {
			o.close()
			return nil, err
		}
	}
	return o, nil
}

// collectionOptions is what one object's spec loads with: the kernel BTF,
// the verifier's statistics if asked for, and the shared maps in place of
// the object's own (none while shared is nil: the first object makes them).
func (lo loadOptions) collectionOptions(spec *ebpf.CollectionSpec, shared map[string]*ebpf.Map) *ebpf.CollectionOptions {
	opts := &ebpf.CollectionOptions{Programs: ebpf.ProgramOptions{KernelTypes: lo.kernelTypes}}
	if lo.logStats {
		opts.Programs.LogLevel = ebpf.LogLevelStats
	}
	if shared != nil {
		opts.MapReplacements = map[string]*ebpf.Map{}
		for _, name := range sharedMaps {
			if _, ok := spec.Maps[name]; ok {
				opts.MapReplacements[name] = shared[name]
			}
		}
	}
	return opts
}

// retarget makes the trampoline path's fexit programs of one object: its
// handlers on their syscalls, or, for the failure object, the catch-all on
// the first of the syscalls it returns (the others get copies).
func (lo loadOptions) retarget(name string, spec *ebpf.CollectionSpec, log *zap.Logger) ([]string, error) {
	if name != "failure" {
		return nil, retargetHandlers(spec, lo.kernelTypes)
	}
	names, ambiguous, err := presentFailureSyscalls(lo.kernelTypes)
	if err != nil {
		return nil, err
	}
	if len(ambiguous) > 0 {
		log.Warn("the kernel BTF has more than one function for these syscalls: the trampoline path cannot hook them, so their EBUSY failures go unreported (--hooks=tracepoint reports them)",
			zap.Strings(logkey.Syscall, ambiguous))
	}
	return names, retarget(spec, failureProgFailureExit, syscallFunc(names[0]))
}

// handlerFexits lists the handlers loaded as fexit programs.
func (o *objects) handlerFexits(kernel *btf.Spec) error {
	for _, h := range o.handlers() {
		if h.syscall == "" {
			continue
		}
		ok, err := haveSyscall(kernel, h.syscall)
		if err != nil {
			return err
		}
		if ok {
			o.fexits = append(o.fexits, fexitProgram{event: h.event, fn: syscallFunc(h.syscall), prog: h.prog})
		}
	}
	return nil
}

// loadError logs the whole verifier log when there is one: the error string
// alone keeps only its last lines.
func loadError(object string, err error, log *zap.Logger) error {
	var ve *ebpf.VerifierError
	if errors.As(err, &ve) {
		log.Error("BPF verifier rejected a program",
			zap.String(logkey.Program, object),
			zap.String(logkey.Verifier, fmt.Sprintf("%+v", ve)))
	}
	return fmt.Errorf("load BPF object %s: %w", object, err)
}

func (o *objects) close() {
	// Close of a zero-value object is safe: the generated Close skips nil.
	_ = o.mount.Close()
	_ = o.newmount.Close()
	_ = o.nsproc.Close()
	_ = o.failure.Close()
	_ = o.dispatch.Close()
	for _, f := range o.fexits {
		if f.owned {
			_ = f.prog.Close()
		}
	}
}

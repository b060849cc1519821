package tracer

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
	"go.uber.org/zap"

	"github.com/mntleak/mntleak/internal/logkey"
)

// objects holds the four loaded BPF objects.
type objects struct {
	mount    mountObjects
	newmount newmountObjects
	nsproc   nsprocObjects
	failure  failureObjects
}

// Maps every object defines (bpf/common.bpf.h, bpf/path.bpf.h) and that
// must be one instance for all of them.
var sharedMaps = []string{"events", "lost", "enter_state", "scratch"}

func loadObjects(ringBufBytes int, log *zap.Logger) (*objects, error) {
	o := &objects{}
	spec, err := loadMount()
	if err != nil {
		return nil, fmt.Errorf("parse BPF object mount: %w", err)
	}
	events, ok := spec.Maps["events"]
	if !ok {
		return nil, errors.New("parse BPF object mount: no events map")
	}
	events.MaxEntries = uint32(ringBufBytes)
	if err := spec.LoadAndAssign(&o.mount, nil); err != nil {
		return nil, loadError("mount", err, log)
	}
	shared := map[string]*ebpf.Map{
		"events":      o.mount.Events,
		"lost":        o.mount.Lost,
		"enter_state": o.mount.EnterState,
		"scratch":     o.mount.Scratch,
	}

	others := []struct {
		name string
		load func() (*ebpf.CollectionSpec, error)
		dst  any
	}{
		{"newmount", loadNewmount, &o.newmount},
		{"nsproc", loadNsproc, &o.nsproc},
		{"failure", loadFailure, &o.failure},
	}
	for _, obj := range others {
		spec, err := obj.load()
		if err != nil {
			o.close()
			return nil, fmt.Errorf("parse BPF object %s: %w", obj.name, err)
		}
		// A replacement must match the spec it replaces, size included.
		if m, ok := spec.Maps["events"]; ok {
			m.MaxEntries = uint32(ringBufBytes)
		}
		repl := map[string]*ebpf.Map{}
		for _, name := range sharedMaps {
			if _, ok := spec.Maps[name]; ok {
				repl[name] = shared[name]
			}
		}
		if err := spec.LoadAndAssign(obj.dst, &ebpf.CollectionOptions{MapReplacements: repl}); err != nil {
			o.close()
			return nil, loadError(obj.name, err, log)
		}
	}
	return o, nil
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
}

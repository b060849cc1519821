package attribution

import (
	"context"
	"errors"
	"strconv"
	"sync"

	"github.com/mntleak/mntleak/internal/replayq"
)

// Ops of a Record.
const (
	// OpSettings: what the enrichment was set up with (the node's name,
	// the kubelet's root), written once at the start of a recording.
	OpSettings = "settings"
	// OpContainer and OpPod: one answer, by container id or pod UID.
	OpContainer = "container"
	OpPod       = "pod"
	// OpSkip: finding number Key (counted from 1) was logged without
	// enrichment; Err says why.
	OpSkip = "skip"
)

// Error kinds of a recorded answer, so a replayed error is the same kind.
const (
	ErrKindNotFound    = "not_found"
	ErrKindUnavailable = "unavailable"
	ErrKindTimeout     = "timeout"
	ErrKindCanceled    = "canceled"
)

// Record is one attribution line of a recorded stream ({"attribution":
// {...}}), next to the events and /proc answers.
type Record struct {
	Op        string     `json:"op"`
	Key       string     `json:"key,omitempty"`
	Container *Container `json:"container,omitempty"`
	Pod       *Pod       `json:"pod,omitempty"`
	Err       string     `json:"error,omitempty"`
	ErrKind   string     `json:"error_kind,omitempty"`
	// OpSettings.
	Node        string `json:"node,omitempty"`
	KubeletRoot string `json:"kubelet_root,omitempty"`
}

// Valid reports whether r's op is one of the known ones.
func (r *Record) Valid() bool {
	switch r.Op {
	case OpSettings, OpContainer, OpPod, OpSkip:
		return true
	}
	return false
}

func (r *Record) setErr(err error) {
	if err == nil {
		return
	}
	r.Err = err.Error()
	switch {
	case errors.Is(err, ErrNotFound):
		r.ErrKind = ErrKindNotFound
	case errors.Is(err, ErrUnavailable):
		r.ErrKind = ErrKindUnavailable
	case errors.Is(err, context.DeadlineExceeded):
		r.ErrKind = ErrKindTimeout
	case errors.Is(err, context.Canceled):
		r.ErrKind = ErrKindCanceled
	}
}

func (r *Record) err() error {
	if r.Err == "" {
		return nil
	}
	return &recordedError{msg: r.Err, kind: r.ErrKind}
}

// recordedError is an error read back from a recording: the same message,
// and errors.Is tells its kind as it told the original's.
type recordedError struct{ msg, kind string }

func (e *recordedError) Error() string { return e.msg }

func (e *recordedError) Is(target error) bool {
	switch e.kind {
	case ErrKindNotFound:
		return target == ErrNotFound
	case ErrKindUnavailable:
		return target == ErrUnavailable
	case ErrKindTimeout:
		return target == context.DeadlineExceeded
	case ErrKindCanceled:
		return target == context.Canceled
	}
	return false
}

// Recorder passes every question to Lookup and hands each answer to Write,
// in call order.
type Recorder struct {
	Lookup Lookup
	Write  func(*Record)
}

// Container implements Lookup.
func (r Recorder) Container(ctx context.Context, id string) (Container, error) {
	c, err := r.Lookup.Container(ctx, id)
	rec := &Record{Op: OpContainer, Key: id}
	if err == nil {
		rec.Container = &c
	}
	rec.setErr(err)
	r.Write(rec)
	return c, err
}

// Pod implements Lookup.
func (r Recorder) Pod(ctx context.Context, uid string) (Pod, error) {
	p, err := r.Lookup.Pod(ctx, uid)
	rec := &Record{Op: OpPod, Key: uid}
	if err == nil {
		rec.Pod = &p
	}
	rec.setErr(err)
	r.Write(rec)
	return p, err
}

// Replay answers from recorded Records: each question takes the next
// answer recorded for it, and once those are used up the last one again.
type Replay struct {
	mu       sync.Mutex
	answers  *replayq.Queue[*Record]
	settings *Record
	skips    map[int]string
}

// NewReplay returns an empty Replay.
func NewReplay() *Replay {
	return &Replay{answers: replayq.New[*Record](), skips: map[int]string{}}
}

// Add takes one recorded line.
func (r *Replay) Add(rec *Record) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch rec.Op {
	case OpSettings:
		r.settings = rec
	case OpSkip:
		if n, err := strconv.Atoi(rec.Key); err == nil {
			r.skips[n] = rec.Err
		}
	default:
		r.answers.Add(rec.Op+" "+rec.Key, rec)
	}
}

// Settings returns the recorded settings; ok is false for a recording
// made without enrichment.
func (r *Replay) Settings() (node, kubeletRoot string, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.settings == nil {
		return "", "", false
	}
	return r.settings.Node, r.settings.KubeletRoot, true
}

// Skipped returns why finding n (counted from 1) was logged without
// enrichment, if it was.
func (r *Replay) Skipped(n int) (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	why, ok := r.skips[n]
	return why, ok
}

func (r *Replay) next(op, key string) (*Record, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.answers.Next(op + " " + key)
}

// Container implements Lookup.
func (r *Replay) Container(_ context.Context, id string) (Container, error) {
	rec, err := r.next(OpContainer, id)
	if err != nil {
		return Container{}, err
	}
	if rec.Container == nil {
		return Container{}, rec.err()
	}
	return *rec.Container, rec.err()
}

// Pod implements Lookup.
func (r *Replay) Pod(_ context.Context, uid string) (Pod, error) {
	rec, err := r.next(OpPod, uid)
	if err != nil {
		return Pod{}, err
	}
	if rec.Pod == nil {
		return Pod{}, rec.err()
	}
	return *rec.Pod, rec.err()
}

package correlate

import (
	"errors"
	"fmt"
	"io"

	"github.com/mntleak/mntleak/attribution"
	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/finding"
	"github.com/mntleak/mntleak/procfs"
	"github.com/mntleak/mntleak/stream"
)

// Replay runs a correlator over a stream recorded by `mntleak trace
// --record`. Each event is followed in the stream by the /proc answers the
// live correlator read while handling it; those are queued just before the
// event is fed, so a question asked at another point (a periodic sweep, a
// read the live run did not make) cannot take an answer meant for a later
// one. The answers before the first event are the startup snapshot's. The
// findings are the ones the live daemon reached. A recording whose last
// line is cut short is replayed up to it, and the *stream.TruncatedError
// returned after the findings.
func Replay(r io.Reader, name string, emit func(*finding.Finding)) error {
	return ReplayWith(r, name, emit, nil)
}

// ReplayWith is Replay that hands the stream's attribution lines to
// attrib (nil: ignored), all of them before the first finding is emitted:
// the caller fills the findings from them (package enrich).
func ReplayWith(r io.Reader, name string, emit func(*finding.Finding), attrib func(*attribution.Record)) error {
	type step struct {
		notes   []*event.MountNote // read before ev, applied before it
		ev      *event.Event
		answers []*procfs.Record
	}
	var (
		startup []*procfs.Record
		steps   []step
		notes   []*event.MountNote
	)
	err := stream.Read(r, name, func(it stream.Item) error {
		switch {
		case it.Attribution != nil:
			if attrib != nil {
				attrib(it.Attribution)
			}
		case it.Note != nil:
			notes = append(notes, it.Note)
		case it.Event != nil:
			steps = append(steps, step{notes: notes, ev: it.Event})
			notes = nil
		case len(steps) == 0:
			startup = append(startup, it.Proc)
		default:
			last := &steps[len(steps)-1]
			last.answers = append(last.answers, it.Proc)
		}
		return nil
	})
	var truncated *stream.TruncatedError
	if err != nil && !errors.As(err, &truncated) {
		return err
	}
	if len(startup) == 0 && len(steps) == 0 {
		return fmt.Errorf("%s: the recording is empty (make one with mntleak trace --record FILE)", name)
	}
	proc := procfs.NewReplay()
	for _, rec := range startup {
		proc.Add(rec)
	}
	corr := New(proc, Options{}, emit)
	if err := corr.Start(); err != nil {
		return fmt.Errorf("%s: startup snapshot: %w", name, err)
	}
	for _, st := range steps {
		for _, n := range st.notes {
			corr.Note(*n)
		}
		proc.AddStep(st.answers)
		corr.Handle(st.ev)
	}
	corr.Flush() // the leaks the live run reported when it stopped
	if truncated != nil {
		return truncated
	}
	return nil
}

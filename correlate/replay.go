package correlate

import (
	"fmt"
	"io"

	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/procfs"
	"github.com/mntleak/mntleak/stream"
)

// Replay runs a correlator over a stream recorded by `mntleak trace
// --record`: the /proc answers are queued first (the correlator asks for
// them while handling the events they follow), then the events are fed in
// order. The findings are the ones the live daemon reached.
func Replay(r io.Reader, name string, emit func(*Finding)) error {
	proc := procfs.NewReplay()
	var events []*event.Event
	err := stream.Read(r, name, func(it stream.Item) error {
		if it.Proc != nil {
			proc.Add(it.Proc)
		} else {
			events = append(events, it.Event)
		}
		return nil
	})
	if err != nil {
		return err
	}
	corr := New(proc, Options{}, emit)
	if err := corr.Start(); err != nil {
		return fmt.Errorf("%s: startup snapshot: %w", name, err)
	}
	for _, ev := range events {
		corr.Handle(ev)
	}
	return nil
}

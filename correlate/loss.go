package correlate

import (
	"time"

	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/finding"
)

// loss is an interval in which the kernel dropped events (the ring buffer
// was full): somewhere in (From, To], Count events never arrived.
type loss struct {
	from, to time.Time
	count    uint64
}

// maxLosses bounds the loss history; the oldest intervals are merged, which
// only widens them (a finding may then say "may be incomplete" too often,
// never too rarely).
const maxLosses = 256

// lost records a reader-synthesized loss event. Lost mount events mean
// every mount table may be out of date, so all are re-read when next used.
func (c *Correlator) lost(ev *event.Event) {
	if ev.Lost == 0 {
		return
	}
	l := loss{from: ev.LostSince, to: ev.Time, count: ev.Lost}
	if l.from.After(l.to) {
		l.from = l.to
	}
	c.losses = append(c.losses, l)
	c.lossEvents++
	c.lostSinceScan = true
	if len(c.losses) > maxLosses {
		a, b := c.losses[0], c.losses[1]
		c.losses[1] = loss{from: minTime(a.from, b.from), to: b.to, count: a.count + b.count}
		c.losses = c.losses[1:]
	}
	c.ledger.Invalidate()
	c.lineage.Lost(l.to)
}

// report marks a finding whose evidence window overlaps a loss and hands
// it to emit.
func (c *Correlator) report(f *finding.Finding) {
	nameActors(f)
	c.markIncomplete(f)
	c.emit(f)
}

// nameActors picks, for every holder, the one process the verdict names.
func nameActors(f *finding.Finding) {
	for i := range f.Holders {
		f.Holders[i].Actor = f.Holders[i].ChooseActor()
	}
	f.Release = f.ReleaseCommand()
}

// markIncomplete: the evidence window runs from the oldest dated fact the
// verdict used (an event, a holder namespace's creation) to the call. With
// no dated fact, any loss before the call counts: the leaking event may be
// exactly what was lost.
func (c *Correlator) markIncomplete(f *finding.Finding) {
	if len(c.losses) == 0 {
		return
	}
	start := f.Call.Time
	for _, e := range f.Evidence {
		if !e.Time.IsZero() && e.Time.Before(start) {
			start = e.Time
		}
	}
	for _, h := range f.Holders {
		if !h.Created.IsZero() && h.Created.Before(start) {
			start = h.Created
		}
	}
	if !start.Before(f.Call.Time) {
		start = time.Time{}
	}
	var in finding.Incomplete
	for _, l := range c.losses {
		if l.from.After(f.Call.Time) || (!start.IsZero() && l.to.Before(start)) {
			continue
		}
		if in.Lost == 0 || l.from.Before(in.From) {
			in.From = l.from
		}
		if l.to.After(in.To) {
			in.To = l.to
		}
		in.Lost += l.count
	}
	if in.Lost > 0 {
		f.Incomplete = &in
	}
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

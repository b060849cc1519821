package correlate

import (
	"testing"
	"time"

	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/finding"
)

// lossAt records the i-th of a run of losses 10 s apart: each from
// t0+10i s to 5 s later, i+1 events.
func lossAt(c *Correlator, i int) {
	from := t0.Add(time.Duration(i) * 10 * time.Second)
	c.lost(&event.Event{Kind: event.KindLost, Lost: uint64(i) + 1, LostSince: from, Time: from.Add(5 * time.Second)})
}

// incompleteOf is what markIncomplete says of a finding about a call an
// hour after t0 whose oldest evidence is at since (zero: none dated).
func incompleteOf(c *Correlator, since time.Time) finding.Incomplete {
	f := &finding.Finding{Call: finding.Call{Time: t0.Add(time.Hour)}}
	if !since.IsZero() {
		f.Evidence = []finding.Evidence{{Time: since}}
	}
	c.markIncomplete(f)
	if f.Incomplete == nil {
		return finding.Incomplete{}
	}
	return *f.Incomplete
}

// The loss history keeps maxLosses intervals apart; one more merges the
// two oldest into one that spans both and counts the events of both.
func TestLossHistoryMergesOnlyPastItsCap(t *testing.T) {
	c := New(noCommands{}, Options{}, func(*finding.Finding) {})
	for i := range maxLosses {
		lossAt(c, i)
	}
	// Evidence from t0+8s: the first loss (to t0+5s) is before it.
	last := t0.Add((maxLosses-1)*10*time.Second + 5*time.Second)
	want := finding.Incomplete{Lost: maxLosses*(maxLosses+1)/2 - 1, From: t0.Add(10 * time.Second), To: last}
	if got := incompleteOf(c, t0.Add(8*time.Second)); got != want {
		t.Errorf("%d losses, evidence after the first: incomplete %+v, want %+v", maxLosses, got, want)
	}
	lossAt(c, maxLosses)
	if len(c.losses) != maxLosses {
		t.Errorf("%d losses kept, want %d", len(c.losses), maxLosses)
	}
	merged := loss{from: t0, to: t0.Add(15 * time.Second), count: 3}
	if c.losses[0] != merged {
		got := c.losses[0]
		t.Errorf("oldest loss from %s to %s, %d events; want the first two merged: from %s to %s, %d events",
			got.from, got.to, got.count, merged.from, merged.to, merged.count)
	}
	last = last.Add(10 * time.Second)
	want = finding.Incomplete{Lost: (maxLosses + 1) * (maxLosses + 2) / 2, From: t0, To: last}
	if got := incompleteOf(c, time.Time{}); got != want {
		t.Errorf("%d losses, no dated evidence: incomplete %+v, want %+v", maxLosses+1, got, want)
	}
}

package correlate

import (
	"testing"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/event"
)

// TestHistoryStaysBounded: the history never holds more than maxHist
// events, even when a trim would spare every one of them, and what it
// spares is the newest of the spared.
func TestHistoryStaysBounded(t *testing.T) {
	const maxHist = 64
	l := NewLedger(maxHist)
	l.spare = func() func(*event.Event) bool { return func(*event.Event) bool { return true } }
	for i := range 10 * maxHist {
		l.Record(&event.Event{Kind: event.KindMount, MntNS: 7, Flags: unix.MS_PRIVATE, MonoNS: uint64(i)})
		if n := len(l.History()); n > maxHist {
			t.Fatalf("after %d events the history holds %d, more than %d", i+1, n, maxHist)
		}
	}
	h := l.History()
	if last := h[len(h)-1].MonoNS; last != 10*maxHist-1 {
		t.Errorf("the newest event kept is %d, want %d", last, 10*maxHist-1)
	}
	for i := 1; i < len(h); i++ {
		if h[i].MonoNS <= h[i-1].MonoNS {
			t.Fatalf("history out of order at %d: %d after %d", i, h[i].MonoNS, h[i-1].MonoNS)
		}
	}
}

// TestTrimKeepsTheNewestThreeQuarters: with nothing spared, a trim keeps
// the newest three quarters of the history, and the next trim comes a
// quarter later.
func TestTrimKeepsTheNewestThreeQuarters(t *testing.T) {
	const maxHist = 64
	l := NewLedger(maxHist)
	for i := range maxHist + 1 {
		l.Record(&event.Event{Kind: event.KindUmount, MntNS: 7, MonoNS: uint64(i)})
	}
	h := l.History()
	if len(h) != maxHist*3/4 || h[0].MonoNS != maxHist+1-maxHist*3/4 || h[len(h)-1].MonoNS != maxHist {
		t.Fatalf("after %d events the history holds %d (%d to %d), want the newest %d", maxHist+1, len(h), h[0].MonoNS, h[len(h)-1].MonoNS, maxHist*3/4)
	}
}

// TestTrimSparesLiveEvidenceOnly: a trim spares a propagation change or
// a recursive bind (by mount(2), or open_tree and its move_mount) made in
// a live namespace or the parent of one; a dead namespace's, a failed
// one, a plain bind, another tree's move_mount go with the oldest quarter.
func TestTrimSparesLiveEvidenceOnly(t *testing.T) {
	c := New(nil, Options{MaxHistory: 64}, nil)
	at := Member{PID: 10, Comm: "unshare"}
	c.lineage.Created(30, 20, OriginUnshare, at, nil) // 20 is 30's parent, not itself traced
	private := func(ns uint32) *event.Event {
		return &event.Event{Kind: event.KindMount, MntNS: ns, Flags: unix.MS_PRIVATE}
	}
	spared := []*event.Event{private(30), private(20), {Kind: event.KindMountSetattr, MntNS: 30, Propagation: unix.MS_SLAVE},
		{Kind: event.KindMount, MntNS: 30, Flags: unix.MS_BIND | unix.MS_REC},
		{Kind: event.KindOpenTree, MntNS: 30, PID: 5, MntID: 77, Flags: unix.OPEN_TREE_CLONE | unix.AT_RECURSIVE},
		{Kind: event.KindMoveMount, MntNS: 30, PID: 5, MntID: 77}}
	dropped := []*event.Event{private(99), {Kind: event.KindMount, MntNS: 30, Flags: unix.MS_BIND},
		{Kind: event.KindMount, MntNS: 30, Flags: unix.MS_PRIVATE, Ret: -int64(unix.EINVAL)},
		{Kind: event.KindMoveMount, MntNS: 30, PID: 5, MntID: 78}}
	for _, ev := range append(append([]*event.Event{}, spared...), dropped...) {
		c.ledger.Record(ev)
	}
	for range 64 { // churn: the ten above are in the oldest quarter
		c.ledger.Record(&event.Event{Kind: event.KindUmount, MntNS: 40})
	}
	kept := map[*event.Event]bool{}
	for _, ev := range c.ledger.History() {
		kept[ev] = true
	}
	for i, ev := range spared {
		if !kept[ev] {
			t.Errorf("spared event %d (ns %d) was dropped", i, ev.MntNS)
		}
	}
	for i, ev := range dropped {
		if kept[ev] {
			t.Errorf("event %d (ns %d, flags %#x, ret %d) was spared", i, ev.MntNS, ev.Flags, ev.Ret)
		}
	}
}

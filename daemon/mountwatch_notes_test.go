package daemon

import (
	"testing"

	"github.com/mntleak/mntleak/internal/kmount"
)

// TestDetachedLaterOnlyBeforeTheLastDetach: within one read of a group, an
// attach is left undescribed only when a later event detaches the same
// mount; one attached again after that detach (moved out of the
// namespace and back) is described.
func TestDetachedLaterOnlyBeforeTheLastDetach(t *testing.T) {
	attach := func(id uint64) kmount.MountEvent { return kmount.MountEvent{Mount: id} }
	detach := func(id uint64) kmount.MountEvent { return kmount.MountEvent{Mount: id, Detach: true} }
	moved := func(id uint64) kmount.MountEvent { return kmount.MountEvent{Mount: id, Moved: true} }
	evs := []kmount.MountEvent{attach(1), detach(1), attach(1), attach(2), moved(3), detach(3), detach(4), attach(4), moved(5)}
	want := []bool{true, false, false, false, true, false, false, false, false}
	mw := &mountWatch{}
	gone := mw.lastDetaches(evs)
	for i, ev := range evs {
		if got := detachedLater(gone, i, ev); got != want[i] {
			t.Errorf("event %d %+v: detachedLater %v, want %v", i, ev, got, want[i])
		}
	}
	clear(gone)
	if len(mw.gone) != 0 {
		t.Errorf("the watch's scratch map kept %d entries after clear", len(mw.gone))
	}
}

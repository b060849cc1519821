package daemon

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/internal/kmount"
)

// drain returns the notes the kernel queued so far, without waiting, each
// stamped now (read once, when there are notes): a group with events, in
// the order the kernel queued them. The kernel queues an event before the
// call that caused it returns, so the notes of a call whose tracer event
// the pipeline holds are here.
func (mw *mountWatch) drain(clock func() time.Time) (notes []event.MountNote, err error) {
	defer func() {
		if len(notes) > 0 {
			now := clock()
			for i := range notes {
				notes[i].Time = now
			}
		}
	}()
	notes = mw.said
	mw.said = nil
	var errs []error
	for {
		n, err := unix.EpollWait(mw.ep, mw.ready, 0)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return notes, fmt.Errorf("epoll_wait on the mount notes: %w", err)
		}
		for _, r := range mw.ready[:n] {
			fan := mw.fans[r.Fd]
			if fan == nil {
				continue
			}
			got, err := mw.notesOf(fan)
			notes = append(notes, got...)
			if err != nil {
				// A note may be lost (the queue overflowed, a mount could
				// not be described): the group's tables are no longer kept
				// true; the next sync watches them afresh.
				errs = append(errs, err)
				for _, ino := range slices.Clone(fan.members) {
					mw.drop(ino)
				}
				notes = append(notes, mw.said...)
				mw.said = nil
			}
		}
		if n < len(mw.ready) {
			return notes, errors.Join(errs...)
		}
	}
}

// notesOf reads one group's events: an attach described by statmount in
// the namespace it is in (one detached again before, ENOENT everywhere, is
// left out: its detach follows; one whose detach is in the same read is
// not even asked), a detach as its namespace knew the mount.
func (mw *mountWatch) notesOf(fan *fanGroup) ([]event.MountNote, error) {
	evs, err := fan.w.Read()
	if err != nil {
		err = fmt.Errorf("the fanotify group of mnt:%v: %w", fan.members, err)
	}
	var out []event.MountNote
	gone := mw.lastDetaches(evs)
	defer clear(gone)
	for i, ev := range evs {
		if detachedLater(gone, i, ev) {
			// Attached and detached again since the last read: its
			// statmount would say ENOENT (below), and the detach finds no
			// member that had it.
			continue
		}
		if ev.Detach && !ev.Moved {
			ino, ok := mw.memberWith(fan, ev.Mount)
			if !ok {
				continue
			}
			k, _ := mw.groups[ino].mounts.remove(ev.Mount)
			out = append(out, event.MountNote{NS: ino, Detach: true, PID: uint32(ev.PID), Mount: k.info()})
			continue
		}
		ino, m, serr := mw.describe(fan, ev.Mount)
		switch {
		case ev.Moved:
			// Told as a move, not as what it did to the moved mount's
			// children: the tracer's move event makes the table stale
			// (correlate: notedKind); only the point is kept.
			if serr == nil {
				mw.groups[ino].mounts.put(watchedOf(m))
			}
			continue
		case errors.Is(serr, unix.ENOENT):
			continue
		case serr != nil:
			err = errors.Join(err, serr)
			continue
		}
		mw.groups[ino].mounts.put(watchedOf(m))
		out = append(out, event.MountNote{NS: ino, PID: uint32(ev.PID), Mount: infoOf(m)})
	}
	return out, err
}

// lastDetaches maps each mount evs detach (moves left out) to the index
// of its last detach in evs, in a map the watch keeps for it: the caller
// clears it after use.
func (mw *mountWatch) lastDetaches(evs []kmount.MountEvent) map[uint64]int {
	if mw.gone == nil {
		mw.gone = make(map[uint64]int)
	}
	for i, ev := range evs {
		if ev.Detach && !ev.Moved {
			mw.gone[ev.Mount] = i
		}
	}
	return mw.gone
}

// detachedLater reports whether evs[i], an attach or a move, is of a mount
// a later event of the same read detaches (gone: lastDetaches): it is gone
// by now. One attached again after its last detach (moved out of the
// namespace and back) is there.
func detachedLater(gone map[uint64]int, i int, ev kmount.MountEvent) bool {
	last, ok := gone[ev.Mount]
	return ok && !ev.Detach && i < last
}

// describe is statmount of the mount of unique id in the member of fan it
// is in: the one that had it, else each in turn (ENOENT when in none:
// detached again, or in a namespace no longer watched).
func (mw *mountWatch) describe(fan *fanGroup, id uint64) (uint32, kmount.Mount, error) {
	try := fan.members
	if ino, ok := mw.memberWith(fan, id); ok {
		try = []uint32{ino}
	}
	for _, ino := range try {
		m, buf, err := kmount.Stat(mw.groups[ino].id, id, mw.buf)
		mw.buf = buf
		if !errors.Is(err, unix.ENOENT) {
			return ino, m, err
		}
	}
	return 0, kmount.Mount{}, unix.ENOENT
}

// memberWith is the member of fan whose mounts have the unique id
// (nsPerGroup binary searches at most: an event names no namespace).
func (mw *mountWatch) memberWith(fan *fanGroup, id uint64) (uint32, bool) {
	for _, ino := range fan.members {
		if mw.groups[ino].mounts.has(id) {
			return ino, true
		}
	}
	return 0, false
}

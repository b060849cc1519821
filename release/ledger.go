package release

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/mntleak/mntleak/event"
)

// Ledger is the daemon's record of this boot (its state dir): the events
// that made namespaces and mounted and unmounted in them, oldest first.
type Ledger struct {
	Events []*event.Event
}

// creation is the event that made the namespace born with id: an unshare
// or a CLONE_NEWNS child whose recorded birth id is id (the inode alone
// names any namespace that reused it), and the namespace it was copied
// from. -1 when none is recorded.
func (l Ledger) creation(ino uint32, id uint64) (int, uint32) {
	if id == 0 {
		return -1, 0
	}
	for i, ev := range l.Events {
		if ev.NewMntNSID != id || ev.Ret < 0 {
			continue
		}
		switch {
		case ev.Kind == event.KindUnshare && ev.MntNSAfter == ino:
			return i, ev.MntNSBefore
		case ev.Kind == event.KindNewNSFork && ev.ChildMntNS == ino:
			return i, ev.ParentMntNS
		}
	}
	return -1, 0
}

// Received is the ledger's account of how the namespace born with id got
// m: it was made (recorded, with this birth id) from an origin that
// unmounted m's mount point afterwards, and nothing was mounted there in
// the namespace itself since it was made. verdict is the correlator's
// leak verdict re-derived now from this ledger and live state ("" for
// none): it stands for the unmount when the copy's mount point is not the
// origin's (a recursive bind's copy). A mount the namespace made itself is
// a leak only when the namespace was abandoned by what made it (see
// abandoned). false when the ledger does not show all of it, with what it
// lacks.
func (l Ledger) Received(ino uint32, id uint64, m Mount, verdict string, runsIn func(pid, ino uint32) bool) (string, bool) {
	made, origin := l.creation(ino, id)
	if made < 0 {
		return fmt.Sprintf("the ledger has no creation of mnt:[%d] with birth id %d", ino, id), false
	}
	c := l.Events[made]
	var unmount *event.Event
	for i, ev := range l.Events[made+1:] {
		if ev.Ret < 0 {
			continue
		}
		if ev.MntNS == ino && madeAt(ev, m.Point) {
			if why, ok := l.abandoned(made, made+1+i, runsIn); ok {
				return why, true
			}
			return fmt.Sprintf("the ledger shows the namespace mounted there itself: %s at %s", who(ev), ev.Time.UTC().Format(time.RFC3339Nano)), false
		}
		if unmount == nil && ev.Kind == event.KindUmount && ev.MntNS == origin && ev.Target == m.Point {
			unmount = ev
		}
	}
	if unmount == nil {
		if verdict == "" {
			return fmt.Sprintf("the ledger has no unmount of %s in mnt:[%d] after the namespace's creation, and no leak verdict from it", m.Point, origin), false
		}
		return fmt.Sprintf("the daemon's ledger: %s made mnt:[%d] (id %d) at %s and it mounted nothing at %s since; %s",
			who(c), ino, id, c.Time.UTC().Format(time.RFC3339Nano), m.Point, verdict), true
	}
	return fmt.Sprintf("the daemon's ledger: %s made mnt:[%d] (id %d) from mnt:[%d] at %s, and %s unmounted %s in mnt:[%d] at %s; the namespace mounted nothing there since",
		who(c), ino, id, origin, c.Time.UTC().Format(time.RFC3339Nano), who(unmount), m.Point, origin, unmount.Time.UTC().Format(time.RFC3339Nano)), true
}

// abandoned proves a mount the namespace made itself (event mounted) left
// behind by a runtime that restarted (mountflags-restart: a daemon started
// into a namespace of its own mounts there, is restarted into a newer
// one, and its survivors keep the old one): later, a namespace was made
// from the same origin and a process of the same name as the one that
// mounted mounted in it, and the process that mounted no longer runs in
// the old namespace. (Command lines are read when an event arrives, before
// or after the exec: not compared.)
func (l Ledger) abandoned(made, mounted int, runsIn func(pid, ino uint32) bool) (string, bool) {
	c, mnt := l.Events[made], l.Events[mounted]
	if runsIn == nil || runsIn(mnt.PID, c.MntNSAfter|c.ChildMntNS) {
		return "", false
	}
	for j, ev := range l.Events[made+1:] {
		var newer uint32
		switch {
		case ev.Ret < 0:
		case ev.Kind == event.KindUnshare && c.Kind == event.KindUnshare && ev.MntNSBefore == c.MntNSBefore && ev.MntNSAfter != c.MntNSAfter:
			newer = ev.MntNSAfter
		case ev.Kind == event.KindNewNSFork && c.Kind == event.KindNewNSFork && ev.ParentMntNS == c.ParentMntNS && ev.ChildMntNS != c.ChildMntNS:
			newer = ev.ChildMntNS
		}
		if newer == 0 {
			continue
		}
		for _, again := range l.Events[made+1+j+1:] {
			if again.Kind == event.KindMount && again.Ret >= 0 && again.MntNS == newer && again.Comm == mnt.Comm {
				return fmt.Sprintf("the daemon's ledger: %s made it in the namespace %s made at %s; %s mounts in a newer one made at %s (a restart); the old one's maker no longer runs in it, its survivors keep it",
					who(mnt), who(c), c.Time.UTC().Format(time.RFC3339Nano), who(again), ev.Time.UTC().Format(time.RFC3339Nano)), true
			}
		}
	}
	return "", false
}

// madeAt reports whether ev put a mount at path, or at a path ending
// with it (a runtime mounts into a rootfs it then pivots into: its
// .../merged/dev/shm is the namespace's /dev/shm).
func madeAt(ev *event.Event, path string) bool {
	var at string
	switch ev.Kind {
	case event.KindMount:
		at = ev.Target
	case event.KindMoveMount:
		at = ev.ToPath
	default:
		return false
	}
	return at == path || (path != "/" && strings.HasSuffix(at, path))
}

func who(ev *event.Event) string {
	return ev.Comm + "[" + strconv.FormatUint(uint64(ev.PID), 10) + "] (" + ev.Kind.String() + ")"
}

// Generation refuses a finding made at `at` about namespace ino when the
// live namespace with that inode (born with id live) is not the one the
// ledger recorded as mnt:[ino] at that time: the inode was reused since.
// A namespace the ledger has no creation of (made before the daemon ran)
// is not refused here: the leak is proven from live state all the same.
func (l Ledger) Generation(ino uint32, at time.Time, live uint64) error {
	var made *event.Event
	for _, ev := range l.Events {
		if ev.Ret < 0 || ev.NewMntNSID == 0 || (!at.IsZero() && ev.Time.After(at)) {
			continue
		}
		if (ev.Kind == event.KindUnshare && ev.MntNSAfter == ino) || (ev.Kind == event.KindNewNSFork && ev.ChildMntNS == ino) {
			made = ev
		}
	}
	if made == nil || made.NewMntNSID == live {
		return nil
	}
	return &NotLeak{fmt.Sprintf("the finding differs from the live state: its mnt:[%d] was made by %s at %s with birth id %d (the daemon's ledger), the live mnt:[%d] was born with id %d: the inode was reused",
		ino, who(made), made.Time.UTC().Format(time.RFC3339Nano), made.NewMntNSID, ino, live)}
}

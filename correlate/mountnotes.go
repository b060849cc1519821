package correlate

import (
	"slices"
	"time"

	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/procfs"
)

// Note applies the kernel's mount note (event.MountNote: a copy a host's
// rmdir or unlink detached, a bind made in a watched namespace) to the
// ledger. Without it the ledger's table of a holder shows a detached copy
// until it happens to be read again, and a table no event made stale is
// not read again before a failure is analysed. With it, the namespace's
// current table gains the attached mount or loses the detached one at
// once. A table the
// note cannot be applied to (none read yet, a detached mount it does not
// show, an attached one it has) is left as it is: it is read when needed.
// Notes change no table's freshness: a table stale before is read again
// before it is relied on, one fresh stays fresh and now true to the
// kernel. Notes do not move the correlator's clock: the daemon reads them
// beside the tracer's events, not in their order.
//
// A note with Watch set says the daemon began (event.WatchOn) or stopped
// (event.WatchOff) reading a namespace's notes. The table is read when
// they begin; from then until they stop it is kept true by the notes
// (keptTrue): a mount or unmount elsewhere, which the notes tell, no
// longer makes it stale, so a failure does not read it again.
func (c *Correlator) Note(n event.MountNote) {
	switch {
	case n.Watch != "":
		c.ledger.watch(n.NS, n.Watch == event.WatchOn)
		if ns := c.lineage.Get(n.NS); ns != nil && n.Watch == event.WatchOn {
			// Read now, the table is kept true from here on. Left to the
			// next event's settle, the first read of a namespace just
			// made can come after its copies were detached (the node
			// quiet until its teardown), and no note can then say what
			// the namespace had. One that cannot be read now (no process
			// left to read it through) is read when needed, as before.
			_ = c.readTable(ns)
		}
	case n.Mount != nil:
		c.ledger.applyNote(n)
		if n.Detach {
			c.noteDetached(n)
		}
	}
}

// noteDetached marks the pending leaks one of whose copies the note's
// detach may be (a copy in that namespace, of that device): the next
// event checks whether anything still holds them (dropDetached). The
// check is not made here: the daemon applies notes before the event they
// precede, and what the check reads is recorded after that event, so a
// replay reads it at the same point.
func (c *Correlator) noteDetached(n event.MountNote) {
	dev := event.MakeDev(uint32(n.Mount.Major), uint32(n.Mount.Minor))
	for _, p := range c.pending {
		for _, m := range p.matches {
			if m.ns != nil && m.ns.Ino == n.NS && (p.id.dev == dev || p.id.dev == 0) {
				p.detached = true
			}
		}
	}
}

// dropDetached drops, without waiting for the teardown to settle, the
// pending leaks a copy of which the kernel detached since and that nothing
// holds any more: confirmLeak, asked now with every holder's table read
// again, finds no copy mounted anywhere and no process pinning one (cwd,
// root, file, mapping, an nsfs bind of a holder), and every table it asked
// for could be read. A process whose files cannot be read (permission)
// is the settle's blind spot as much: it confirms nothing on it either. What holds nothing now cannot be held later (a detached
// mount no process reaches is freed; a namespace made from now on copies
// only what is mounted), so the verdict at the deadline would be the same:
// none. A leak something still holds waits for its deadline as before.
func (c *Correlator) dropDetached() {
	var keep []*pendingLeak
	for _, p := range c.pending {
		if !p.detached {
			keep = append(keep, p)
			continue
		}
		p.detached = false
		if c.confirmLeak(p, true, false) != nil || p.unsure {
			keep = append(keep, p)
		}
	}
	c.pending = keep
}

// PendingLeaks counts the leaks found at an unmount that wait for their
// teardown to settle.
func (c *Correlator) PendingLeaks() int { return len(c.pending) }

// watch records that ns's notes are read from now on (on) or no longer.
// Either way its table goes stale: one read before the notes began may
// miss a mount detached before (no note tells it), and one read while
// they were read is no longer kept true once they stop.
func (l *Ledger) watch(ns uint32, on bool) {
	switch {
	case on:
		l.watched[ns] = true
	case !l.watched[ns]:
		return // forgotten with its namespace, or never watched
	default:
		delete(l.watched, ns)
	}
	l.local[ns]++
}

// keptTrue reports whether t is kept true by the kernel's mount notes: read
// while its namespace's notes were read, which they still are, and no
// change the notes do not tell (a remount, a propagation change, a move,
// lost events: hard) since.
func (l *Ledger) keptTrue(t *Table) bool {
	return t.kept && l.watched[t.NS] && t.hard == l.hard
}

// notedKind reports whether the kernel tells every change ev can make to a
// watched namespace's table with a note: a mount or bind attaches mounts
// (here and where it propagates), an unmount detaches them. A remount, a
// propagation change (MS_SHARED and the rest, mount_setattr), a move
// (MS_MOVE, move_mount: told as a detach and an attach in one event, the
// moved mount's children moving with it untold) send none, or not all,
// on 6.18 (TestWhichCallsTheKernelNotes, internal/kmount).
func notedKind(ev *event.Event) bool {
	return ev.Kind == event.KindUmount || (ev.Kind == event.KindMount && ev.Flags&propagationFlags == 0)
}

// touch marks ns's table stale after an event that may have changed it,
// unless the kernel's notes keep it true and tell what ev changed (noted).
func (l *Ledger) touch(ns uint32, noted bool) {
	if t := l.tables[ns]; noted && t != nil && t.local == l.local[ns] && l.keptTrue(t) {
		return
	}
	l.local[ns]++
}

// applyNote replaces ns's table with one the note changed. The table it
// replaces becomes the previous one only when it was read from the kernel:
// the table before a run of notes (a namespace's teardown detaches every
// mount, one note each) is what a copy gone since is found in (see
// detachedCopies).
func (l *Ledger) applyNote(n event.MountNote) {
	old := l.tables[n.NS]
	if old == nil {
		return
	}
	// The note's mount as a table's entry (the note, a pure event type,
	// holds it as mountinfo.Info).
	noted := procfs.MountOf(n.Mount)
	have := old.mount(noted.ID)
	var mounts []*procfs.Mount
	var changed *procfs.Mount // the entry the note adds or takes off
	switch {
	case n.Detach && have != nil && sameDevice(have, noted):
		if have.Mountpoint == "/" && old.mount(have.Parent) == nil && l.torn[n.NS] == nil {
			// The namespace's root: its teardown (its last process gone,
			// the kernel detaches every mount, the root's note first), or
			// a lazy unmount of its whole tree. The table follows the
			// notes (nothing is held there any more); Lived keeps what it
			// showed, where the mounts made in it lay.
			l.torn[n.NS] = old
		}
		mounts = slices.DeleteFunc(slices.Clone(old.Mounts), func(m *procfs.Mount) bool { return m == have })
		changed = have
		l.notedOff = append(l.notedOff, notedDetach{ns: n.NS, pid: n.PID, mount: have, at: n.Time})
		if len(l.notedOff) > maxNotedOff {
			l.notedOff = l.notedOff[1:]
		}
	case !n.Detach && have == nil:
		mounts = append(slices.Clone(old.Mounts), noted)
		changed = noted
		if tucked(old, noted) {
			l.local[n.NS]++ // true but for the parent the kernel changed untold
		}
	default:
		if l.keptTrue(old) {
			l.local[n.NS]++ // the notes and the table disagree: read it again
		}
		return
	}
	t := &Table{NS: n.NS, ReadAt: old.ReadAt, Seq: old.Seq, Mounts: mounts, byID: indexByID(mounts),
		local: old.local, noted: true, kept: old.kept, hard: old.hard}
	// The peer groups move to the new table with the one mount's change,
	// in the ledger's index too: a note costs its mount, not its table
	// (a host's thousands). The table it replaces is no longer in the
	// index, and keeps none.
	t.groups, old.groups = old.groups, peerGroups{}
	delta := 1
	if n.Detach {
		delta = -1
	}
	t.groups.count(changed, delta, l.groups, n.NS)
	if !old.noted {
		l.last[n.NS] = old
	}
	l.tables[n.NS] = t
}

// notedDetach is a mount a note took off ns's table, as the table showed
// it, the process that detached it, and when the note was read.
type notedDetach struct {
	ns    uint32
	pid   uint32
	mount *procfs.Mount
	at    time.Time
}

// noteSlack is how much earlier than an unmount's event time its note may
// read: a note is read after the unmount it tells of (the event's time is
// the kernel's, the note's the daemon's clock when it read it; they are
// mapped onto each other with an error of milliseconds).
const noteSlack = 250 * time.Millisecond

// maxNotedOff bounds the noted detaches kept: enough for the unmounts of
// a pod's teardown whose notes came before their events.
const maxNotedOff = 256

// takeUnmountNote returns, and forgets, the oldest mount a note says
// process pid detached at target in ns since at (the time of its unmount,
// the event being handled): the mount that unmount took off, when the
// kernel's note came before the event (the daemon reads the notes beside
// the events, which run behind the kernel): by the event the table no
// longer shows it, and the tables read since not either. The notes and
// the unmounts of one process at one path come in the same order, so each
// unmount takes the oldest (one process may unmount, mount and unmount
// there again before the first event is read). A detach by another
// process (an unmount propagated from elsewhere, a host's rmdir) is not
// this unmount's, nor is a note read before it (what a lazy unmount
// detached beneath its target, which no unmount event takes): those are
// forgotten, as no later unmount can take them either. Every successful
// unmount takes its note, whether it needs it or not, so the next one
// takes its own.
func (l *Ledger) takeUnmountNote(ns, pid uint32, target string, at time.Time) *procfs.Mount {
	l.notedOff = slices.DeleteFunc(l.notedOff, func(d notedDetach) bool { return d.at.Before(at.Add(-noteSlack)) })
	for i, d := range l.notedOff {
		if d.ns == ns && d.pid == pid && d.mount.Mountpoint == target {
			l.notedOff = slices.Delete(l.notedOff, i, i+1)
			return d.mount
		}
	}
	return nil
}

// tucked reports whether attached came by propagation to a place where t
// has a mount on the same parent already: the kernel puts the new mount
// beneath it and makes it the old one's parent, and tells only the attach
// (seen on 6.18, TestWhichCallsTheKernelNotes).
func tucked(t *Table, attached *procfs.Mount) bool {
	for _, m := range t.Mounts {
		if m.Parent == attached.Parent && m.Mountpoint == attached.Mountpoint {
			return true
		}
	}
	return false
}

// sameDevice reports whether two descriptions of one mount id name the
// same filesystem (an id mountinfo reuses may have been given to another
// mount since the table was read).
func sameDevice(a, b *procfs.Mount) bool {
	return a.Major == b.Major && a.Minor == b.Minor && a.Mountpoint == b.Mountpoint
}

// TableOf returns ns's table as a failure relies on it: the one the ledger
// has when it is fresh (read since the latest change that could reach it,
// or kept true by the notes since), else one read again now. An error
// says it could not be read again; the table is then the one there was.
func (c *Correlator) TableOf(ns uint32) (*Table, error) {
	n := c.lineage.Get(ns)
	if n == nil || c.ledger.Fresh(ns) {
		return c.ledger.Table(ns), nil
	}
	err := c.readTable(n)
	return c.ledger.Table(ns), err
}

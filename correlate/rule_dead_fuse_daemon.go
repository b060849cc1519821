package correlate

import (
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/finding"
)

// ruleDeadFuseDaemon: the object is a FUSE mount whose server died without
// unmounting it. The kernel aborts the connection when the last file of
// /dev/fuse closes and keeps the mount: every access fails with ENOTCONN
// ("transport endpoint is not connected") and nothing will ever answer
// again, so whatever else keeps it, the one fix is its lazy unmount where
// it is mounted.
func (c *Correlator) ruleDeadFuseDaemon(a *analysis, m match) (verdict, bool) {
	if m.mount == nil || !isFUSE(m.mount.FSType) {
		return verdict{}, false
	}
	mounted := c.fuseMountEvent(a, m)
	if mounted == nil {
		return verdict{}, false
	}
	server := fuseServerOf(mounted)
	exit := c.fuse.exitOf(server, mounted.Time)
	if exit == nil || exit.Time.After(a.trigger.Time) || exit.ExitCode == 0 {
		// Alive, or exited cleanly: a server that forks away after
		// mounting (libfuse's background mode) leaves its parent's exit 0.
		return verdict{}, false
	}
	daemon := finding.ProcName(exit.Comm, int(server))
	v := verdict{
		cause: finding.CauseDeadFuseDaemon,
		summary: "the FUSE server of " + m.where + " (" + m.mount.FSType + ") in " + c.label(m.ns.Ino) + " is gone: " + daemon +
			" served it from " + finding.Clock(mounted.Time) + " and " + exitWords(exit.ExitCode) + " at " + finding.Clock(exit.Time) +
			" without unmounting it; the kernel keeps the mount, every access fails with ENOTCONN (transport endpoint is not connected)" + c.stayed(a),
		evidence: []finding.Evidence{
			factEvidence(mountFact(m.ns.Ino, m.mount)),
			eventEvidence(mounted, "FUSE mount made: "+eventSummary(mounted)),
			eventEvidence(exit, "its server "+daemon+" "+exitWords(exit.ExitCode)),
		},
		fix: c.fuseFix(a, m),
	}
	if !m.self && m.ns.Event != nil {
		v.evidence = append(v.evidence, creationEvidence(m.ns, "the copy's namespace created: "))
	}
	if server != mounted.PID {
		v.evidence[1].What += " (for its parent " + daemon + ", which serves the /dev/fuse file it opened)"
	}
	return v, true
}

// fuseFix is the lazy unmount of the dead mount, where it is: here, or
// entered through a process of its namespace (or the file that keeps it).
func (c *Correlator) fuseFix(a *analysis, m match) string {
	fix := "unmount it lazily: fusermount3 -uz " + m.where + " (or umount -l " + m.where + ")"
	if !m.self {
		switch ms := m.ns.Members(); {
		case len(ms) > 0 && m.exited.IsZero():
			fix = "unmount it lazily in " + finding.NSName(m.ns.Ino) + ": nsenter -t " + itoa(ms[0].Enter()) + " -m umount -l " + m.where + ", or mntleak release"
		case m.kept != nil && len(m.kept.files) > 0:
			fix = "unmount it lazily in " + finding.NSName(m.ns.Ino) + ": nsenter --mount=" + m.kept.files[0] + " umount -l " + m.where + ", or mntleak release"
		default:
			fix = "mntleak release detaches the copy in " + finding.NSName(m.ns.Ino)
		}
	}
	if pins := a.pins[m.ns.Ino]; len(pins) > 0 {
		var who []string
		for _, p := range pins {
			who = append(who, finding.ProcName(p.Comm, p.PID)+" ("+p.Pin+" "+p.Path+")")
		}
		fix += "; what works in it gets ENOTCONN: stop or restart " + strings.Join(who, ", ")
	}
	return fix + "; then restart the FUSE server (its pod or unit) so it mounts again"
}

// fuseMountEvent is the last FUSE mount the ledger saw made at the match's
// mount point (or at the object's path, where the copy came from) before
// the trigger, with the filesystem type the match shows.
func (c *Correlator) fuseMountEvent(a *analysis, m match) *event.Event {
	paths := []string{m.where, m.mount.Mountpoint, a.id.path}
	hist := c.ledger.History()
	for i := len(hist) - 1; i >= 0; i-- {
		ev := hist[i]
		if ev.Kind == event.KindMount && ev.Ret == 0 && ev.FSType == m.mount.FSType &&
			ev.Time.Before(a.trigger.Time) && slices.Contains(paths, ev.Target) {
			return ev
		}
	}
	return nil
}

// isFUSE: a FUSE filesystem type (fuse, fuse.NAME, fuseblk).
func isFUSE(fstype string) bool {
	return fstype == "fuse" || fstype == "fuseblk" || strings.HasPrefix(fstype, "fuse.")
}

// fuseServerOf is the process that serves a FUSE mount: its mounter, or,
// when the mounter is fusermount (the set-uid helper that opens /dev/fuse
// and passes it back over a socket), fusermount's parent.
func fuseServerOf(ev *event.Event) uint32 {
	if (ev.Comm == "fusermount" || ev.Comm == "fusermount3") && ev.PPID != 0 {
		return ev.PPID
	}
	return ev.PID
}

// exitWords says how a process ended, from its raw wait status.
func exitWords(status int32) string {
	if sig := unix.Signal(status & 0x7f); sig != 0 {
		return "was killed by " + unix.SignalName(sig)
	}
	return "exited with status " + itoa(int(status>>8&0xff))
}

// fuseServers are the processes that serve FUSE mounts the ledger saw
// made, and the exit of each: the kernel tells no one when a server dies
// (its mount stays), so its exit event is kept until it is asked for.
type fuseServers struct {
	since map[uint32]time.Time    // pid -> its first FUSE mount seen
	exits map[uint32]*event.Event // pid -> its exit, after since
	keep  func(*event.Event)      // told each exit kept (FUSEServerExits); nil: no one
}

// maxFuseServers bounds each map: the oldest entry goes first. A node
// with a FUSE CSI volume per pod has as many servers as pods, and the
// oldest server is the one the bound drops: room for far more than a node
// runs (an entry is a few dozen bytes).
const maxFuseServers = 4096

// observe learns from one event: a successful FUSE mount names its server,
// a server's exit is kept.
func (s *fuseServers) observe(ev *event.Event) {
	switch {
	case ev.Kind == event.KindMount && ev.Ret == 0 && isFUSE(ev.FSType):
		pid := fuseServerOf(ev)
		if s.since == nil {
			s.since, s.exits = map[uint32]time.Time{}, map[uint32]*event.Event{}
		}
		if _, ok := s.since[pid]; !ok {
			s.since[pid] = ev.Time
		}
		delete(s.exits, pid) // a pid that serves again is alive
		trimOldest(s.since, func(t time.Time) time.Time { return t })
	case ev.Kind == event.KindExit:
		if _, ok := s.since[ev.PID]; ok {
			s.exits[ev.PID] = ev
			delete(s.since, ev.PID)
			trimOldest(s.exits, func(e *event.Event) time.Time { return e.Time })
			if s.keep != nil {
				s.keep(ev)
			}
		}
	}
}

// FUSEServerExits has keep told, as Handle reads it, each exit of a
// process that serves a FUSE mount the correlator saw made: the persistent
// lineage keeps it (no /proc tells when a server died), for a restarted
// daemon and `mntleak why`. The daemon hands each event to the engine once
// (Handle); what the engine wants kept beyond state.Keep comes back here.
// Set it before the first Handle.
func (c *Correlator) FUSEServerExits(keep func(*event.Event)) { c.fuse.keep = keep }

// exitOf is the exit of pid after it mounted at t, or nil.
func (s *fuseServers) exitOf(pid uint32, t time.Time) *event.Event {
	if e := s.exits[pid]; e != nil && !e.Time.Before(t) {
		return e
	}
	return nil
}

// trimOldest drops the oldest entry (then the lowest pid) past the bound.
func trimOldest[V any](m map[uint32]V, at func(V) time.Time) {
	for len(m) > maxFuseServers {
		var old uint32
		first := true
		for pid, v := range m {
			if first || at(v).Before(at(m[old])) || (at(v).Equal(at(m[old])) && pid < old) {
				old, first = pid, false
			}
		}
		delete(m, old)
	}
}

package correlate

import (
	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/finding"
)

// prevention is how to keep such a copy from staying: a namespace that is
// private should be made slave; one that is already slave missed the
// unmount because the mount above the object was private where it was
// unmounted, so that mount is what to change; one that made the mount
// above its copy private itself should keep it a slave (the event that
// made it private is returned, for the evidence).
func (c *Correlator) prevention(a *analysis, m match) (string, *event.Event) {
	// The kernel carries an unmount to the copies under the peers and
	// slaves of the unmounted mount's parent, whatever a copy's own flag.
	// A parent that is private in the holder, made so there after it
	// received propagation (a slave namespace that ran mount --make-private):
	// the holder cut itself off. (The copy's own flag cannot tell: once
	// the unmount took its master, a slave copy is private.)
	if m.mount != nil && m.table != nil {
		if parent := m.table.Parent(m.mount); parent != nil && IsPrivate(parent) {
			if ev := c.madePrivate(m.ns, parent.Mountpoint); ev != nil {
				enter := "nsenter into " + finding.NSName(m.ns.Ino) + " and run"
				if ms := m.ns.Members(); len(ms) > 0 {
					enter = "nsenter -t " + itoa(ms[0].Enter()) + " -m"
				}
				return parent.Mountpoint + " was made private in " + finding.NSName(m.ns.Ino) + " after the namespace was copied as a slave: " +
					"no unmount reaches the copies below it; keep it a slave there (" + enter + " mount --make-rslave " + parent.Mountpoint + ")", ev
			}
		}
	}
	slave := RootPropagation(m.table) == "slave" || (m.mount != nil && IsSlave(m.mount))
	if !slave {
		return "create such namespaces with slave propagation (unshare --propagation slave) so unmounts reach them", nil
	}
	where := "the mount above " + m.where
	if t := c.ledger.Table(a.caller); t != nil && a.id.path != "" {
		if pm := t.Containing(parentDir(a.id.path)); pm != nil {
			where = pm.Mountpoint
		}
	}
	return finding.NSName(m.ns.Ino) + " is already a slave: the unmount did not reach it because " + where + " is private in " +
		c.label(a.caller) + "; make it shared there (mount --make-rshared " + where + ") before such namespaces are created", nil
}

// madePrivate returns the propagation change that made mount point p
// private in namespace n after p received propagation there (an earlier
// change made it, or an ancestor recursively, a slave or shared since n
// was made: unshare --propagation slave, systemd's MountFlags=slave), or
// nil: a namespace made private from the start did not cut itself off.
func (c *Correlator) madePrivate(n *Namespace, p string) *event.Event {
	var made *event.Event
	receiving := false
	for _, ev := range c.ledger.History() {
		if ev.Ret < 0 || ev.MntNS != n.Ino || ev.Time.Before(n.Created) {
			continue
		}
		var target string
		var prop uint64
		rec := false
		switch ev.Kind {
		case event.KindMount:
			target, prop, rec = ev.Target, ev.Flags&(unix.MS_PRIVATE|unix.MS_SLAVE|unix.MS_SHARED), hasFlags(ev, unix.MS_REC)
		case event.KindMountSetattr:
			target, prop, rec = ev.Path, ev.Propagation, ev.Flags&unix.AT_RECURSIVE != 0
		}
		if prop == 0 || !(target == p || (rec && Under(p, target))) {
			continue
		}
		switch {
		case prop&(unix.MS_SLAVE|unix.MS_SHARED) != 0:
			receiving, made = true, nil
		case receiving:
			made = ev
		}
	}
	return made
}

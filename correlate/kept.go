package correlate

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/mntleak/mntleak/finding"
	"github.com/mntleak/mntleak/procfs"
)

// keeper is what keeps alive a mount namespace no process runs in: a bind
// of its nsfs file (unshare --mount=FILE, a runtime's pinned namespace).
type keeper struct {
	files []string // the bind's path as mntleak may open it, tried in order
	where string   // its mount point in ns
	ns    uint32   // the namespace whose table shows the bind
	// fd: no bind, a process holds the nsfs file open (an open
	// /proc/PID/ns/mnt, a runtime's pinned namespace); ns is its namespace.
	fd *procfs.NSFD
}

// by says what keeps the namespace, for the holder line.
func (k *keeper) by(c *Correlator) string {
	if k.fd != nil {
		return "fd " + itoa(k.fd.FD) + " of " + finding.ProcName(k.fd.Comm, k.fd.PID) + " in " + c.label(k.ns) + ", an open file of its nsfs file"
	}
	return "the bind of its nsfs file at " + k.where + " in " + c.label(k.ns)
}

// nsfsBind is a bind of another mount namespace's nsfs file, as a table
// shows it: it keeps that namespace alive.
type nsfsBind struct {
	ns, kept uint32 // the table's namespace; the namespace kept
	where    string // the bind's mount point in ns
}

// nsfsBinds lists the binds of mount namespaces' nsfs files in the
// tables the ledger has, in the tables' order.
func (c *Correlator) nsfsBinds() []nsfsBind {
	var out []nsfsBind
	for _, ino := range c.ledger.namespaces() {
		for _, m := range c.ledger.Table(ino).Mounts {
			if m.FSType != "nsfs" || !strings.HasPrefix(m.Root, "mnt:[") {
				continue
			}
			if kept, err := procfs.ParseNSLink(m.Root); err == nil && kept != ino {
				out = append(out, nsfsBind{ns: ino, kept: kept, where: m.Mountpoint})
			}
		}
	}
	return out
}

// keptNamespaces finds, in the tables the ledger has, the binds of mount
// namespaces' nsfs files whose namespace has no known process.
func (c *Correlator) keptNamespaces() map[uint32]keeper {
	out := map[uint32]keeper{}
	for _, b := range c.nsfsBinds() {
		if n := c.lineage.Get(b.kept); n != nil && len(n.members) > 0 {
			continue // it has processes: searched as any other
		}
		if _, ok := out[b.kept]; ok {
			continue
		}
		if files := c.pathsFromHere(b.ns, b.where); len(files) > 0 {
			out[b.kept] = keeper{files: files, where: b.where, ns: b.ns}
		}
	}
	return out
}

// pathsFromHere are how mntleak may reach path p of namespace ns: directly
// in its own (the host's), else through a member's /proc/PID/root (a few:
// a member known from an event may have exited since).
func (c *Correlator) pathsFromHere(ns uint32, p string) []string {
	if ns == c.hostNS {
		return []string{p}
	}
	var out []string
	if n := c.lineage.Get(ns); n != nil {
		for _, m := range n.Members() {
			if len(out) == 3 {
				break
			}
			out = append(out, "/proc/"+itoa(m.PID)+"/root"+p)
		}
	}
	return out
}

// keptMatches searches the namespaces no process runs in, kept by a bind
// of their nsfs file, reading each one's table through the bind.
func (c *Correlator) keptMatches(id identity, caller uint32) ([]match, []string) {
	callerTable := c.ledger.Table(caller)
	var out []match
	var missing []string
	kept := c.keptNamespaces()
	inos := make([]uint32, 0, len(kept))
	for ino := range kept {
		inos = append(inos, ino)
	}
	slices.Sort(inos)
	for _, ino := range inos {
		k := kept[ino]
		_, t, err := c.readKept(ino, k.files)
		if err != nil {
			missing = append(missing, "mount table of "+finding.NSName(ino)+" (kept by "+k.where+"): "+err.Error())
			continue
		}
		c.ledger.Store(t)
		out = append(out, c.keptIn(t, id, callerTable, &k)...)
	}
	return out, missing
}

// readKept reads the table of namespace ino, which no process runs in,
// through the first of files that still names it: which one, or the last
// error.
func (c *Correlator) readKept(ino uint32, files []string) (int, *Table, error) {
	var err error
	for i, file := range files {
		var ns uint32
		var mounts []*procfs.Mount
		ns, mounts, err = c.proc.NSMountinfo(file)
		if err == nil && ns != ino {
			err = fmt.Errorf("%s now names %s", file, finding.NSName(ns))
		}
		if err == nil {
			return i, NewTable(ino, mounts, c.now, c.ledger.Seq()), nil
		}
	}
	return -1, nil, err
}

// keptIn is where id lies in t, the table of a namespace k keeps.
func (c *Correlator) keptIn(t *Table, id identity, callerTable *Table, k *keeper) []match {
	n := c.keptNamespace(t.NS)
	var out []match
	for _, m := range outermost(t, findIn(t, id, callerTable)) {
		out = append(out, match{ns: n, table: t, mount: m, where: m.Mountpoint, kept: k})
	}
	return out
}

// keptNamespace is the lineage's record of a namespace no process runs in
// (its creation, when it was seen, survives its processes), or a new one.
func (c *Correlator) keptNamespace(ino uint32) *Namespace {
	if n := c.lineage.Get(ino); n != nil {
		return n
	}
	if n := c.lineage.LastDead(ino, c.now.Add(-c.opts.Retention)); n != nil {
		return n
	}
	return &Namespace{Ino: ino, Origin: OriginPredates, Inferred: true, members: map[int]*Member{}}
}

// fdMatches searches the namespaces no process runs in that a process
// keeps by holding their nsfs file open (no bind of it anywhere), reading
// each one's table through /proc/PID/fd/N. It reads every process's open
// files (a failure and why ask it every time: a namespace kept so holds
// the object beside any live one), unless the kernel shows no namespace
// that could be kept so holds it (heldOpenNowhere).
func (c *Correlator) fdMatches(id identity, caller uint32) ([]match, []string) {
	if c.heldOpenNowhere(id, caller) {
		return nil, nil
	}
	fds, err := c.proc.NSFDs()
	var missing []string
	var unreadable *procfs.UnreadableError
	if err != nil {
		if !errors.As(err, &unreadable) {
			return nil, []string{"the processes holding a namespace open: " + err.Error()}
		}
		missing = append(missing, "the processes holding a namespace open: "+err.Error())
	}
	bound := c.keptNamespaces()
	by := map[uint32][]procfs.NSFD{}
	for _, f := range fds {
		if n := c.lineage.Get(f.NS); (n != nil && len(n.members) > 0) || f.NS == caller {
			continue // it has processes: searched as any other
		}
		if _, ok := bound[f.NS]; ok {
			continue // kept by a bind too: searched through it
		}
		by[f.NS] = append(by[f.NS], f)
	}
	inos := make([]uint32, 0, len(by))
	for ino := range by {
		inos = append(inos, ino)
	}
	slices.Sort(inos)
	callerTable := c.ledger.Table(caller)
	var out []match
	for _, ino := range inos {
		holders := by[ino]
		slices.SortFunc(holders, func(a, b procfs.NSFD) int {
			if a.PID != b.PID {
				return a.PID - b.PID
			}
			return a.FD - b.FD
		})
		files := make([]string, len(holders))
		for i, f := range holders {
			files[i] = "/proc/" + itoa(f.PID) + "/fd/" + itoa(f.FD)
		}
		i, t, err := c.readKept(ino, files)
		if err != nil {
			missing = append(missing, "mount table of "+finding.NSName(ino)+" (held open by "+finding.ProcName(holders[0].Comm, holders[0].PID)+"): "+err.Error())
			continue
		}
		f := holders[i]
		out = append(out, c.keptIn(t, id, callerTable, &keeper{files: files[i : i+1], ns: f.MntNS, fd: &f})...)
	}
	return out, missing
}

// keptVerdict: a namespace no process runs in keeps its copy, itself kept
// alive by a bind of its nsfs file; unmounting that bind lets it go.
func (c *Correlator) keptVerdict(a *analysis, m match) verdict {
	n, k := m.ns, m.kept
	made := ""
	var ev []finding.Evidence
	if n.Event != nil {
		creator := finding.ProcName(n.Creator.Comm, n.Creator.PID)
		if w := creatorWorkload(n); w != "" {
			creator += " (" + w + ")"
		}
		made = "; it was created by " + creator + " at " + finding.Clock(n.Created) + ", which has exited since"
		ev = append(ev, creationEvidence(n, "namespace created: "))
	}
	if f := k.fd; f != nil {
		who := finding.ProcName(f.Comm, f.PID)
		ev = append(ev, factEvidence(who+" in "+finding.NSName(k.ns)+" has fd "+itoa(f.FD)+" open on "+finding.NSName(n.Ino)+"'s nsfs file"),
			factEvidence(mountFact(n.Ino, m.mount)))
		return verdict{
			cause: finding.CauseUnshare, inferred: n.Event == nil,
			summary: "no process runs in " + finding.NSName(n.Ino) + "; " + who + " holds it open (fd " + itoa(f.FD) + ") and keeps it, with its own copy (" +
				RootPropagation(m.table) + " root)" + made + c.stayed(a),
			evidence: ev,
			fix: "have " + who + " close fd " + itoa(f.FD) + ", or stop it (the namespace and its copy go with the last reference); or nsenter --mount=/proc/" +
				itoa(f.PID) + "/fd/" + itoa(f.FD) + " umount " + m.where,
		}
	}
	ev = append(ev, factEvidence(finding.NSName(k.ns)+": "+k.where+" is a bind of "+finding.NSName(n.Ino)+"'s nsfs file"),
		factEvidence(mountFact(n.Ino, m.mount)))
	return verdict{
		cause: finding.CauseUnshare, inferred: n.Event == nil,
		summary: "no process runs in " + finding.NSName(n.Ino) + "; the bind of its nsfs file at " + k.where + " in " + c.label(k.ns) +
			" keeps it, with its own copy (" + RootPropagation(m.table) + " root)" + made + c.stayed(a),
		evidence: ev,
		fix: "umount " + k.where + " in " + c.label(k.ns) + " (the namespace and its copy go with it; unshare --mount=FILE and " +
			"runtimes that pin namespaces leave such binds), or nsenter --mount=" + k.where + " umount " + m.where,
	}
}

// markBound marks the matches whose namespace has processes and is also
// kept by a bind of its nsfs file: the bind keeps it, and its copy, once
// they are gone.
func (c *Correlator) markBound(matches []match) {
	binds := c.nsfsBinds()
	for i := range matches {
		m := &matches[i]
		if m.self || m.kept != nil || !m.exited.IsZero() || m.ns.Dead || len(m.ns.members) == 0 {
			continue
		}
		for _, b := range binds {
			if b.kept == m.ns.Ino {
				m.bound = &keeper{files: []string{b.where}, where: b.where, ns: b.ns}
				break
			}
		}
	}
}

// boundVerdict adds to a verdict on a namespace with processes that a bind
// of its nsfs file keeps it too: stopping them does not free it.
func (c *Correlator) boundVerdict(v verdict, m match) verdict {
	k := m.bound
	if k == nil {
		return v
	}
	v.evidence = append(v.evidence, factEvidence(finding.NSName(k.ns)+": "+k.where+" is a bind of "+finding.NSName(m.ns.Ino)+"'s nsfs file"))
	v.summary += "; the bind of its nsfs file at " + k.where + " in " + c.label(k.ns) + " keeps it beyond its processes (a runtime confined in a namespace of its own)"
	drop := "umount " + k.where + " in " + c.label(k.ns)
	if snap, ok := snapNamespace(k.where); ok {
		drop = "snapd's snap-discard-ns " + snap + " (/usr/lib/snapd/snap-discard-ns; it unmounts " + k.where + ")"
	}
	v.fix += "; the bind keeps the namespace and its copy after them: " + drop + " once they are stopped, or nsenter --mount=" +
		k.where + " umount " + m.where + " to drop only the copy"
	return v
}

// snapNamespace is the snap whose preserved mount namespace snapd keeps
// at p (/run/snapd/ns/SNAP.mnt).
func snapNamespace(p string) (string, bool) {
	name, ok := strings.CutPrefix(p, "/run/snapd/ns/")
	name, mnt := strings.CutSuffix(name, ".mnt")
	if !ok || !mnt || name == "" || strings.Contains(name, "/") {
		return "", false
	}
	return name, true
}

// pinRefs turns pins into references, grouped under their namespaces.
func pinRefs(pins []procfs.Pin) map[uint32][]finding.PinRef {
	out := map[uint32][]finding.PinRef{}
	for _, p := range pins {
		ref := finding.PinRef{
			ProcRef: procRef(p.PID, 0, p.Comm, p.Cgroup),
			MntNS:   pinNS(p), Pin: string(p.Kind), Path: p.Path, FD: p.FD,
		}
		ref.TID = p.TID
		out[ref.MntNS] = append(out[ref.MntNS], ref)
	}
	return out
}

// pinNS is the namespace a pin's path is in: its thread's, for the cwd or
// root of a thread in a namespace of its own, else its process's.
func pinNS(p procfs.Pin) uint32 {
	for _, th := range p.Threads {
		if p.TID != 0 && th.TID == p.TID {
			return th.MntNS
		}
	}
	return p.MntNS
}

package correlate

import (
	"fmt"
	"slices"
	"strings"

	"github.com/mntleak/mntleak/procfs"
)

// keeper is what keeps alive a mount namespace no process runs in: a bind
// of its nsfs file (unshare --mount=FILE, a runtime's pinned namespace).
type keeper struct {
	file  string // the bind's path as mntleak opens it
	where string // its mount point in ns
	ns    uint32 // the namespace whose table shows the bind
}

// keptNamespaces finds, in the tables the ledger has, the binds of mount
// namespaces' nsfs files whose namespace has no known process.
func (c *Correlator) keptNamespaces() map[uint32]keeper {
	out := map[uint32]keeper{}
	for _, ino := range c.ledger.namespaces() {
		t := c.ledger.Table(ino)
		for _, m := range t.Mounts {
			if m.FSType != "nsfs" || !strings.HasPrefix(m.Root, "mnt:[") {
				continue
			}
			kept, err := procfs.ParseNSLink(m.Root)
			if err != nil || kept == ino {
				continue
			}
			if n := c.lineage.Get(kept); n != nil && len(n.members) > 0 {
				continue // it has processes: searched as any other
			}
			if _, ok := out[kept]; ok {
				continue
			}
			if file := c.pathFromHere(ino, m.Mountpoint); file != "" {
				out[kept] = keeper{file: file, where: m.Mountpoint, ns: ino}
			}
		}
	}
	return out
}

// pathFromHere is how mntleak reaches path p of namespace ns: directly in
// its own (the host's), else through a member's /proc/PID/root.
func (c *Correlator) pathFromHere(ns uint32, p string) string {
	if ns == c.hostNS {
		return p
	}
	if n := c.lineage.Get(ns); n != nil {
		if ms := n.Members(); len(ms) > 0 {
			return "/proc/" + itoa(ms[0].PID) + "/root" + p
		}
	}
	return ""
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
		ns, mounts, err := c.proc.NSMountinfo(k.file)
		if err == nil && ns != ino {
			err = fmt.Errorf("%s now names %s", k.file, nsName(ns))
		}
		if err != nil {
			missing = append(missing, "mount table of "+nsName(ino)+" (kept by "+k.where+"): "+err.Error())
			continue
		}
		t := NewTable(ino, mounts, c.now, c.ledger.Seq())
		c.ledger.Store(t)
		n := c.keptNamespace(ino)
		for _, m := range outermost(t, findIn(t, id, callerTable)) {
			out = append(out, match{ns: n, table: t, mount: m, where: m.Mountpoint, kept: &k})
		}
	}
	return out, missing
}

// keptNamespace is the lineage's record of a namespace no process runs in
// (its creation, when it was seen, survives its processes), or a new one.
func (c *Correlator) keptNamespace(ino uint32) *Namespace {
	if n := c.lineage.Get(ino); n != nil {
		return n
	}
	dead := c.lineage.DiedSince(c.now.Add(-c.opts.Retention))
	for i := len(dead) - 1; i >= 0; i-- {
		if dead[i].Ino == ino {
			return dead[i]
		}
	}
	return &Namespace{Ino: ino, Origin: OriginPredates, Inferred: true, members: map[int]*Member{}}
}

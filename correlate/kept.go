package correlate

import (
	"fmt"
	"slices"
	"strings"

	"github.com/moby/sys/mountinfo"

	"github.com/mntleak/mntleak/procfs"
)

// keeper is what keeps alive a mount namespace no process runs in: a bind
// of its nsfs file (unshare --mount=FILE, a runtime's pinned namespace).
type keeper struct {
	files []string // the bind's path as mntleak may open it, tried in order
	where string   // its mount point in ns
	ns    uint32   // the namespace whose table shows the bind
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
			if files := c.pathsFromHere(ino, m.Mountpoint); len(files) > 0 {
				out[kept] = keeper{files: files, where: m.Mountpoint, ns: ino}
			}
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
		var ns uint32
		var mounts []*mountinfo.Info
		var err error
		for _, file := range k.files {
			ns, mounts, err = c.proc.NSMountinfo(file)
			if err == nil && ns != ino {
				err = fmt.Errorf("%s now names %s", file, nsName(ns))
			}
			if err == nil {
				break
			}
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

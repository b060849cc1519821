package correlate

import (
	"path"
	"sort"
	"strings"
	"time"

	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/finding"
	"github.com/mntleak/mntleak/procfs"
)

// identity is what makes two mount entries the same object: the same
// filesystem (device) showing the same directory (root). A bind of a
// directory of the root filesystem shares the device with "/" but not the
// root; an nsfs mount's root names the namespace ("net:[4026532290]").
type identity struct {
	dev   event.Dev
	root  string // "" matches any root (a whole block device)
	path  string // the object's path in the caller's namespace
	fs    string // fstype, when known
	block bool   // dev is a block device (any mount of it holds it)
	// layers: the call removes a directory, which overlays that use it as
	// a layer (upperdir, workdir, lowerdir) keep busy.
	layers bool
}

func (id identity) known() bool { return id.dev != 0 }

func (id identity) matches(m *procfs.Mount) bool {
	if !id.known() || devOf(m) != id.dev {
		return false
	}
	if id.block || id.root == "" {
		return true
	}
	return strings.TrimSuffix(m.Root, "//deleted") == strings.TrimSuffix(id.root, "//deleted")
}

// identityOf is the identity of a mount entry.
func identityOf(m *procfs.Mount, path string) identity {
	return identity{dev: devOf(m), root: m.Root, path: path, fs: m.FSType}
}

// translate returns where a path p of the caller's namespace (whose table
// is from) shows up in another namespace's table to: the same literal path,
// and the same directory seen through bind roots. A host that bound "/" at
// "/rootfs" for a container sees the host's /run/netns/cni-x there as
// /rootfs/run/netns/cni-x.
func translate(p string, from, to *Table) []string {
	var out []string
	for _, v := range translateVia(p, from, to) {
		out = append(out, v.path)
	}
	return out
}

// translateVia is translate, saying which bind each place is seen through.
func translateVia(p string, from, to *Table) []view {
	out := []view{{path: p}}
	if from == nil || to == nil {
		return out
	}
	seen := map[string]bool{p: true}
	// The mount p lives on in the caller's namespace (p's parent directory's
	// mount if p itself is a mount point there: the copy sits on the copy
	// of that parent).
	var host *procfs.Mount
	if m := from.At(p); m != nil && p != "/" {
		if parent := from.Parent(m); parent != nil && Under(p, parent.Mountpoint) {
			host = parent
		}
	}
	if host == nil {
		host = from.Containing(p)
	}
	if host == nil {
		return out
	}
	fsPath := join(host.Root, rel(p, host.Mountpoint))
	for _, b := range to.Mounts {
		if devOf(b) != devOf(host) || !Under(fsPath, b.Root) {
			continue
		}
		cand := join(b.Mountpoint, rel(fsPath, b.Root))
		if !seen[cand] {
			seen[cand] = true
			out = append(out, view{path: cand, bind: b.ID})
		}
	}
	return out
}

// findIn returns the entries of t that are the object: by identity when it
// is known, else by path (literal or translated through bind roots).
func findIn(t *Table, id identity, callerTable *Table) []*procfs.Mount {
	var out []*procfs.Mount
	if id.known() {
		// Anonymous devices (tmpfs, overlay: major 0) are reused as soon as
		// they are freed, and container churn frees them all the time: for
		// a whole anonymous filesystem the copy must also sit where the
		// object would show in that namespace.
		var where map[string]bool
		if id.dev.Major() == 0 && id.root == "/" && id.path != "" {
			where = map[string]bool{}
			for _, p := range translate(id.path, callerTable, t) {
				where[p] = true
			}
		}
		for _, m := range t.Mounts {
			// A namespace's own root is not a copy it holds (a container's
			// root is its overlay; every namespace's may be the root fs).
			if id.matches(m) && (where == nil || where[m.Mountpoint]) && m.Mountpoint != "/" {
				out = append(out, m)
			}
		}
		if len(out) > 0 || id.block {
			return out
		}
	}
	if id.path == "" {
		return nil
	}
	for _, v := range translateVia(id.path, callerTable, t) {
		// The bind a place is seen through is a view of the directory, not a
		// mount on it: a directory that is only the source of a bind
		// elsewhere is a mount point nowhere.
		if m := t.At(v.path); m != nil && m.ID != v.bind && (id.fs == "" || m.FSType == id.fs) {
			out = append(out, m)
		}
	}
	// An overlay whose layers live in the object: removing a container's
	// layer directory fails while any namespace still has its overlay.
	for _, m := range t.Mounts {
		if id.layers && m.FSType == "overlay" && overlayUses(m.VFSOptions, id.path) && !containsMount(out, m) {
			out = append(out, m)
		}
	}
	return out
}

// overlayUses reports whether overlay super options name a layer directory
// at or below dir (upperdir, workdir, or one of the lowerdirs).
func overlayUses(opts, dir string) bool {
	for _, opt := range strings.Split(opts, ",") {
		k, v, ok := strings.Cut(opt, "=")
		if !ok || (k != "upperdir" && k != "workdir" && k != "lowerdir") {
			continue
		}
		for _, layer := range strings.Split(v, ":") {
			if Under(layer, dir) {
				return true
			}
		}
	}
	return false
}

func containsMount(ms []*procfs.Mount, m *procfs.Mount) bool {
	for _, x := range ms {
		if x.ID == m.ID {
			return true
		}
	}
	return false
}

// outermost keeps, among entries that are the same object, the ones not
// below another of them (a copy of /srv/vol also shows /srv/vol/sub).
func outermost(t *Table, ms []*procfs.Mount) []*procfs.Mount {
	in := map[int]bool{}
	for _, m := range ms {
		in[m.ID] = true
	}
	var out []*procfs.Mount
	for _, m := range ms {
		below := false
		for p := t.Parent(m); p != nil; p = t.Parent(p) {
			if in[p.ID] {
				below = true
				break
			}
		}
		if !below {
			out = append(out, m)
		}
	}
	return out
}

// search finds every namespace holding the object: live ones from fresh
// tables, and ones whose last process left within grace before now.
func (c *Correlator) search(id identity, caller uint32, grace time.Duration) []match {
	callerTable := c.ledger.Table(caller)
	var out []match
	for _, n := range c.lineage.Live() {
		t := c.ledger.Table(n.Ino)
		if t == nil || n.keptOnly() { // read through its bind, fresh: keptMatches
			continue
		}
		for _, m := range outermost(t, findIn(t, id, callerTable)) {
			out = append(out, match{ns: n, table: t, mount: m, where: m.Mountpoint, self: n.Ino == caller})
		}
	}
	// Namespaces gone a moment before: only when no live one explains it
	// (their mounts went with them unless something still pins them).
	for _, n := range c.lineage.DiedSince(c.now.Add(-grace)) {
		if n.LastTable == nil || n.Ino == caller || len(otherThan(out, caller)) > 0 {
			continue
		}
		for _, m := range outermost(n.LastTable, findIn(n.LastTable, id, callerTable)) {
			out = append(out, match{ns: n, table: n.LastTable, mount: m, where: m.Mountpoint, exited: n.Died})
		}
	}
	// The caller's own namespace first, then by namespace age.
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].self != out[j].self {
			return out[i].self
		}
		if !out[i].ns.Created.Equal(out[j].ns.Created) {
			return out[i].ns.Created.Before(out[j].ns.Created)
		}
		return out[i].ns.Ino < out[j].ns.Ino
	})
	return out
}

// devOf returns a mount's device in event.Dev form.
func devOf(m *procfs.Mount) event.Dev { return event.MakeDev(uint32(m.Major), uint32(m.Minor)) }

// Under reports whether path p is dir or below it.
func Under(p, dir string) bool {
	if dir == "/" {
		return strings.HasPrefix(p, "/")
	}
	return p == dir || strings.HasPrefix(p, dir+"/")
}

// rel returns p relative to dir ("" when equal), assuming Under(p, dir).
func rel(p, dir string) string {
	if dir == "/" {
		return strings.TrimPrefix(p, "/")
	}
	return strings.TrimPrefix(strings.TrimPrefix(p, dir), "/")
}

func join(dir, r string) string {
	if r == "" {
		return dir
	}
	return path.Join(dir, r)
}

// At returns the topmost mount whose mount point is p, or nil.
func (t *Table) At(p string) *procfs.Mount {
	var top *procfs.Mount
	for _, m := range t.Mounts {
		if m.Mountpoint == p {
			top = m // later entries are mounted over earlier ones
		}
	}
	return top
}

// Containing returns the mount a path lives on: the topmost mount whose
// mount point is p or its nearest ancestor.
func (t *Table) Containing(p string) *procfs.Mount {
	for {
		if m := t.At(p); m != nil {
			return m
		}
		if p == "/" || p == "." || p == "" {
			return nil
		}
		p = path.Dir(p)
	}
}

// Parent returns m's parent mount, or nil.
func (t *Table) Parent(m *procfs.Mount) *procfs.Mount {
	if m.Parent == m.ID {
		return nil
	}
	return t.mount(m.Parent)
}

// mountEventFor returns the last successful mount that made the object,
// before t when t is set. A propagation change (mount --make-shared) or a
// remount of the path made nothing: it is not that mount.
func (c *Correlator) mountEventFor(id identity, before time.Time) *event.Event {
	hist := c.ledger.History()
	for i := len(hist) - 1; i >= 0; i-- {
		ev := hist[i]
		if ev.Kind != event.KindMount || ev.Ret != 0 || (!before.IsZero() && !ev.Time.Before(before)) ||
			ev.Flags&madeNothing != 0 {
			continue
		}
		if ev.Target == id.path && id.path != "" {
			return ev
		}
	}
	return nil
}

// unmountedAsCopied identifies what an unmount removed from a copy of it:
// a namespace copied from the caller's after the mount and before the
// unmount has it at the same path, unless it changed its own mounts since
// (a bind over the file of `ip netns add`, which is not a block device, is
// known this way when the caller's table was read only before the mount
// and after the unmount).
func (c *Correlator) unmountedAsCopied(ev, mnt *event.Event) (identity, finding.Object, bool) {
	for _, n := range c.lineage.Live() {
		if n.Parent != ev.MntNS || !n.Created.After(mnt.Time) || !n.Created.Before(ev.Time) {
			continue
		}
		t := c.ledger.Table(n.Ino)
		if t == nil || !t.ReadAt.After(n.Created) || c.changedOwnMounts(n.Ino, n.Created) {
			continue
		}
		if m := t.At(ev.Target); m != nil && (mnt.FSType == "" || m.FSType == mnt.FSType || mnt.FSType == "none") {
			return identityOf(m, ev.Target), finding.Object{Path: ev.Target, Dev: devOf(m), FSType: m.FSType, Root: m.Root}, true
		}
	}
	return identity{}, finding.Object{}, false
}

// detachedCopies finds private copies the tables read before the unmount
// showed and the fresh ones do not. A private copy cannot have followed the
// unmount, and its namespace did not unmount it: the kernel detached it, as
// it does on unlink or rmdir of the mountpoint (containerd unlinks a netns
// right after its lazy unmount, docker removes `merged`). The leak formed
// all the same; on RHEL 7 kernels that unlink fails with EBUSY instead.
//
// The correlator runs behind the kernel: the latest table of a namespace
// may have been read, for an event queued before the unmount, after the
// unmount and the rmdir already happened. The table before it (earlier)
// is looked at too: a private copy of the same object leaves a namespace
// only by its own unmount or by that detach, which needs the object
// unmounted where the directory is removed.
func (c *Correlator) detachedCopies(id identity, ev *event.Event, before, earlier map[uint32]*Table, found []match) []match {
	callerTable := c.ledger.Table(ev.MntNS)
	var out []match
	for _, n := range c.lineage.Live() {
		if n.Ino == ev.MntNS || hasMatchIn(found, n.Ino) {
			continue // the caller, or still there
		}
		for _, t := range []*Table{before[n.Ino], earlier[n.Ino]} {
			if t == nil || c.ledger.Table(n.Ino) == t {
				continue // no such table, or not re-read
			}
			var copies []match
			for _, m := range outermost(t, findIn(t, id, callerTable)) {
				if IsPrivate(m) && !c.unmountedIn(n.Ino, m.Mountpoint, t.ReadAt) {
					copies = append(copies, match{ns: n, table: t, mount: m, where: m.Mountpoint, detached: true})
				}
			}
			if len(copies) > 0 {
				out = append(out, copies...)
				break
			}
		}
	}
	return out
}

func otherThan(ms []match, ns uint32) []match {
	var out []match
	for _, m := range ms {
		if m.ns.Ino != ns {
			out = append(out, m)
		}
	}
	return out
}

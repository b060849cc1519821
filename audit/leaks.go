package audit

import (
	"sort"
	"strconv"
	"strings"

	"github.com/mntleak/mntleak/correlate"
	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/finding"
	"github.com/mntleak/mntleak/procfs"
)

// Item is one thing `mntleak audit` reports: a leak that exists now,
// or configuration that makes leaks.
type Item struct {
	Kind      string            `json:"kind"` // "leak" or "risk"
	What      string            `json:"what"` // block-device, overlay, netns, stale-bind, survivors, private-hostpath, unit-mount-namespace, may-detach-mounts, privatetmp-after-containers, mountflags-live-restore
	MntNS     uint32            `json:"mntns,omitempty"`
	Where     string            `json:"where,omitempty"`
	Processes []finding.ProcRef `json:"processes,omitempty"`
	Detail    string            `json:"detail"`
	Fix       string            `json:"fix"`
}

// Line renders the item for people.
func (a *Item) Line() string {
	s := strings.ToUpper(a.Kind) + " " + a.What + ": " + a.Detail
	if len(a.Processes) > 0 {
		s += ", held by " + finding.ProcList(a.Processes, 3)
	}
	return finding.Escape(s + ". Fix: " + a.Fix)
}

// Leaks scans every namespace of the snapshot c's Start took (one
// mountinfo per namespace) for leaks that exist now, below prefix when it
// is set.
func Leaks(c *correlate.Correlator, prefix string) []Item {
	hostNS := c.HostNS()
	host := c.Ledger().Table(hostNS)
	var items []Item
	in := func(p string) bool { return prefix == "" || correlate.Under(p, prefix) }
	for _, n := range c.Lineage().Live() {
		t := c.Ledger().Table(n.Ino)
		if t == nil {
			continue
		}
		procs := func() []finding.ProcRef {
			var out []finding.ProcRef
			c.ReadCgroups(n)
			for _, m := range n.Members() {
				out = append(out, m.Ref())
			}
			return out
		}
		for _, m := range t.Mounts {
			if m.Mountpoint == "/" || !in(m.Mountpoint) {
				continue
			}
			if strings.HasSuffix(m.Root, "//deleted") {
				items = append(items, Item{Kind: "leak", What: "stale-bind", MntNS: n.Ino, Where: m.Mountpoint, Processes: procs(),
					Detail: finding.NSName(n.Ino) + " binds " + strings.TrimSuffix(m.Root, "//deleted") + " (deleted) at " + m.Mountpoint,
					Fix:    "unmount " + m.Mountpoint + " in " + finding.NSName(n.Ino) + " and bind the current file"})
			}
			if n.Ino == hostNS {
				continue
			}
			if item, ok := leakedCopy(n, m, host); ok {
				item.Processes = procs()
				items = append(items, item)
			}
		}
		if item, ok := survivors(c, n, t, in); ok {
			items = append(items, item)
		}
	}
	sort.SliceStable(items, func(i, j int) bool { return items[i].Kind < items[j].Kind })
	return items
}

// auditCopy: a mount in a namespace other than the host's that the host no
// longer has: a block device mounted only there, an overlay whose container
// is gone, a network namespace file whose entry was removed.
func leakedCopy(n *correlate.Namespace, m *procfs.Mount, host *correlate.Table) (Item, bool) {
	if host == nil {
		return Item{}, false
	}
	hostHas := func(match func(*procfs.Mount) bool) bool {
		for _, h := range host.Mounts {
			if match(h) {
				return true
			}
		}
		return false
	}
	where := finding.NSName(n.Ino) + " at " + m.Mountpoint
	switch {
	case m.FSType == "nsfs" && strings.HasPrefix(m.Root, "net:"):
		if !hostHas(func(h *procfs.Mount) bool { return h.FSType == "nsfs" && h.Root == m.Root }) {
			return Item{Kind: "leak", What: "netns", MntNS: n.Ino, Where: m.Mountpoint,
				Detail: "network namespace " + m.Root + " is still bound in " + where + " but no longer on the host (its /run/netns entry is gone)",
				Fix:    "unmount it in " + finding.NSName(n.Ino) + " (nsenter -t PID -m umount " + m.Mountpoint + "), or restart the holder; bind host paths with rslave"}, true
		}
	case m.FSType == "overlay":
		if !hostHas(func(h *procfs.Mount) bool { return devOf(h) == devOf(m) }) {
			return Item{Kind: "leak", What: "overlay", MntNS: n.Ino, Where: m.Mountpoint,
				Detail: "a container's overlay is still mounted in " + where + " although the host unmounted it (the container is gone)",
				Fix:    "restart the processes of " + finding.NSName(n.Ino) + ", or unmount it there"}, true
		}
	case m.Major != 0:
		if !hostHas(func(h *procfs.Mount) bool { return devOf(h) == devOf(m) }) {
			return Item{Kind: "leak", What: "block-device", MntNS: n.Ino, Where: m.Mountpoint,
				Detail: "block device " + devOf(m).String() + " (" + m.Source + ") is mounted only outside the host namespace, in " + where,
				Fix:    "unmount it in " + finding.NSName(n.Ino) + " or stop its processes before detaching the device"}, true
		}
	}
	return Item{}, false
}

// auditSurvivors: a namespace whose remaining processes are all shims
// (containerd-shim*) that holds a runtime's mounts: the namespace of a
// daemon that was restarted (MountFlags=slave with live-restore).
func survivors(c *correlate.Correlator, n *correlate.Namespace, t *correlate.Table, in func(string) bool) (Item, bool) {
	members := n.Members()
	if n.Ino == c.HostNS() || len(members) == 0 {
		return Item{}, false
	}
	for _, m := range members {
		if !strings.HasPrefix(m.Comm, "containerd-shim") {
			return Item{}, false
		}
	}
	var mounts []string
	for _, m := range t.Mounts {
		if m.Mountpoint != "/" && in(m.Mountpoint) && (m.FSType == "overlay" || m.FSType == "nsfs" || strings.Contains(m.Mountpoint, "/containers/")) {
			mounts = append(mounts, m.Mountpoint)
		}
	}
	if len(mounts) == 0 {
		return Item{}, false
	}
	var procs []finding.ProcRef
	c.ReadCgroups(n) // named now: their cgroups (a one-shot's list has none)
	for _, m := range n.Members() {
		procs = append(procs, m.Ref())
	}
	return Item{Kind: "leak", What: "survivors", MntNS: n.Ino, Where: mounts[0], Processes: procs,
		Detail: finding.NSName(n.Ino) + " is kept alive only by survivors of a restarted daemon and holds " + strconv.Itoa(len(mounts)) + " runtime mount(s), " + mounts[0] + " first",
		Fix:    "remove MountFlags=slave from the runtime's unit (it cannot work with live-restore); restart the survivors to release the namespace"}, true
}

// devOf is a mount's device.
func devOf(m *procfs.Mount) event.Dev { return event.MakeDev(uint32(m.Major), uint32(m.Minor)) }

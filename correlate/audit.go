package correlate

import (
	"sort"
	"strings"

	"github.com/moby/sys/mountinfo"
)

// AuditItem is one thing `mntleak audit` reports: a leak that exists now,
// or configuration that makes leaks.
type AuditItem struct {
	Kind      string    `json:"kind"` // "leak" or "risk"
	What      string    `json:"what"` // block-device, overlay, netns, stale-bind, survivors, private-hostpath, unit-mount-namespace, may-detach-mounts, privatetmp-after-containers, mountflags-live-restore
	MntNS     uint32    `json:"mntns,omitempty"`
	Where     string    `json:"where,omitempty"`
	Processes []ProcRef `json:"processes,omitempty"`
	Detail    string    `json:"detail"`
	Fix       string    `json:"fix"`
}

// Line renders the item for people.
func (a *AuditItem) Line() string {
	s := strings.ToUpper(a.Kind) + " " + a.What + ": " + a.Detail
	if len(a.Processes) > 0 {
		s += ", held by " + procList(a.Processes, 3)
	}
	return Escape(s + ". Fix: " + a.Fix)
}

// Audit scans every namespace of the snapshot Start took (one mountinfo per
// namespace) for leaks that exist now, below prefix when it is set.
func (c *Correlator) Audit(prefix string) []AuditItem {
	host := c.ledger.Table(c.hostNS)
	var items []AuditItem
	in := func(p string) bool { return prefix == "" || under(p, prefix) }
	for _, n := range c.lineage.Live() {
		t := c.ledger.Table(n.Ino)
		if t == nil {
			continue
		}
		procs := func() []ProcRef {
			var out []ProcRef
			for _, m := range n.Members() {
				out = append(out, m.ref())
			}
			return out
		}
		for _, m := range t.Mounts {
			if m.Mountpoint == "/" || !in(m.Mountpoint) {
				continue
			}
			if strings.HasSuffix(m.Root, "//deleted") {
				items = append(items, AuditItem{Kind: "leak", What: "stale-bind", MntNS: n.Ino, Where: m.Mountpoint, Processes: procs(),
					Detail: nsName(n.Ino) + " binds " + strings.TrimSuffix(m.Root, "//deleted") + " (deleted) at " + m.Mountpoint,
					Fix:    "unmount " + m.Mountpoint + " in " + nsName(n.Ino) + " and bind the current file"})
			}
			if n.Ino == c.hostNS {
				continue
			}
			if item, ok := c.auditCopy(n, t, m, host); ok {
				item.Processes = procs()
				items = append(items, item)
			}
		}
		if item, ok := c.auditSurvivors(n, t, in); ok {
			items = append(items, item)
		}
	}
	sort.SliceStable(items, func(i, j int) bool { return items[i].Kind < items[j].Kind })
	return items
}

// auditCopy: a mount in a namespace other than the host's that the host no
// longer has: a block device mounted only there, an overlay whose container
// is gone, a network namespace file whose entry was removed.
func (c *Correlator) auditCopy(n *Namespace, t *Table, m *mountinfo.Info, host *Table) (AuditItem, bool) {
	if host == nil {
		return AuditItem{}, false
	}
	hostHas := func(match func(*mountinfo.Info) bool) bool {
		for _, h := range host.Mounts {
			if match(h) {
				return true
			}
		}
		return false
	}
	where := nsName(n.Ino) + " at " + m.Mountpoint
	switch {
	case m.FSType == "nsfs" && strings.HasPrefix(m.Root, "net:"):
		if !hostHas(func(h *mountinfo.Info) bool { return h.FSType == "nsfs" && h.Root == m.Root }) {
			return AuditItem{Kind: "leak", What: "netns", MntNS: n.Ino, Where: m.Mountpoint,
				Detail: "network namespace " + m.Root + " is still bound in " + where + " but no longer on the host (its /run/netns entry is gone)",
				Fix:    "unmount it in " + nsName(n.Ino) + " (nsenter -t PID -m umount " + m.Mountpoint + "), or restart the holder; bind host paths with rslave"}, true
		}
	case m.FSType == "overlay":
		if !hostHas(func(h *mountinfo.Info) bool { return devOf(h) == devOf(m) }) {
			return AuditItem{Kind: "leak", What: "overlay", MntNS: n.Ino, Where: m.Mountpoint,
				Detail: "a container's overlay is still mounted in " + where + " although the host unmounted it (the container is gone)",
				Fix:    "restart the processes of " + nsName(n.Ino) + ", or unmount it there"}, true
		}
	case m.Major != 0:
		if !hostHas(func(h *mountinfo.Info) bool { return devOf(h) == devOf(m) }) {
			return AuditItem{Kind: "leak", What: "block-device", MntNS: n.Ino, Where: m.Mountpoint,
				Detail: "block device " + devOf(m).String() + " (" + m.Source + ") is mounted only outside the host namespace, in " + where,
				Fix:    "unmount it in " + nsName(n.Ino) + " or stop its processes before detaching the device"}, true
		}
	}
	return AuditItem{}, false
}

// auditSurvivors: a namespace whose remaining processes are all shims
// (containerd-shim*) that holds a runtime's mounts: the namespace of a
// daemon that was restarted (MountFlags=slave with live-restore).
func (c *Correlator) auditSurvivors(n *Namespace, t *Table, in func(string) bool) (AuditItem, bool) {
	members := n.Members()
	if n.Ino == c.hostNS || len(members) == 0 {
		return AuditItem{}, false
	}
	for _, m := range members {
		if !strings.HasPrefix(m.Comm, "containerd-shim") {
			return AuditItem{}, false
		}
	}
	var mounts []string
	for _, m := range t.Mounts {
		if m.Mountpoint != "/" && in(m.Mountpoint) && (m.FSType == "overlay" || m.FSType == "nsfs" || strings.Contains(m.Mountpoint, "/containers/")) {
			mounts = append(mounts, m.Mountpoint)
		}
	}
	if len(mounts) == 0 {
		return AuditItem{}, false
	}
	var procs []ProcRef
	for _, m := range members {
		procs = append(procs, m.ref())
	}
	return AuditItem{Kind: "leak", What: "survivors", MntNS: n.Ino, Where: mounts[0], Processes: procs,
		Detail: nsName(n.Ino) + " is kept alive only by survivors of a restarted daemon and holds " + itoa(len(mounts)) + " runtime mount(s), " + mounts[0] + " first",
		Fix:    "remove MountFlags=slave from the runtime's unit (it cannot work with live-restore); restart the survivors to release the namespace"}, true
}

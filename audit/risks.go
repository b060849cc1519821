package audit

import (
	"slices"
	"strings"
	"sync"

	"github.com/mntleak/mntleak/correlate"
	"github.com/mntleak/mntleak/finding"
)

// RiskFacts are the node settings Risks looks at besides /proc.
type RiskFacts struct {
	// MayDetachMounts is fs.may_detach_mounts (RHEL 7 kernels), or -1 when
	// the sysctl does not exist (upstream always detaches).
	MayDetachMounts int
	// LiveRestore: Docker's live-restore is on (daemon.json or the flag).
	LiveRestore bool
	// BindRoots are the node directories a bind of which, with no
	// propagation, keeps everything the node unmounts below them (nil:
	// DefaultBindRoots); CSIDirs are those every directory under which is
	// a CSI plugin's (nil: DefaultCSIDirs).
	BindRoots, CSIDirs []string
	// Units are runtime units configured with a mount namespace of their
	// own: "docker.service: MountFlags=slave (/etc/systemd/...)".
	Units []UnitSetting
}

// UnitSetting is a unit's setting that gives it a mount namespace.
type UnitSetting struct{ Unit, Setting, File string }

// DefaultBindRoots are the dangerous bind sources with the runtimes'
// default directories.
func DefaultBindRoots() []string {
	return []string{"/", "/var", "/run", "/dev", "/var/lib/kubelet", "/var/lib/docker", "/var/lib/containerd"}
}

// DefaultCSIDirs are the kubelet's plugin directories with its default
// root: a CSI driver's directory sits below them, its staged volumes too.
func DefaultCSIDirs() []string {
	return []string{"/var/lib/kubelet/plugins", "/var/lib/kubelet/plugins_registry"}
}

// dangerousSource reports whether a bind of src is one Risks flags, and
// what it is.
func (f RiskFacts) dangerousSource(src string) (string, bool) {
	roots, csi := f.BindRoots, f.CSIDirs
	if roots == nil {
		roots = DefaultBindRoots()
	}
	if csi == nil {
		csi = DefaultCSIDirs()
	}
	for _, r := range roots {
		if src == r {
			return "the host's " + src, true
		}
	}
	for _, d := range csi {
		if src == d || correlate.Under(src, d) {
			return "the CSI plugin directory " + src, true
		}
	}
	return "", false
}

// Risks reports configuration that makes leaks, from the snapshot Start
// took and the facts given. Below a path prefix only what is about a mount
// below it: the node's settings (the sysctl, a unit's, a runtime's
// live-restore) are below no path.
func Risks(c *correlate.Correlator, f RiskFacts, prefix string) []Item {
	var items []Item
	if f.MayDetachMounts == 0 && prefix == "" {
		items = append(items, Item{Kind: "risk", What: "may-detach-mounts",
			Detail: "fs.may_detach_mounts=0: removing a mountpoint that another namespace still has mounted fails with EBUSY (the seeds' unlinkat/rmdir errors)",
			Fix:    "sysctl -w fs.may_detach_mounts=1 (dockerd sets it at start; containerd does not)"})
	}
	for _, u := range f.Units {
		if prefix != "" {
			break // a unit is not below a path
		}
		items = append(items, Item{Kind: "risk", What: "unit-mount-namespace", Where: u.File,
			Detail: u.Unit + " has " + u.Setting + " (" + u.File + "): the runtime gets a mount namespace of its own, and a restart with live containers strands their mounts in it",
			Fix:    "remove " + u.Setting + " from " + u.Unit + " (a drop-in in /etc/systemd/system/" + u.Unit + ".d/ that resets it), then restart it once no container runs"})
	}
	// The oldest container, asked only of a PrivateTmp namespace: finding it
	// reads the cgroups of every namespace's members.
	firstContainer := sync.OnceValue(func() *correlate.Member { return oldestContainer(c) })
	for _, n := range c.Lineage().Live() {
		if t := c.Ledger().Table(n.Ino); t != nil && n.Ino != c.HostNS() {
			items = append(items, namespaceRisks(c, n, t, f, prefix, firstContainer)...)
		}
	}
	return items
}

// namespaceRisks are the risks of namespace n, whose table is t: private
// binds of the node's roots, a PrivateTmp unit started after the first
// container (firstContainer), a runtime with live-restore. Its members'
// cgroups are read only for an item that names them.
func namespaceRisks(c *correlate.Correlator, n *correlate.Namespace, t *correlate.Table, f RiskFacts, prefix string,
	firstContainer func() *correlate.Member) []Item {
	var items []Item
	members := n.Members()
	procs := func() []finding.ProcRef {
		c.ReadCgroups(n)
		var out []finding.ProcRef
		for _, m := range n.Members() {
			out = append(out, m.Ref())
		}
		return out
	}
	// Binds of /, /var, /run, /dev, the runtimes' and the kubelet's
	// roots or a CSI plugin's directory without propagation.
	for _, m := range t.Mounts {
		if m.Mountpoint == "/" || !correlate.IsPrivate(m) || (prefix != "" && !correlate.Under(m.Mountpoint, prefix)) {
			continue
		}
		src, ok := c.BindSource(n, m)
		if !ok {
			continue
		}
		what, ok := f.dangerousSource(src)
		if !ok {
			continue
		}
		items = append(items, Item{Kind: "risk", What: "private-hostpath", MntNS: n.Ino, Where: m.Mountpoint, Processes: procs(),
			Detail: finding.NSName(n.Ino) + " binds " + what + " at " + m.Mountpoint + " with no propagation: everything the host unmounts below it stays mounted there",
			Fix:    "mount it with mountPropagation: HostToContainer (rslave), or docker run -v SRC:DST:rslave"})
	}
	// A PrivateTmp unit started after containers copied their mounts.
	if tmp := t.At("/tmp"); tmp != nil && len(members) > 0 && (prefix == "" || correlate.Under("/tmp", prefix)) {
		if unit := correlate.PrivateTmpUnit(tmp.Root); unit != "" && firstContainer() != nil && members[0].StartTime > firstContainer().StartTime {
			items = append(items, Item{Kind: "risk", What: "privatetmp-after-containers", MntNS: n.Ino, Where: "/tmp", Processes: procs(),
				Detail: unit + " (PrivateTmp) started after containers were running, so " + finding.NSName(n.Ino) + " holds copies of their mounts",
				Fix:    "restart " + unit + " after container churn, or keep container storage shared so unmounts reach its slave namespace"})
		}
	}
	// A container runtime in a namespace of its own, with live-restore:
	// a risk of the node, below no path (as a unit's).
	if !f.LiveRestore || prefix != "" || !slices.ContainsFunc(members, func(m correlate.Member) bool { return m.Comm == "dockerd" }) {
		return items
	}
	c.ReadCgroups(n)
	for _, m := range n.Members() {
		if m.Comm == "dockerd" {
			items = append(items, Item{Kind: "risk", What: "mountflags-live-restore", MntNS: n.Ino, Processes: []finding.ProcRef{m.Ref()},
				Detail: "dockerd runs in a mount namespace of its own (" + finding.NSName(n.Ino) + ", MountFlags=slave) with live-restore: a restart strands its mounts with the surviving shims",
				Fix:    "remove MountFlags=slave from docker.service, or disable live-restore"})
		}
	}
	return items
}

// oldestContainer is the member of a container that started first, nil
// when no namespace has one. Containers have mount namespaces of their
// own: the host's members (whose cgroups a one-shot's list leaves out) are
// not looked at.
func oldestContainer(c *correlate.Correlator) *correlate.Member {
	var first *correlate.Member
	for _, n := range c.Lineage().Live() {
		if n.Ino == c.HostNS() {
			continue
		}
		c.ReadCgroups(n)
		members := n.Members()
		for i := range members {
			if correlate.ContainerID(members[i].Cgroup) != "" && (first == nil || members[i].StartTime < first.StartTime) {
				m := members[i]
				first = &m
			}
		}
	}
	return first
}

// hasLiveRestore reports whether a daemon.json turns live-restore on.
func hasLiveRestore(daemonJSON string) bool {
	compact := strings.Join(strings.Fields(daemonJSON), "")
	return strings.Contains(compact, `"live-restore":true`)
}

// LiveRestore reports whether Docker's configuration (daemon.json content)
// or a dockerd command line enables live-restore.
func LiveRestore(daemonJSON, dockerdCmdline string) bool {
	return hasLiveRestore(daemonJSON) || strings.Contains(dockerdCmdline, "--live-restore")
}

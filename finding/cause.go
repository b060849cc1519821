package finding

import "fmt"

// Cause is why an object is still held. The set is closed: the engine's
// rule table (correlate/rules.go, one rule_<slug>.go per cause) concludes
// exactly one per holding. The causes are declared in that table's order:
// the first whose evidence is there wins, and a finding leads with the
// holding whose cause comes first.
type Cause int

// Causes, in the rule table's order. The zero value is invalid. What each
// one takes and gives is its row of causeTable.
const (
	CauseInvalid Cause = iota
	// mount/move_mount ENOENT: the source is a bind of a file or directory
	// that was deleted (subPath of an updated ConfigMap). Not a leak.
	CauseStaleBind
	// The object is a FUSE mount whose server died (killed, crashed)
	// without unmounting it: every access fails with ENOTCONN.
	CauseDeadFuseDaemon
	// A propagated copy in another namespace is busy (a cwd or fd in it).
	CauseBusyCopy
	// No leak: a stopped container's rootfs, mounted in the caller's own
	// namespace (the runtime's task bundle), is kept busy by a process
	// outside the container (an agent with a file, cwd or root in it).
	CauseRootfsHeld
	// No leak: the object was mounted at two paths (a CSI node plugin's
	// staging path and a directory of its own); the unmount of one
	// succeeded and the other still holds it.
	CauseDoubleMount
	// A mount made in another namespace propagated into the caller's through
	// a shared peer group (Bidirectional / rshared) and now blocks it.
	CauseSharedPropagation
	// No leak: the object is mounted or open in the caller's own namespace.
	CauseInUse
	// The holder namespace is a PrivateTmp=yes unit's, taken after the
	// object was mounted.
	CausePrivateTmp
	// The object sits under a recursive bind whose copy is private: a
	// container's hostPath / (mountPropagation None).
	CauseRprivateBind
	// A daemon started by systemd into a slave namespace (MountFlags=slave)
	// was restarted into a newer one; survivors (containerd-shim under
	// live-restore) keep the old namespace and its mounts.
	CauseMountflagsRestart
	// The copy was taken while its parent mount was private.
	CausePrivateParent
	// A generic private namespace keeps a copy; its creator is named.
	CauseUnshare
	// Not enough evidence; the finding says what is missing.
	CauseUnknown
	causeMax
)

// CauseInfo is a cause's row of the cause table: its properties, as the
// line, release, docs/causes.md and the README read them.
type CauseInfo struct {
	Slug string // its name on every line: [cause: SLUG]
	// Leak: the mount leaked into another namespace (not a plain busy
	// mount, a stale bind, or a copy nothing more is known of).
	Leak bool
	// Releasable: `mntleak release` may detach the copy a finding of this
	// cause names (a leak, a busy copy, or an unknown copy: the copy is
	// elsewhere, and release proves the rest from the kernel).
	Releasable bool
	// Needs is the evidence the rule reads, and Fix the fix it gives, in
	// words (a verdict has the exact text): docs/causes.md's columns.
	Needs, Fix string
	// Example is the recorded scenario (e2e/scenarios/EXAMPLE) whose
	// golden holds a real finding of the cause: docs/causes.md quotes its
	// first line of this cause ("": none recorded yet).
	Example string
}

// causeTable has one row per cause, in the rule table's order.
var causeTable = [...]CauseInfo{
	CauseInvalid: {Slug: "invalid"},
	CauseStaleBind: {Slug: "stale-bind",
		Needs:   "a mount or move_mount that failed with ENOENT; the source is a mount in the caller's namespace (or the one it was copied from) whose root mountinfo shows as //deleted",
		Fix:     "unmount the stale bind and bind the current file again; prefer whole-volume ConfigMap mounts over subPath",
		Example: "seed003-subpath-configmap"},
	CauseDeadFuseDaemon: {Slug: "dead-fuse-daemon", Releasable: true,
		Needs:   "the object is a FUSE mount (fuse, fuse.*, fuseblk); its mount event, and the exit of the process that serves it (the mounter, or fusermount's parent) killed by a signal or failing, after it",
		Fix:     "unmount it lazily in the namespace that has it: fusermount3 -uz PATH or umount -l PATH (nsenter -t PID -m there, or mntleak release), then restart the FUSE server",
		Example: "fuse-daemon-killed"},
	CauseBusyCopy: {Slug: "busy-copy", Releasable: true,
		Needs:   "an umount2 that failed with EBUSY (or why/release asked where the caller has it mounted, of a copy that is a peer or slave of the caller's mount); a copy in another namespace, and a process whose cwd, root, fd or mapping lies in it",
		Fix:     "stop that process or move it off the copy, then retry (or unmount lazily)",
		Example: "busy-copy"},
	CauseRootfsHeld: {Slug: "rootfs-held",
		Needs:   "an unmount or removal that failed with EBUSY on a container's rootfs (containerd's task bundle .../io.containerd.runtime.v2.task/NAMESPACE/ID/rootfs) mounted in the caller's own namespace; a process whose fd, cwd or root lies in it; the runtime's mount of it when traced",
		Fix:     "have the process close the file (or leave the directory), or stop it, then delete the task again; agents read a running container's files through /proc/PID/root, not the node's path of its rootfs",
		Example: "rootfs-held"},
	CauseDoubleMount: {Slug: "double-mount",
		Needs:   "the object is still mounted at a path a traced mount made (the device again, or a bind to or from the other path); a mount of it at another path made before, and a successful unmount of that path after both",
		Fix:     "unmount the remaining mount where it is (umount PATH, or nsenter -t PID -m umount PATH in the namespace that has it), then retry; the component that mounted it twice must unmount both (a CSI node plugin: NodeUnstageVolume and NodeUnpublishVolume undo every mount NodeStageVolume and NodePublishVolume made, not only the kubelet's path)",
		Example: "csi-double-mount"},
	CauseSharedPropagation: {Slug: "shared-propagation", Leak: true, Releasable: true,
		Needs:   "the object is mounted in the caller's namespace in a shared or slave peer group; a successful mount of it made in another namespace",
		Fix:     "unmount it where it was mounted; HostToContainer instead of Bidirectional",
		Example: "shared-propagation"},
	CauseInUse: {Slug: "in-use",
		Needs:   "the object is mounted or busy in the caller's own namespace (its own cwd, or a process there)",
		Fix:     "cd out / stop the processes there / unmount it first, then retry",
		Example: "in-use"},
	CausePrivateTmp: {Slug: "private-tmp", Leak: true, Releasable: true,
		Needs:   "the holder namespace's /tmp is a bind of /tmp/systemd-private-*-UNIT-*/tmp",
		Fix:     "restart UNIT; keep the mounts shared or slave, or start UNIT before the containers",
		Example: "seed004-privatetmp"},
	CauseRprivateBind: {Slug: "rprivate-bind", Leak: true, Releasable: true,
		Needs:   "the copy lies under a private bind in the holder whose source is a directory of the namespace it came from (a container's hostPath); the rbind and make-private events when traced",
		Fix:     "mountPropagation HostToContainer (docker -v SRC:DST:rslave); restart the container",
		Example: "seed002-node-exporter"},
	CauseMountflagsRestart: {Slug: "mountflags-restart", Leak: true, Releasable: true,
		Needs:   "the caller runs in a namespace its daemon made by unshare; the holder is an older namespace made by the same daemon (creator or past member), created before the caller's",
		Fix:     "remove MountFlags=slave from the daemon's unit; nsenter -t SURVIVOR -m umount PATH",
		Example: "seed001-mountflags-restart"},
	CausePrivateParent: {Slug: "private-parent", Leak: true, Releasable: true,
		Needs:   "the copy's parent mount is private in the holder; the parent namespace made it private (mount MS_PRIVATE or mount_setattr) before the holder was copied",
		Fix:     "keep the parent shared or slave before namespaces are copied; restart the holder's processes",
		Example: "private-parent"},
	CauseUnshare: {Slug: "unshare", Leak: true, Releasable: true,
		Needs:   "the holder namespace's creator is known: its unshare/clone event, or its oldest process from /proc",
		Fix:     "restart the creator and the processes in the namespace; create namespaces with slave propagation",
		Example: "pid-reuse"},
	CauseUnknown: {Slug: "unknown", Releasable: true,
		Needs:   "nothing more than the copy itself",
		Fix:     "nsenter into the namespace and unmount the copy",
		Example: "bind-kept-before-tracing"},
}

// Info is the cause's row of the cause table (the zero CauseInfo for a
// value outside it).
func (c Cause) Info() CauseInfo {
	if c >= 0 && c < causeMax {
		return causeTable[c]
	}
	return CauseInfo{}
}

func (c Cause) String() string {
	if c >= 0 && c < causeMax {
		return causeTable[c].Slug
	}
	return fmt.Sprintf("cause(%d)", int(c))
}

// IsLeak reports whether the cause means a mount leaked into another
// namespace (as opposed to a plain busy mount or a stale bind).
func (c Cause) IsLeak() bool { return c.Info().Leak }

// Releasable reports whether `mntleak release` may act on a finding of
// this cause: the copy it names is elsewhere (release proves the rest).
func (c Cause) Releasable() bool { return c.Info().Releasable }

// MarshalText implements encoding.TextMarshaler.
func (c Cause) MarshalText() ([]byte, error) {
	if c <= CauseInvalid || c >= causeMax {
		return nil, fmt.Errorf("invalid cause %d", int(c))
	}
	return []byte(c.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (c *Cause) UnmarshalText(b []byte) error {
	cause, err := ParseCause(string(b))
	if err != nil {
		return err
	}
	*c = cause
	return nil
}

// ParseCause returns the cause named s.
func ParseCause(s string) (Cause, error) {
	for c := CauseInvalid + 1; c < causeMax; c++ {
		if causeTable[c].Slug == s {
			return c, nil
		}
	}
	return CauseInvalid, fmt.Errorf("unknown cause %q", s)
}

// Causes lists every valid cause.
func Causes() []Cause {
	out := make([]Cause, 0, causeMax-1)
	for c := CauseInvalid + 1; c < causeMax; c++ {
		out = append(out, c)
	}
	return out
}

package procfs

import (
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/internal/kmount"
)

// KernelNamespaces is implemented by a Proc that asks the kernel itself
// about mount namespaces (Linux 6.12+): every one there is, with no process
// list (NS_MNT_GET_NEXT/PREV), and the table of any one by its birth id,
// with no process or nsfs file to read it through (listmount, statmount).
// Host implements it; on an older kernel its methods fail and the caller
// reads /proc as before. A Recorder records its answers and a Replay gives
// them back; a recording made without them answers with an error, so an
// old recording replays through /proc's answers as it was recorded.
type KernelNamespaces interface {
	// MountNamespaces lists every mount namespace of the machine.
	MountNamespaces() ([]kmount.Namespace, error)
	// NamespaceTable is the mount table of the namespace born with id, as
	// /proc/PID/mountinfo would show it (ids, parents, devices, roots,
	// mount points, propagation, fstype, super options; the source and a
	// FUSE type's subtype on Linux 6.14+).
	NamespaceTable(id uint64) ([]*Mount, error)
}

// MountNamespaces implements KernelNamespaces.
func (h Host) MountNamespaces() ([]kmount.Namespace, error) {
	return kmount.Namespaces(h.root() + "/self/ns/mnt")
}

// NamespaceTable implements KernelNamespaces.
func (h Host) NamespaceTable(id uint64) ([]*Mount, error) {
	mounts, err := kmount.Table(id)
	if err != nil {
		return nil, err
	}
	out := make([]*Mount, len(mounts))
	var sh shapes
	for i := range mounts {
		out[i] = entryOf(&mounts[i], &sh)
	}
	return out, nil
}

// entryOf is a statmount answer as a mountinfo line would show it, its
// strings interned and its shape sh's.
func entryOf(m *kmount.Mount, sh *shapes) *Mount {
	shape := MountShape{
		Major: int(m.Dev.Major()), Minor: int(m.Dev.Minor()),
		Root: m.Root, Mountpoint: m.Point, Options: mountOptions(m.Attr), Optional: optionalFields(m),
		FSType: fsType(m), Source: m.Source, VFSOptions: superOptions(m),
	}
	intern(&shape)
	return sh.mount(m.OldID, m.OldParent, shape)
}

// fsType is mountinfo's field 9: the type, and a FUSE mount's subtype
// after a dot (fuse.sshfs).
func fsType(m *kmount.Mount) string {
	if m.Subtype == "" {
		return m.FSType
	}
	return m.FSType + "." + m.Subtype
}

// The superblock's SB_ flags mountinfo's super options name before the
// filesystem's own, in its order.
var superFlagWords = []struct {
	bit  uint32
	word string
}{
	{unix.MS_SYNCHRONOUS, "sync"}, {unix.MS_DIRSYNC, "dirsync"}, {unix.MS_MANDLOCK, "mand"}, {unix.MS_LAZYTIME, "lazytime"},
}

// superOptions is mountinfo's field 11: ro or rw, the superblock's flags,
// then the filesystem's options statmount gives.
func superOptions(m *kmount.Mount) string {
	out := "rw"
	if m.SBFlags&unix.MS_RDONLY != 0 {
		out = "ro"
	}
	for _, w := range superFlagWords {
		if m.SBFlags&w.bit != 0 {
			out += "," + w.word
		}
	}
	if m.Opts != "" {
		out += "," + m.Opts
	}
	return out
}

// The MOUNT_ATTR_ bits statmount reports, and the words mountinfo uses.
// Strict atime has none: mountinfo shows it as neither noatime nor
// relatime.
var mountAttrWords = []struct {
	bit  uint64
	word string
}{
	{unix.MOUNT_ATTR_NOSUID, "nosuid"}, {unix.MOUNT_ATTR_NODEV, "nodev"}, {unix.MOUNT_ATTR_NOEXEC, "noexec"},
	{unix.MOUNT_ATTR_NOATIME, "noatime"},
	{unix.MOUNT_ATTR_NODIRATIME, "nodiratime"}, {unix.MOUNT_ATTR_IDMAP, "idmapped"},
	{unix.MOUNT_ATTR_NOSYMFOLLOW, "nosymfollow"},
}

// mountOptions are a mount's per-mount options as mountinfo's field 6
// names them.
func mountOptions(attr uint64) string {
	words := []string{"rw"}
	if attr&unix.MOUNT_ATTR_RDONLY != 0 {
		words[0] = "ro"
	}
	for _, w := range mountAttrWords {
		if attr&w.bit != 0 {
			words = append(words, w.word)
		}
	}
	if attr&(unix.MOUNT_ATTR_NOATIME|unix.MOUNT_ATTR_STRICTATIME) == 0 {
		words = append(words, "relatime")
	}
	return strings.Join(words, ",")
}

// optionalFields are mountinfo's optional fields: the peer group, the
// master, the peer group propagation comes from, unbindable.
func optionalFields(m *kmount.Mount) string {
	var out []string
	if m.Prop&unix.MS_SHARED != 0 {
		out = append(out, "shared:"+strconv.FormatUint(m.Peer, 10))
	}
	if m.Prop&unix.MS_SLAVE != 0 {
		out = append(out, "master:"+strconv.FormatUint(m.Master, 10))
		if m.PropFrom != 0 && m.PropFrom != m.Master {
			out = append(out, "propagate_from:"+strconv.FormatUint(m.PropFrom, 10))
		}
	}
	if m.Prop&unix.MS_UNBINDABLE != 0 {
		out = append(out, "unbindable")
	}
	return strings.Join(out, " ")
}

// errNoKernelNamespaces is the answer of a Proc without KernelNamespaces.
func errNoKernelNamespaces(p Proc) error {
	return fmt.Errorf("%T cannot ask the kernel for mount namespaces", p)
}

// TableReader is implemented by a Proc that reads many processes' mount
// tables at once (Host: on a few goroutines, as the /proc scans): the
// answers are Mountinfo's, in the order of pids. The startup snapshot and
// a refresh read one table per namespace, hundreds on a busy node. A
// Recorder records the answers in that order; a Replay does not implement
// it (its answers are looked up one by one).
type TableReader interface {
	Mountinfos(pids []int) []TableAnswer
}

// TableAnswer is one Mountinfo answer.
type TableAnswer struct {
	NS     uint32
	Mounts []*Mount
	Err    error
}

// Mountinfos implements TableReader.
func (h Host) Mountinfos(pids []int) []TableAnswer {
	out := make([]TableAnswer, len(pids))
	scan(len(pids), func(i int, s *scratch) {
		a := &out[i]
		a.NS, a.Mounts, a.Err = h.mountinfo(pids[i], s)
	})
	return out
}

// Mountinfos implements TableReader: the wrapped Proc's answers (one by
// one when it has no TableReader), recorded in the order of pids.
func (r Recorder) Mountinfos(pids []int) []TableAnswer {
	out := make([]TableAnswer, len(pids))
	tr, ok := r.Proc.(TableReader)
	if ok {
		out = tr.Mountinfos(pids)
	}
	for i, pid := range pids {
		a := &out[i]
		if !ok {
			a.NS, a.Mounts, a.Err = r.Proc.Mountinfo(pid)
		}
		r.Write(&Record{Op: OpMountinfo, PID: pid, MntNS: a.NS, Mounts: a.Mounts, Err: errString(a.Err)})
	}
	return out
}

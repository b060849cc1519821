package podmounts

import (
	"cmp"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/mntleak/mntleak/correlate"
	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/finding"
	"github.com/mntleak/mntleak/kubeletpath"
	"github.com/mntleak/mntleak/procfs"
)

// Kind is what an object is to the pod.
type Kind string

// The kinds, in the order they are answered.
const (
	KindVolume  Kind = "volume"  // <root>/pods/UID/volumes/PLUGIN/NAME
	KindSubPath Kind = "subpath" // <root>/pods/UID/volume-subpaths/NAME/CONTAINER/N
	KindNetNS   Kind = "netns"   // the sandbox's network namespace, an nsfs bind
	KindShm     Kind = "shm"     // the sandbox's /dev/shm, a tmpfs
	KindRootfs  Kind = "rootfs"  // a container's root filesystem
)

var kindRank = map[Kind]int{KindVolume: 0, KindSubPath: 1, KindNetNS: 2, KindShm: 3, KindRootfs: 4}

// Object is one thing the kubelet or the runtime keeps for the pod.
type Object struct {
	Kind Kind `json:"kind"`
	// Text names it for a person: "volume data (emptyDir)", "the
	// sandbox's netns net:[4026532571]", "container 1a2b3c4d5e6f's rootfs".
	Text string `json:"text"`
	// Path is where the node's mount namespace has it (or had it: a copy
	// that outlived the node's mount is named by the node's path).
	Path string `json:"path"`
	// Dev and Root identify a mounted object (0 and "" for a directory
	// that is no mount: an emptyDir on the node's disk).
	Dev  event.Dev `json:"dev,omitempty"`
	Root string    `json:"root,omitempty"`
	// OnNode: the node's namespace has it mounted, or (a directory) it
	// exists there; false for an object only another namespace's copy shows.
	OnNode bool `json:"on_node"`
	// Nested: a mount below a volume's directory, which the kubelet did
	// not make (a Bidirectional pod's mount that propagated into it): the
	// volume's directory cannot be removed while it is there.
	Nested bool `json:"nested,omitempty"`
	// PeerGroup is the shared peer group of the node's mount (its
	// shared:N), 0 for none: a copy in that group, or a slave of it,
	// receives the node's unmount and holds nothing.
	PeerGroup int `json:"peer_group,omitempty"`
}

// Input is what Find reads: the node's mount tables and processes, and
// what the runtime said of the pod.
type Input struct {
	KubeletRoot string
	UID         string
	// NodeNS is the node's mount namespace (the view's).
	NodeNS uint32
	// Tables are the mount tables of every namespace that could be read.
	Tables map[uint32][]*procfs.Mount
	// ContainerIDs are the pod's containers and sandbox (64 hex), from
	// its processes' cgroups and the runtime.
	ContainerIDs []string
	// NetNS are the network namespaces of the pod's processes ("net:[N]").
	NetNS []string
	// VolumeDirs are the directories under <root>/pods/UID/ that are
	// volumes or subPath binds on the node's disk (paths on the node).
	VolumeDirs []string
}

// Find lists the pod's objects, in a fixed order (kind, then path).
func Find(in Input) []Object {
	root := strings.TrimSuffix(path.Clean(in.KubeletRoot), "/")
	podDir := root + "/pods/" + in.UID
	seen := map[string]bool{}
	var out []Object
	add := func(o Object) {
		// A mounted object once, by its device and root; and a path of
		// the node's once (a volume's directory that is a mount point).
		keys := []string{"dev " + o.Dev.String() + ":" + o.Root}
		if o.Dev == 0 && o.Root == "" {
			keys = nil
		}
		if o.OnNode {
			keys = append(keys, "path "+o.Path)
		}
		for _, k := range keys {
			if seen[k] {
				return
			}
		}
		for _, k := range keys {
			seen[k] = true
		}
		out = append(out, o)
	}
	nsids := slices.Sorted(maps.Keys(in.Tables))
	// The node's table first: what it has mounted is named by its path there.
	slices.SortStableFunc(nsids, func(a, b uint32) int { return cmp.Compare(b2i(b == in.NodeNS), b2i(a == in.NodeNS)) })
	for _, ns := range nsids {
		onNode := ns == in.NodeNS
		for _, m := range in.Tables[ns] {
			if o, ok := in.objectOf(m, root, podDir, onNode); ok {
				add(o)
			}
		}
	}
	// A volume's directory a mount is on (the node's, or a copy only
	// another namespace has: the kubelet unmounted the volume but could
	// not remove the directory) is that mount's object already.
	named := map[string]bool{}
	for _, o := range out {
		named[o.Path] = true
	}
	for _, dir := range in.VolumeDirs {
		if v, ok := kubeletpath.Parse(root, dir); ok && v.PodUID == in.UID && v.Name != "" && !named[dir] {
			add(Object{Kind: volumeKind(v), Text: v.Text(), Path: dir, OnNode: true})
		}
	}
	slices.SortStableFunc(out, func(a, b Object) int {
		if c := cmp.Compare(kindRank[a.Kind], kindRank[b.Kind]); c != 0 {
			return c
		}
		return cmp.Compare(a.Path, b.Path)
	})
	return out
}

// objectOf says whether mount m of a namespace's table is one of the
// pod's objects, and which.
func (in Input) objectOf(m *procfs.Mount, root, podDir string, onNode bool) (Object, bool) {
	dev := event.MakeDev(uint32(m.Major), uint32(m.Minor))
	o := Object{Dev: dev, Root: m.Root, Path: m.Mountpoint, OnNode: onNode}
	if onNode {
		o.PeerGroup = peerGroup(m)
	}
	if v, ok := kubeletpath.Find(root, m.Mountpoint); ok && v.PodUID == in.UID && v.Name != "" {
		o.Kind, o.Text = volumeKind(v), v.Text()
		// Named by where the node has (had) it.
		i := strings.LastIndex(m.Mountpoint, "/pods/"+in.UID+"/")
		rest := m.Mountpoint[i+len("/pods/"+in.UID):] // /volumes/PLUGIN/NAME[/...]
		o.Path = podDir + rest
		if parts := strings.Split(strings.TrimPrefix(rest, "/"), "/"); len(parts) > 3 && !(v.SubPath && len(parts) == 4) {
			o.Nested = true
			o.Text = "a mount inside " + o.Text
		}
		return o, true
	}
	if m.FSType == "nsfs" && slices.Contains(in.NetNS, m.Root) {
		o.Kind, o.Text = KindNetNS, "the sandbox's netns "+m.Root
		return o, true
	}
	base := path.Base(m.Mountpoint)
	if base != "shm" && base != "rootfs" {
		return Object{}, false
	}
	id := correlate.ContainerID(m.Mountpoint)
	if id == "" || !slices.Contains(in.ContainerIDs, id) {
		return Object{}, false
	}
	if base == "shm" {
		o.Kind, o.Text = KindShm, "the sandbox's shm ("+finding.ShortID(id)+")"
	} else {
		o.Kind, o.Text = KindRootfs, "container "+finding.ShortID(id)+"'s rootfs"
	}
	return o, true
}

func volumeKind(v kubeletpath.Volume) Kind {
	if v.SubPath {
		return KindSubPath
	}
	return KindVolume
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// peerGroup is the N of a mount's shared:N, 0 when it is not shared.
func peerGroup(m *procfs.Mount) int {
	for _, f := range strings.Fields(m.Optional) {
		if n, ok := strings.CutPrefix(f, "shared:"); ok {
			if g, err := strconv.Atoi(n); err == nil {
				return g
			}
		}
	}
	return 0
}

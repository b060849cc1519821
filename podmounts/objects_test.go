package podmounts

import (
	"reflect"
	"testing"

	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/procfs"
)

const (
	uid   = "0f3c2a9e-1b2c-4d5e-8f90-123456789abc"
	other = "11111111-2222-4333-8444-555555555555"
	sbx   = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	ctr   = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	gone  = "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc"
)

func mount(major, minor int, root, point, fstype string) *procfs.Mount {
	return procfs.NewMount(0, 0, procfs.MountShape{Major: major, Minor: minor, Root: root, Mountpoint: point, FSType: fstype})
}

// TestFind: the node's volumes, subPath binds, netns, shm and rootfs of
// the pod (not another pod's, not a container the pod does not have), a
// copy only another namespace still has, named by the node's path (once,
// though its directory is still on the disk), and a volume that is a
// directory on disk; each object once, in a fixed order.
func TestFind(t *testing.T) {
	pods := "/var/lib/kubelet/pods/"
	vol := pods + uid + "/volumes/"
	in := Input{
		KubeletRoot: "/var/lib/kubelet/", UID: uid, NodeNS: 1,
		ContainerIDs: []string{sbx, ctr}, NetNS: []string{"net:[4026532571]"},
		Tables: map[uint32][]*procfs.Mount{
			1: {
				{MountShape: &procfs.MountShape{Major: 0, Minor: 40, Root: "/", Mountpoint: vol + "kubernetes.io~projected/kube-api-access-x", FSType: "tmpfs", Optional: "shared:2"}},
				mount(0, 46, "/", vol+"kubernetes.io~empty-dir/data/held", "tmpfs"),
				mount(0, 41, "/", pods+other+"/volumes/kubernetes.io~secret/s", "tmpfs"),
				mount(8, 1, "/lib/kubelet/pods/"+uid+"/volumes/kubernetes.io~configmap/cfg/app.conf", pods+uid+"/volume-subpaths/cfg/app/0", "ext4"),
				mount(0, 4, "net:[4026532571]", "/run/netns/cni-1234", "nsfs"),
				mount(0, 4, "net:[4026532999]", "/run/netns/cni-9999", "nsfs"),
				mount(0, 42, "/", "/run/containerd/io.containerd.grpc.v1.cri/sandboxes/"+sbx+"/shm", "tmpfs"),
				mount(0, 43, "/", "/run/containerd/io.containerd.runtime.v2.task/k8s.io/"+ctr+"/rootfs", "overlay"),
				mount(0, 44, "/", "/run/containerd/io.containerd.runtime.v2.task/k8s.io/"+gone+"/rootfs", "overlay"),
			},
			7: {
				// The node's projected volume again, and a Memory emptyDir
				// the node has unmounted: only this copy is left.
				mount(0, 40, "/", "/host"+vol+"kubernetes.io~projected/kube-api-access-x", "tmpfs"),
				mount(0, 45, "/", "/host"+vol+"kubernetes.io~empty-dir/cache", "tmpfs"),
			},
		},
		// cache's directory stays on the disk (the kubelet could not
		// remove it): the copy on it names it already.
		VolumeDirs: []string{vol + "kubernetes.io~empty-dir/data", vol + "kubernetes.io~projected/kube-api-access-x", vol + "kubernetes.io~empty-dir/cache"},
	}
	got := Find(in)
	want := []Object{
		{Kind: KindVolume, Text: "volume cache (emptyDir)", Path: vol + "kubernetes.io~empty-dir/cache", Dev: event.MakeDev(0, 45), Root: "/"},
		{Kind: KindVolume, Text: "volume data (emptyDir)", Path: vol + "kubernetes.io~empty-dir/data", OnNode: true},
		{Kind: KindVolume, Text: "a mount inside volume data (emptyDir)", Path: vol + "kubernetes.io~empty-dir/data/held", Dev: event.MakeDev(0, 46), Root: "/", OnNode: true, Nested: true},
		{Kind: KindVolume, Text: "volume kube-api-access-x (projected)", Path: vol + "kubernetes.io~projected/kube-api-access-x", Dev: event.MakeDev(0, 40), Root: "/", OnNode: true, PeerGroup: 2},
		{Kind: KindSubPath, Text: "volume cfg (subPath of container app)", Path: pods + uid + "/volume-subpaths/cfg/app/0",
			Dev: event.MakeDev(8, 1), Root: "/lib/kubelet/pods/" + uid + "/volumes/kubernetes.io~configmap/cfg/app.conf", OnNode: true},
		{Kind: KindNetNS, Text: "the sandbox's netns net:[4026532571]", Path: "/run/netns/cni-1234", Dev: event.MakeDev(0, 4), Root: "net:[4026532571]", OnNode: true},
		{Kind: KindShm, Text: "the sandbox's shm (aaaaaaaaaaaa)", Path: "/run/containerd/io.containerd.grpc.v1.cri/sandboxes/" + sbx + "/shm", Dev: event.MakeDev(0, 42), Root: "/", OnNode: true},
		{Kind: KindRootfs, Text: "container bbbbbbbbbbbb's rootfs", Path: "/run/containerd/io.containerd.runtime.v2.task/k8s.io/" + ctr + "/rootfs", Dev: event.MakeDev(0, 43), Root: "/", OnNode: true},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Find:\n%+v\nwant:\n%+v", got, want)
	}
	if got := Find(Input{KubeletRoot: "/var/lib/kubelet", UID: other, NodeNS: 1}); len(got) != 0 {
		t.Errorf("Find with no tables: %+v, want none", got)
	}
}

package k8snode

import (
	"fmt"
	"path"
)

// The pods of the Kubernetes scenarios (issue 15): each builder returns the
// manifest and the node paths the scenario is about. A pod's volume lives
// at KubeletRoot/pods/<uid>/volumes/kubernetes.io~empty-dir/<volume>; the
// uid is known once the pod exists (Node.WaitPodRunning).

// EmptyDirPlugin is the kubelet's directory name for emptyDir volumes.
const EmptyDirPlugin = "kubernetes.io~empty-dir"

// sleepForever ends every pod's script: the container's process sleeps
// until its deletion kills it.
const sleepForever = "exec sleep 100000"

// Workload is a pod whose emptyDir volume a scenario holds or leaks: it
// writes Content into File in the volume (mounted at /data), then sleeps.
type Workload struct {
	Manifest
	Volume  string // the volume's name
	Medium  string // "Memory": a tmpfs the kubelet mounts; "": a directory on the node's disk
	File    string // the file it writes in the volume
	Content string // what the file holds
}

// HostDir is the workload's volume on the node, for the pod's uid.
func (w Workload) HostDir(uid string) string {
	return VolumeDir(uid, EmptyDirPlugin, w.Volume)
}

// VolumeDir is where the kubelet keeps a pod's volume on the node.
func VolumeDir(uid, plugin, volume string) string {
	return path.Join(KubeletRoot, "pods", uid, "volumes", plugin, volume)
}

// MemoryEmptyDirPod is a workload with an emptyDir of medium Memory (a
// tmpfs the kubelet mounts at HostDir and unmounts at the pod's deletion).
func MemoryEmptyDirPod(ns, name string) Workload {
	return workload(ns, name, "Memory")
}

// EmptyDirPod is a workload with a disk emptyDir (a directory the kubelet
// removes at the pod's deletion, with unlinkat/rmdir).
func EmptyDirPod(ns, name string) Workload {
	return workload(ns, name, "")
}

func workload(ns, name, medium string) Workload {
	w := Workload{Volume: "data", Medium: medium, File: "secret", Content: "mntleak-k8slab " + ns + "/" + name}
	w.Manifest = pod(ns, name, fmt.Sprintf("echo '%s' > /data/%s && %s", w.Content, w.File, sleepForever), false,
		[]volumeMount{{Name: w.Volume, MountPath: "/data"}},
		[]volume{{Name: w.Volume, EmptyDir: &emptyDir{Medium: medium}}})
	return w
}

// Mounter is a privileged pod with a Bidirectional hostPath of the kubelet
// root that mounts a tmpfs inside another pod's volume: the mount
// propagates to the node, and that pod's teardown (unlinkat of the
// mount point) fails with EBUSY until it is unmounted.
type Mounter struct {
	Manifest
	HostPath string // the tmpfs's mount point on the node, inside the victim's volume
}

// BidirectionalMounter mounts a tmpfs ("mntleak-held", holding a file
// "held") at <victim volume>/held through the hostPath KubeletRoot at
// /kubelet, mountPropagation Bidirectional. victim is a disk EmptyDirPod.
func BidirectionalMounter(ns, name string, victim Workload, victimUID string) Mounter {
	m := Mounter{HostPath: path.Join(victim.HostDir(victimUID), "held")}
	inPod := path.Join("/kubelet", m.HostPath[len(KubeletRoot):])
	m.Manifest = pod(ns, name,
		fmt.Sprintf("mkdir -p %[1]s && mount -t tmpfs -o size=1m mntleak-held %[1]s && echo held > %[1]s/held && %[2]s", inPod, sleepForever),
		true,
		[]volumeMount{{Name: "kubelet", MountPath: "/kubelet", MountPropagation: "Bidirectional"}},
		[]volume{{Name: "kubelet", HostPath: &hostPath{Path: KubeletRoot, Type: "Directory"}}})
	return m
}

// BidirectionalPod is a privileged pod with the Bidirectional hostPath of
// the kubelet root a Mounter has, that mounts nothing itself (another CSI
// node plugin on the node): its namespace is a peer of the kubelet root's,
// so a mount made there by a Mounter propagates into it too.
func BidirectionalPod(ns, name string) Manifest {
	return pod(ns, name, sleepForever, true,
		[]volumeMount{{Name: "kubelet", MountPath: "/kubelet", MountPropagation: "Bidirectional"}},
		[]volume{{Name: "kubelet", HostPath: &hostPath{Path: KubeletRoot, Type: "Directory"}}})
}

// HostPathPod is a privileged pod with a hostPath of the kubelet root at
// /host/kubelet, mountPropagation None: its mount namespace gets a private
// copy of every mount under the kubelet root that exists when it starts.
type HostPathPod struct {
	Manifest
	PinDir  string // "" or the node path of the directory its process keeps as its cwd
	PinFile string // "" or the node path of the file its process keeps open (fd 3)
}

// KubeletHostPathPod is a HostPathPod whose process only sleeps (at /).
func KubeletHostPathPod(ns, name string) HostPathPod {
	return hostPathPod(ns, name, "", "")
}

// Pinner is a HostPathPod, started after victim, whose process keeps its
// cwd in victim's volume and victim's File open, through its own copy of
// the volume (a Memory emptyDir's tmpfs, copied when the pod started).
func Pinner(ns, name string, victim Workload, victimUID string) HostPathPod {
	dir := victim.HostDir(victimUID)
	return hostPathPod(ns, name, dir, path.Join(dir, victim.File))
}

func hostPathPod(ns, name, pinDir, pinFile string) HostPathPod {
	script := sleepForever
	if pinDir != "" {
		in := func(p string) string { return path.Join("/host/kubelet", p[len(KubeletRoot):]) }
		script = fmt.Sprintf("cd %s && exec 3<%s && %s", in(pinDir), in(pinFile), sleepForever)
	}
	return HostPathPod{
		PinDir: pinDir, PinFile: pinFile,
		Manifest: pod(ns, name, script, true,
			[]volumeMount{{Name: "kubelet", MountPath: "/host/kubelet", MountPropagation: "None"}},
			[]volume{{Name: "kubelet", HostPath: &hostPath{Path: KubeletRoot, Type: "Directory"}}}),
	}
}

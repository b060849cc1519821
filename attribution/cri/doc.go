// Package cri is the attribution Source that asks a CRI runtime
// (containerd, CRI-O) over its unix socket with k8s.io/cri-api:
// ContainerStatus for a container id (its metadata name, image and the
// kubelet's io.kubernetes.* labels), PodSandboxStatus when the id is a
// pod's sandbox (the pause container's cgroup names the sandbox), and
// ListPodSandbox filtered by the io.kubernetes.pod.uid label for a pod
// UID.
//
// The socket is found at the first call, not at start (the runtime may
// start after mntleak): the first of the candidate paths that exists.
// With none there, every call says attribution.ErrUnavailable.
//
// Files: cri.go (Source), pods.go (PodUID: a pod sandbox's UID by namespace and name).
package cri

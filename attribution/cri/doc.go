// Package cri is the attribution Source that asks a CRI runtime
// (containerd, CRI-O) over its unix socket: ContainerStatus for a
// container id (its metadata name, image and the kubelet's io.kubernetes.*
// labels), PodSandboxStatus when the id is a pod's sandbox (the pause
// container's cgroup names the sandbox), ListPodSandbox filtered by the
// io.kubernetes.pod.uid label for a pod UID, and ListContainers for a
// pod's containers.
//
// The calls are gRPC's wire protocol spoken by net/http (HTTP/2 without
// TLS on the socket) and their messages encoded and decoded field by
// field with protowire: the four calls need none of grpc-go or the
// generated cri-api types, which were 8 MB of the daemon's binary and a
// fifth of its resident memory. The tests serve the calls with grpc-go
// and the generated types, and check the field numbers against them.
//
// The socket is found at the first call, not at start (the runtime may
// start after mntleak): the first of the candidate paths that exists.
// With none there, every call says attribution.ErrUnavailable.
//
// Files:
//   - cri.go: Source, Container, Pod, the calls' errors.
//   - pods.go: PodUID (a pod sandbox's UID by namespace and name),
//     PodContainers.
//   - wire.go: a unary gRPC call over HTTP/2 on the socket, its status.
//   - messages.go: the calls' messages, encoded and decoded.
package cri

// Package k8snode is a real single-node Kubernetes for the test suite, and
// the scenarios of issue 15 reproduced on it: etcd (Debian), kube-apiserver,
// kube-controller-manager, kube-scheduler, kubelet and kubectl v1.37.2
// (built from the k8s.io/kubernetes Go module), Debian's containerd 1.6 with
// its CRI, runc, the CNI bridge plugin, and two local images (a static
// pause, Debian's busybox-static): no registry, everything on loopback.
//
// The scripts (also `make k8s-node`, `make k8s-node-down`, `make
// k8s-events`): build.sh builds the binaries into a scratch module in
// /var/cache/mntleak-k8s/v<version> (a no-op when the cache is current);
// up.sh starts the node (idempotent); down.sh removes every trace of it;
// events.sh prints the Events, the pods and the kubelet's last lines; env.sh
// is where everything lives. Nothing in them can clash with a Docker
// Engine: containerd's socket and state are under /run/mntleak-k8s, its
// root under /var/lib/mntleak-k8s; the kubelet root is /var/lib/kubelet.
//
// The harness: a package's TestMain calls Main (it takes the node's lock,
// so two test binaries never share a node, builds outside the tests'
// timeout, and brings the node down after the tests if they brought it up);
// a test calls Up, which skips without root or BTF (fails under
// MNTLEAK_REQUIRE_BPF=1) and returns the Node to drive with Kubectl, Apply,
// WaitPodRunning, DeletePod (whether .metadata.deletionTimestamp stays),
// ContainerPID, ImportImage, KubeletLog and Events. The scenario builders
// (MemoryEmptyDirPod, EmptyDirPod, BidirectionalMounter, BidirectionalPod,
// Pinner, KubeletHostPathPod, DaemonSet) return the manifest and the node paths that
// matter; MountsUnder, MountsNaming and FDMountID read what the kernel shows.
//
// Settings this machine needs (each cost a failed start in the reference
// recipe, ../shared/lab/k8s): cgroup v1 and no systemd (KubeletConfiguration
// failCgroupV1: false, cgroupDriver: cgroupfs); root without
// CAP_SYS_RESOURCE (CRI restrict_oom_score_adj, or runc init dies);
// containerd 1.6 has no RuntimeConfig RPC (the kubelet falls back); static
// token auth, Node,RBAC; the staging modules replaced by their v0.37.2.
// No kube-proxy: up.sh routes the service range (only) from the pods to
// the bridge and DNATs the kubernetes Service (10.96.0.1:443) to the API
// server on 127.0.0.1:6443 (route_localnet on the bridge, which it makes
// before the CNI plugin), so a pod's in-cluster config works (a node
// started by an older up.sh needs down.sh first: containerd reads the CNI
// config once). Every mount but the kubelet's root is private here (no
// systemd): a test that mounts a hostPath HostToContainer must make it a
// shared mount (containerd refuses a private one), as deploy/incluster does.
// The API server records no Event for a volume teardown that fails with
// EBUSY: only the kubelet's log has it.
//
// Measured here (2 cores shared with four other agents' builds and tests):
// first build 1002 s (kube-apiserver 618 s, controller-manager 231 s,
// kubectl 87 s, kubelet 30 s, scheduler 15 s; 5 min on idle cores per the
// reference recipe; 449 MB of binaries), a current cache 0.01 s; up.sh from
// nothing to a Ready node with its default ServiceAccount 10-12 s; down.sh
// 2.6 s without pods, 6 s with two; RSS etcd 47 + apiserver 284 +
// controller-manager 121 + scheduler 71 + containerd 52 + kubelet 89 MiB.
// go test -race ./e2e/k8snode: 98 s in all (node up 10.7 s, down 3.4 s):
// TestControls 22.8 s (three cases of five pods), TestDownUp 19 s,
// TestPinnedMemoryEmptyDir 16.1 s, TestBidirectionalStuckPod 14.9 s,
// TestControllers 5.2 s, TestImportImage 4.9 s. The e2e/docker tests (their
// own dockerd and containerd) pass with the node up.
//
// Files: node.go (Main, Up, Down, the fixed paths), kubectl.go (Node's
// methods), manifest.go (Manifest, the API subset, DaemonSet), scenarios.go
// (the scenario builders), mounts.go (mount tables, fdinfo), token.go
// (TokenKubeconfig: a ServiceAccount's kubeconfig); build.sh,
// images.sh, up.sh, down.sh, events.sh, env.sh; _crimini/ (the CRI client
// down.sh uses, built by build.sh: the mntleak module ignores it);
// testdata/ (the builders' golden manifests).
package k8snode

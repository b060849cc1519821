// Package incluster installs the Helm chart on the real single-node
// Kubernetes of the test suite (e2e/k8snode) and checks that the DaemonSet's
// pod reports a leak reproduced on the node, the way a cluster runs it:
// the image built here (deploy/image/image.sh tar) imported into the
// node's containerd, `helm install` with the real helm CLI against the
// node's API server, the pod made by the DaemonSet controller and placed
// by the scheduler, the Kubernetes Events posted with the pod's own
// ServiceAccount token (the in-cluster config, through the kubernetes
// Service) under the chart's RBAC, the findings sent to a journald of the
// test's own through the chart's journal socket. The leak's finding is
// the only one about the pods, whole (e2e/findingset), and agrees with the
// oracle (e2e/oraclecheck), read on the node's kernel the pod traces. It
// holds tests only.
//
// TestPluginOnTheNode (issue 29) runs `mntleak why pod` on the node
// without a daemon, installs the chart with its defaults (Events on) and
// drives the kubectl plugin (cmd/kubectl-mntleak) against its pod: why for
// a pod stuck Terminating by another pod's Bidirectional mount (by name
// and by UID and node), for a healthy pod, release's dry run and --apply
// (which detaches nothing of a mount its maker still has; the node's
// unmount then ends the stuck pod), audit --all-nodes, and each error's
// one line; release --apply run in the DaemonSet's pod detaches a
// leaked copy of the node's; and `kubectl mntleak release pod/NAME
// --apply` detaches a pod's leaked copy by the pod's name (a private
// holder's copy of its Memory emptyDir, which the kernel does not detach
// because an immutable file in the volume's directory under the tmpfs
// makes the kubelet's removal fail), checked against the holder's
// mountinfo and the oracle (nothing holds the tmpfs after); its dry run
// also as --format json (one document, the plan's record in it), and no
// release prints an action record among its human lines. Other tests
// share the machine:
// an object held only by namespaces no pod runs in (checked against the
// kernel) is another test's, logged and not counted.
//
// Files: main_test.go (TestMain: k8snode.Main), chart_test.go
// (TestChartInstalledOnTheNode), lab_test.go (the image, helm, the pod's
// log, Events and metrics read back), plugin_test.go
// (TestPluginOnTheNode), plugin_release_test.go (release --apply through
// the plugin and in the DaemonSet's pod, checked against the kernel),
// plugin_lab_test.go (the binaries built and run,
// the chart installed with its defaults, a kubeconfig that may not exec,
// the why pod answers read and split from other tests').
package incluster

// Package deploy holds mntleak's deployment files and the tests that check
// the properties they must keep (mntleak must never hold a mount itself):
//
//   - systemd/mntleak.service: the unit, in the host's mount namespace;
//   - helm/mntleak/: the Helm chart (values: image, scheduling, journald,
//     state dir, metrics with Service/ServiceMonitor/PodMonitor, pprof,
//     Kubernetes Events with their RBAC, extra args); helm/helm.sh builds
//     the real helm CLI into a cache outside go.mod and lints and renders
//     the chart;
//   - kubernetes/daemonset.yaml: the chart rendered with its defaults
//     (make manifest), never edited by hand;
//   - image/image.sh: make image and make image-tar (the Dockerfile is at
//     the repository's top);
//   - node-problem-detector/: the system-log monitor that turns mntleak's
//     journal findings into a MountLeak node condition and events;
//   - krew/mntleak.yaml: the krew plugin manifest of kubectl-mntleak
//     (cmd/kubectl-mntleak).
//
// Files: deploy_test.go (the unit, the shipped DaemonSet, the Vagrantfile),
// chart_test.go (helm lint, the manifest equals the chart, the values),
// engine_test.go (a Docker Engine and a containerd of the test's own),
// krew_test.go (the plugin manifest), npd_test.go (the monitor's patterns on the goldens' finding lines),
// image_privileged_test.go (the image built, loaded by docker and ctr,
// run as the DaemonSet runs it against a leak made on the host and a
// device held by a namespace no process runs in). The chart installed
// with helm on the real node of e2e/k8snode is the subpackage incluster.
package deploy

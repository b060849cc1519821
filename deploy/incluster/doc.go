// Package incluster installs the Helm chart on the real single-node
// Kubernetes of the test suite (k8slab) and checks that the DaemonSet's
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
// Files: main_test.go (TestMain: k8slab.Main), chart_test.go
// (TestChartInstalledOnTheNode), lab_test.go (the image, helm, the pod's
// log, Events and metrics read back).
package incluster

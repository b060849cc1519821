// Package k8s runs the real mntleak daemon against a real single-node
// Kubernetes (e2e/k8snode) and checks what it says about the pod scenarios of
// issue 15: each finding's pod fields (the stuck pod and its volume, the
// holder pod and container, the holder's pid and role), cause, leaking
// event and fix, the same fields in the journal (a journald of the test's
// own), and the Event read back from the API server with client-go; the
// findings about a scenario's pods are exactly those it must make, each
// whole (e2e/findingset), and each agrees with the oracle
// (e2e/oraclecheck). The daemon runs as a ServiceAccount with only the RBAC the README gives
// (testdata/rbac.yaml), so a missing verb fails the tests. It holds tests
// only; TestMain is k8snode.Main (the node's lock, up once, down after).
//
// The scenarios: TestBidirectional (a Bidirectional tmpfs mount inside
// another pod's volume leaves that pod stuck in deletion; also beside a
// second Bidirectional pod the mount reaches), TestDeletedMounterNamedByItsPod
// (issue 29: the Bidirectional pod that made the mount is deleted before
// the other pod's teardown fails, and is named by its pod all the same),
// TestPinnedMemoryEmptyDir (a
// hostPath /var/lib/kubelet pod pins a Memory emptyDir's detached copy;
// and without the pin, nothing), TestControls (pod churn alone, beside a
// slave-namespace host process, beside a hostPath /var/lib/kubelet pod:
// no finding about the pods, no Event), TestReleaseRefusesAPodVolume
// (issue 26: `mntleak release --apply --force` aimed at a running pod's
// emptyDir by every form that applies is refused; the pod, its /data mount
// and its data are unchanged). go test -update rewrites their
// blocks of docs/incidents.md ("Kubernetes") from the run; TestDocs checks
// every block is there and filled.
//
// Measured here (2 cores shared with four other agents): the package from
// no node 309 s (node up 10.2 s, down 11.8 s, the race-built daemon
// included): TestBidirectional 75 s (two cases), TestControls 92 s (three
// cases of five pods), TestPinnedMemoryEmptyDir 60 s (two cases); each
// case's namespaces are deleted and waited for (5.5 s).
//
// Files: harness_test.go (setup: namespaces, the ServiceAccount's
// kubeconfig, the daemon and its journal; the findings, journal and
// Events read back), bidirectional_test.go, gonemounter_test.go (the
// Bidirectional pod that made the mount deleted before the failure: named
// by its pod all the same), pinned_test.go,
// controls_test.go (the scenarios), release_test.go (release refuses a
// pod's volume), docs_test.go (the document's blocks),
// main_test.go; testdata/rbac.yaml.
package k8s

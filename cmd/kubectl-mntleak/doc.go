// Command kubectl-mntleak is the kubectl plugin (`kubectl mntleak ...`,
// deploy/krew/mntleak.yaml): from a pod's name to mntleak's answer on the
// pod's node, through the API server alone — no new server, no new port.
//
//	kubectl mntleak why pod/NAME [-n NS]        what holds the pod's mounts
//	kubectl mntleak audit --node N | --all-nodes
//	kubectl mntleak release pod/NAME [--apply]  detach the leaked copies
//
// It gets the pod (a pod stuck Terminating still has its node), finds the
// chart's DaemonSet pod on that node by its labels
// (app.kubernetes.io/name=mntleak), asks the API server whether the user
// may exec into it (a SelfSubjectAccessReview, so a refusal names the verb
// and the resource), and runs `/mntleak why pod --pod-uid UID ...` there
// through the exec subresource (client-go remotecommand: WebSocket, SPDY
// when the server cannot upgrade), with the daemon's own --kubelet-root,
// --cri-socket and --state-dir. release runs, for each held object whose
// finding carries a release command, that command there (/mntleak release
// --mntns N --mount-id M, --apply when asked) with the daemon's
// --state-dir and --journald-socket (the ledger that proves a leak); the
// copy's lock is in the node's /run/mntleak/release, which the chart
// mounts. The user's kubeconfig and RBAC are used: get and list pods,
// create pods/exec, list nodes for --all-nodes.
//
// Output, as `mntleak why pod`'s: human lines by default, one JSON
// document with --format json (--json). release's human form is each
// object with its command, then the release's plan or result; the action
// records `mntleak release` writes on stderr are in the JSON document
// only (the node keeps them too: its journal and the daemon's state dir).
//
// Exit codes: the node's (0 nothing holds, 1 held or leaked, 3 nothing
// found but the node could not be seen); 2 bad input; 4 the cluster could
// not be asked (no such pod, no mntleak pod on the node, RBAC refused).
//
// Files: main.go (commands, flags, the output format, the kubeconfig),
// why.go (why; the pod, its node, the daemon's pod), release.go (release:
// the node's releases, their human lines or records), audit.go (one block
// per node, bounded parallelism), cluster.go (what is asked of the API server,
// its errors as one line), exec.go (the exec subresource).
package main

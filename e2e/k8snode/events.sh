#!/bin/bash
# events.sh — for debugging a test on the node: every Event (oldest first), the pods and, with -l, the
# tail of the kubelet's log.
source "$(dirname "$(readlink -f "$0")")/env.sh"
alive kube-apiserver || { echo "k8s-node: not up" >&2; exit 1; }
kubectl get events -A --sort-by=.metadata.creationTimestamp -o wide
echo; kubectl get pods -A -o wide
[ "${1:-}" = -l ] && { echo; tail -n 50 "$LOG/kubelet.log"; }
exit 0

// Package kubeapi is the attribution Source that asks the API server about
// the pods on this node (GET pods with fieldSelector spec.nodeName=NODE):
// a pod by its UID, and a container by the id its status reports
// (containerStatuses[].containerID "containerd://<id>"), so that a node
// whose runtime socket mntleak cannot reach still names pods. One list
// answers the lookups of the next two seconds (a finding's three
// processes make one request, not three).
//
// Files: kubeapi.go (Source).
package kubeapi

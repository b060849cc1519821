// Package docker is the attribution Source that asks a Docker Engine over
// its unix socket, with net/http and no Docker client module: GET
// /containers/{id}/json gives a container's name, image and labels (a pod
// run through dockershim or cri-dockerd carries the io.kubernetes.*
// labels), and GET /containers/json filtered by the io.kubernetes.pod.uid
// label finds a pod's containers by its UID.
//
// A socket that is not there (or that nothing listens on) makes every call
// say attribution.ErrUnavailable: Docker is optional on a node.
//
// Files: docker.go (Source). It is tested against a real Engine by
// cmd/mntleak's TestNamedDockerContainer (testdata/named-container.sh).
package docker

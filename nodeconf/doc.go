// Package nodeconf reads what the node's container runtimes and kubelet
// are configured with, as far as mount leaks go, from the node's files
// (through a nodeview.View, so `mntleak audit` in a pod reads the node's,
// not the pod's): Docker's data root and live-restore
// (/etc/docker/daemon.json), containerd's root (/etc/containerd/
// config.toml), the kubelet's root directory (its --root-dir flag), and
// the systemd units of docker, containerd, cri-o and the kubelet with a
// setting that gives the service a mount namespace of its own.
//
// A file that does not exist is the default; one that exists but cannot
// be read or parsed is named in Config.Problems, never skipped silently.
//
// Files: config.go (Read, Config), units.go (the unit files and their
// namespace settings).
package nodeconf

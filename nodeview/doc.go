// Package nodeview is where `mntleak why` and `mntleak audit` see the
// node's files from: the node's own mount namespace when they run on the
// node, or, inside a container with hostPID (`kubectl exec` into the
// DaemonSet's pod), the node's init's root through /proc/1/root (kthreadd's,
// /proc/2/root, where init is protected even from root), looked up
// with openat2(RESOLVE_IN_ROOT) so that absolute symbolic links and ".."
// stay in the node's tree and the node's mounts are crossed. Without
// hostPID, /proc/1 is the container's own init and node paths cannot be
// seen: the view says so.
//
// A process that only has a mount namespace of its own on the node (an
// `unshare -m` or `nsenter -m` shell, a unit with PrivateTmp=) still has
// the node's root filesystem as its root: it keeps its own view, as it
// asks about the paths it sees. A container has a root of its own.
//
// Files: view.go (Detect, View, its one-line description), files.go
// (Stat, ReadFile, ReadDir in the view).
package nodeview

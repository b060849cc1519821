// Package podmounts finds what the kubelet and the container runtime keep
// on a node for one pod, by its UID: each volume under <kubelet
// root>/pods/UID/volumes, the subPath binds (volume-subpaths), the
// sandbox's network namespace (the nsfs bind its processes' netns is) and
// shm, and the containers' root filesystems; from the node's mount table,
// every other namespace's (a copy that outlived the node's mount names
// the pod too) and the pod's directory on disk. `mntleak why pod` asks the
// correlator about each.
//
// Files:
//   - objects.go: Object, Input, Find (pure: mount tables in, objects out).
//   - gather.go: Gather, the Input read from the live node (/proc and the
//     view of the node's files).
package podmounts

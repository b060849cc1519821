// Package kubeletpath reads what a path under the kubelet's root directory
// says: which pod it belongs to, and which of the pod's volumes (its name
// and type) it is. It is pure string work: nothing is read from disk, so a
// replay reaches the same answer as the live daemon.
//
// A pod's files live at <root>/pods/<uid>/: its volumes at
// volumes/<plugin>/<name> (the plugin's name escaped with "~":
// kubernetes.io~secret), the bind mounts of subPath volumes at
// volume-subpaths/<name>/<container>/<index>, block volumes at
// volumeDevices/<plugin>/<name>.
//
// Files:
//   - path.go: Volume, Parse (a path under a known root) and Find (a path
//     where a pods/<uid>/ directory shows further down, as the copy of a
//     volume seen through a hostPath does: /host/var/lib/kubelet/pods/...).
//   - uid.go: IsPodUID.
package kubeletpath

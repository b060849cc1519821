// Package kmount reads mount tables and mount namespaces from the kernel
// itself, by id, with no process to read them through: listmount and
// statmount by namespace id (Linux 6.8+; another namespace's 6.11+),
// NS_GET_MNTNS_ID, and the walk over every mount namespace
// NS_MNT_GET_NEXT/PREV gives (6.12+); and fanotify's mount-namespace
// marks (6.15+), which report each mount attached to or detached from a
// namespace by its unique id the moment it happens, also a copy a host's
// rmdir detaches. Older kernels answer ENOTTY, EINVAL or ENOSYS; callers
// fall back to /proc.
//
// Files:
//   - kmount.go: Mount, NSID, List (listmount), Stat (statmount), Table.
//   - decode.go: Decode, struct statmount with length checks.
//   - walk.go: Namespace, Namespaces (the NS_MNT_GET_NEXT/PREV walk).
//   - watch.go: Watch (a FAN_REPORT_MNT group, FAN_MARK_MNTNS marks),
//     MountEvent, DecodeEvents with length checks.
package kmount

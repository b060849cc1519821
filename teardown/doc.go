// Package teardown names the block device a failing teardown call was
// about. Block devices are torn down through control files, not through
// the device: `rbd unmap` writes the device id to
// /sys/bus/rbd/remove_single_major, zram's hot_remove takes the id and its
// reset sits under the device's sysfs directory, `dmsetup remove` is an
// ioctl on /dev/mapper/control carrying the device's name. When the device
// is still mounted somewhere the call fails with EBUSY, and the path the
// kernel reports is the control file. The tracer captures the call's
// payload (the bytes written, the struct dm_ioctl); this package maps it,
// through one table of interfaces, to the device, so the failure is
// explained like any busy device.
//
// Resolve reads sysfs, so it runs when the event arrives (the device may be
// gone by the time a recording is replayed); its answer is stored in the
// event. Sysfs is reached through an fs.FS, so tests use a fake tree.
//
// Do not use it for devices torn down through their own node (an
// exclusive open of /dev/loop3 already names the device).
//
// Files:
//   - teardown.go: Resolver, the interface table, and the rows' readers.
//   - devicemapper.go: struct dm_ioctl and the device-mapper rows.
package teardown

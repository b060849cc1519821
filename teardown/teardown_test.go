package teardown

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/mntleak/mntleak/event"
)

// sysfs is a fake /sys: two zram disks, rbd 3 (single major), a SCSI
// disk, and two device-mapper devices.
func sysfs() fstest.MapFS {
	f := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	return fstest.MapFS{
		"block/zram1/dev":         f("252:1\n"),
		"block/zram0/dev":         f("252:0\n"),
		"bus/rbd/devices/3/major": f("251\n"),
		"bus/rbd/devices/3/minor": f("48\n"),
		"devices/pci0000:00/0000:00:03.0/host0/target0:0:1/0:0:1:0/block/sdb/dev": f("8:16\n"),
		"block/dm-0/dev":     f("253:0\n"),
		"block/dm-0/dm/name": f("vg-root\n"),
		"block/dm-0/dm/uuid": f("LVM-aaaa\n"),
		"block/dm-1/dev":     f("253:1\n"),
		"block/dm-1/dm/name": f("labdm\n"),
		"block/dm-1/dm/uuid": f("\n"),
	}
}

func write(path, data string) *event.Event {
	return &event.Event{Kind: event.KindFailure, Syscall: "write", Path: path, Payload: []byte(data)}
}

func dmEvent(nr uint32, name, uuid string, dev uint64) *event.Event {
	b := make([]byte, 320)
	binary.NativeEndian.PutUint64(b[dmDevOff:], dev)
	copy(b[dmNameOff:], name)
	copy(b[dmUUIDOff:], uuid)
	return &event.Event{Kind: event.KindFailure, Syscall: "ioctl", Path: "/dev/mapper/control", IoctlCmd: 0xc138fd00 | nr, Payload: b}
}

func TestResolveNames(t *testing.T) {
	tests := []struct {
		name string
		ev   *event.Event
		want event.Teardown
	}{
		{"zram hot_remove", write("/sys/class/zram-control/hot_remove", "1\n"), event.Teardown{Op: "zram hot_remove 1", Device: "/dev/zram1", Dev: event.MakeDev(252, 1)}},
		{"zram reset", write("/sys/devices/virtual/block/zram0/reset", "1"), event.Teardown{Op: "zram reset /dev/zram0", Device: "/dev/zram0", Dev: event.MakeDev(252, 0)}},
		{"rbd unmap (single major)", write("/sys/bus/rbd/remove_single_major", "3"), event.Teardown{Op: "rbd unmap /dev/rbd3", Device: "/dev/rbd3", Dev: event.MakeDev(251, 48)}},
		{"rbd unmap --force", write("/sys/bus/rbd/remove", "3 force\n"), event.Teardown{Op: "rbd unmap /dev/rbd3", Device: "/dev/rbd3", Dev: event.MakeDev(251, 48)}},
		{"scsi delete", write("/sys/devices/pci0000:00/0000:00:03.0/host0/target0:0:1/0:0:1:0/delete", "1"), event.Teardown{Op: "delete SCSI device /dev/sdb", Device: "/dev/sdb", Dev: event.MakeDev(8, 16)}},
		{"dmsetup remove by name", dmEvent(dmDevRemove, "labdm", "", 0), event.Teardown{Op: "dmsetup remove labdm", Device: "/dev/mapper/labdm", Dev: event.MakeDev(253, 1)}},
		{"dmsetup remove by uuid", dmEvent(dmDevRemove, "", "LVM-aaaa", 0), event.Teardown{Op: "dmsetup remove vg-root", Device: "/dev/mapper/vg-root", Dev: event.MakeDev(253, 0)}},
		{"dmsetup remove by dev", dmEvent(dmDevRemove, "", "", 253<<8|1), event.Teardown{Op: "dmsetup remove labdm", Device: "/dev/mapper/labdm", Dev: event.MakeDev(253, 1)}},
		{"dmsetup suspend", dmEvent(dmDevSusp, "vg-root", "", 0), event.Teardown{Op: "dmsetup suspend vg-root", Device: "/dev/mapper/vg-root", Dev: event.MakeDev(253, 0)}},
	}
	r := Resolver{Sys: sysfs()}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := r.Resolve(tt.ev)
			if err != nil || *got != tt.want {
				t.Errorf("Resolve = %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

func TestResolveRefuses(t *testing.T) {
	tests := []struct {
		name    string
		ev      *event.Event
		wantErr string // "" means ErrNotTeardown
	}{
		{"a write to another sysfs file", write("/sys/kernel/mm/transparent_hugepage/enabled", "never"), ""},
		{"no payload", write("/sys/class/zram-control/hot_remove", ""), ""},
		{"another ioctl", &event.Event{Kind: event.KindFailure, Syscall: "ioctl", Path: "/dev/loop0", IoctlCmd: 0x4c01, Payload: []byte{1}}, ""},
		{"dm ioctl that removes nothing", dmEvent(3, "labdm", "", 0), ""},
		{"zram id that is not a number", write("/sys/class/zram-control/hot_remove", "one"), `zram hot_remove /sys/class/zram-control/hot_remove: payload "one" is not a device id`},
		{"zram that does not exist", write("/sys/class/zram-control/hot_remove", "7\n"), "read /sys/block/zram7/dev"},
		{"rbd that does not exist", write("/sys/bus/rbd/remove_single_major", "9"), "read /sys/bus/rbd/devices/9/"},
		{"unknown dm name", dmEvent(dmDevRemove, "nope", "", 0), `no device-mapper device named "nope"`},
		{"short dm_ioctl", &event.Event{Kind: event.KindFailure, Syscall: "ioctl", Path: "/dev/mapper/control", IoctlCmd: 0xc138fd04, Payload: make([]byte, 40)}, "dm_ioctl of 40 bytes"},
	}
	r := Resolver{Sys: sysfs()}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := r.Resolve(tt.ev)
			switch {
			case tt.wantErr == "" && !errors.Is(err, ErrNotTeardown):
				t.Errorf("Resolve = %+v, %v; want ErrNotTeardown", got, err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("Resolve = %+v, %v; want an error with %q", got, err, tt.wantErr)
			}
		})
	}
}

func TestEnrich(t *testing.T) {
	r := Resolver{Sys: sysfs()}
	ev := write("/sys/class/zram-control/hot_remove", "1\n")
	if err := r.Enrich(ev); err != nil || ev.Teardown == nil || ev.Teardown.Device != "/dev/zram1" {
		t.Errorf("Enrich = %v, teardown %+v", err, ev.Teardown)
	}
	other := write("/sys/kernel/mm/transparent_hugepage/enabled", "never")
	if err := r.Enrich(other); err != nil || other.Teardown != nil {
		t.Errorf("Enrich of another write = %v, teardown %+v", err, other.Teardown)
	}
	gone := write("/sys/class/zram-control/hot_remove", "9")
	if err := r.Enrich(gone); err == nil || gone.Teardown != nil {
		t.Errorf("Enrich of a device that is not there = %v, teardown %+v", err, gone.Teardown)
	}
}

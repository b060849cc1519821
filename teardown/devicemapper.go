package teardown

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io/fs"
	"strings"

	"github.com/mntleak/mntleak/event"
)

// struct dm_ioctl (include/uapi/linux/dm-ioctl.h): the fields a removal
// names its device by.
const (
	dmIoctlType = 0xfd
	dmDevRemove = 4 // DM_DEV_REMOVE_CMD
	dmDevSusp   = 6 // DM_DEV_SUSPEND_CMD
	dmDevOff    = 40
	dmNameOff   = 48
	dmNameLen   = 128
	dmUUIDOff   = dmNameOff + dmNameLen
	dmUUIDLen   = 129
)

// dmIoctl matches a device-mapper removal or suspend.
func dmIoctl(ev *event.Event) bool {
	if ev.Syscall != "ioctl" || (ev.IoctlCmd>>8)&0xff != dmIoctlType {
		return false
	}
	nr := ev.IoctlCmd & 0xff
	return nr == dmDevRemove || nr == dmDevSusp
}

// dmTarget is what a dm_ioctl names.
type dmTarget struct {
	dev        event.Dev
	name, uuid string
}

func parseDMIoctl(b []byte) (dmTarget, error) {
	if len(b) < dmUUIDOff+dmUUIDLen {
		return dmTarget{}, fmt.Errorf("dm_ioctl of %d bytes, want %d", len(b), dmUUIDOff+dmUUIDLen)
	}
	cstr := func(b []byte) string {
		if i := bytes.IndexByte(b, 0); i >= 0 {
			b = b[:i]
		}
		return string(b)
	}
	// The kernel's huge_encode_dev: minor's low byte, major, minor's rest.
	raw := binary.NativeEndian.Uint64(b[dmDevOff:])
	major, minor := uint32(raw>>8)&0xfff, uint32(raw&0xff)|uint32(raw>>12)&^0xff
	t := dmTarget{name: cstr(b[dmNameOff : dmNameOff+dmNameLen]), uuid: cstr(b[dmUUIDOff : dmUUIDOff+dmUUIDLen])}
	if raw != 0 {
		t.dev = event.MakeDev(major, minor)
	}
	return t, nil
}

func dmResolve(r Resolver, ev *event.Event) (*event.Teardown, error) {
	t, err := parseDMIoctl(ev.Payload)
	if err != nil {
		return nil, err
	}
	verb := "dmsetup remove "
	if ev.IoctlCmd&0xff == dmDevSusp {
		verb = "dmsetup suspend "
	}
	blocks, err := fs.ReadDir(r.Sys, "block")
	if err != nil {
		return nil, fmt.Errorf("read /sys/block: %w", err)
	}
	for _, b := range blocks {
		if !strings.HasPrefix(b.Name(), "dm-") {
			continue
		}
		dir := "block/" + b.Name()
		dev, err := r.devOf(dir + "/dev")
		if err != nil {
			continue
		}
		name, _ := fs.ReadFile(r.Sys, dir+"/dm/name")
		uuid, _ := fs.ReadFile(r.Sys, dir+"/dm/uuid")
		n, u := strings.TrimSpace(string(name)), strings.TrimSpace(string(uuid))
		if (t.name != "" && t.name == n) || (t.name == "" && t.uuid != "" && t.uuid == u) || (t.name == "" && t.uuid == "" && t.dev == dev) {
			device := "/dev/" + b.Name()
			if n != "" {
				device = "/dev/mapper/" + n
			}
			return &event.Teardown{Op: verb + firstOf(n, t.uuid, b.Name()), Device: device, Dev: dev}, nil
		}
	}
	return nil, fmt.Errorf("no device-mapper device named %q (uuid %q, dev %s) in /sys/block", t.name, t.uuid, t.dev)
}

func firstOf(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

package teardown

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"

	"github.com/mntleak/mntleak/event"
)

// Resolver maps failing teardown calls to their block devices.
type Resolver struct {
	// Sys is sysfs (os.DirFS("/sys")); paths in it have no /sys prefix.
	Sys fs.FS
}

// iface is one row of the table: which calls it is (a sysfs path pattern
// or an ioctl command), and how the payload maps to a device.
type iface struct {
	name    string
	matches func(ev *event.Event) bool
	resolve func(r Resolver, ev *event.Event) (*event.Teardown, error)
}

// interfaces is the table. Adding nbd, NVMe-oF or iSCSI is one row.
func interfaces() []iface {
	return []iface{
		{"zram hot_remove", sysfsWrite(func(p string) bool { return p == "/sys/class/zram-control/hot_remove" }), zramHotRemove},
		{"rbd unmap", sysfsWrite(func(p string) bool {
			return p == "/sys/bus/rbd/remove" || p == "/sys/bus/rbd/remove_single_major"
		}), rbdRemove},
		{"block reset", sysfsWrite(func(p string) bool { return blockAttr(p, "reset") != "" }), blockReset},
		{"scsi delete", sysfsWrite(func(p string) bool { return path.Base(p) == "delete" && strings.HasPrefix(p, "/sys/devices/") }), scsiDelete},
		{"dmsetup", dmIoctl, dmResolve},
	}
}

// ErrNotTeardown: the call is none of the table's interfaces.
var ErrNotTeardown = errors.New("not a teardown interface")

// Resolve returns the device a failing call tore down, ErrNotTeardown when
// the call is not a teardown interface's, or why the device could not be
// named.
func (r Resolver) Resolve(ev *event.Event) (*event.Teardown, error) {
	if ev.Kind != event.KindFailure || len(ev.Payload) == 0 {
		return nil, ErrNotTeardown
	}
	for _, in := range interfaces() {
		if in.matches(ev) {
			td, err := in.resolve(r, ev)
			if err != nil {
				return nil, fmt.Errorf("%s %s: %w", in.name, ev.Path, err)
			}
			return td, nil
		}
	}
	return nil, ErrNotTeardown
}

// Enrich sets ev.Teardown when ev is a failing teardown call whose device
// it can name; the error says why a teardown call's device could not be
// named (nil for any other event).
func (r Resolver) Enrich(ev *event.Event) error {
	if len(ev.Payload) == 0 {
		return nil
	}
	td, err := r.Resolve(ev)
	switch {
	case err == nil:
		ev.Teardown = td
	case errors.Is(err, ErrNotTeardown):
		return nil
	}
	return err
}

// sysfsWrite matches a write to a sysfs file whose path is one of p's.
func sysfsWrite(path func(string) bool) func(*event.Event) bool {
	return func(ev *event.Event) bool {
		return (ev.Syscall == "write" || ev.Syscall == "pwrite64") && path(ev.Path)
	}
}

// blockAttr returns NAME for a path .../block/NAME/ATTR (a block device's
// attribute, as the kernel resolves /sys/block/NAME/ATTR), else "".
func blockAttr(p, attr string) string {
	dir, file := path.Split(p)
	if file != attr {
		return ""
	}
	dir = strings.TrimSuffix(dir, "/")
	name := path.Base(dir)
	if path.Base(path.Dir(dir)) != "block" || name == "" {
		return ""
	}
	return name
}

// written is a sysfs payload as a word: "1\n" -> "1"; "3 force" -> "3".
func written(ev *event.Event) string {
	s := strings.TrimRight(string(ev.Payload), "\x00\n ")
	if i := strings.IndexAny(s, " \n"); i >= 0 {
		s = s[:i]
	}
	return s
}

func number(s string) (string, error) {
	if _, err := strconv.ParseUint(s, 10, 32); err != nil {
		return "", fmt.Errorf("payload %q is not a device id", s)
	}
	return s, nil
}

// devOf reads a sysfs "dev" (or major/minor pair) file.
func (r Resolver) devOf(file string) (event.Dev, error) {
	b, err := fs.ReadFile(r.Sys, file)
	if err != nil {
		return 0, fmt.Errorf("read /sys/%s: %w", file, err)
	}
	d, err := event.ParseDev(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, fmt.Errorf("/sys/%s: %w", file, err)
	}
	return d, nil
}

func zramHotRemove(r Resolver, ev *event.Event) (*event.Teardown, error) {
	id, err := number(written(ev))
	if err != nil {
		return nil, err
	}
	dev, err := r.devOf("block/zram" + id + "/dev")
	if err != nil {
		return nil, err
	}
	return &event.Teardown{Op: "zram hot_remove " + id, Device: "/dev/zram" + id, Dev: dev}, nil
}

func rbdRemove(r Resolver, ev *event.Event) (*event.Teardown, error) {
	id, err := number(written(ev))
	if err != nil {
		return nil, err
	}
	dir := "bus/rbd/devices/" + id + "/"
	major, err1 := fs.ReadFile(r.Sys, dir+"major")
	minor, err2 := fs.ReadFile(r.Sys, dir+"minor")
	if err := errors.Join(err1, err2); err != nil {
		return nil, fmt.Errorf("read /sys/%s: %w", dir, err)
	}
	dev, err := event.ParseDev(strings.TrimSpace(string(major)) + ":" + strings.TrimSpace(string(minor)))
	if err != nil {
		return nil, fmt.Errorf("/sys/%s: %w", dir, err)
	}
	return &event.Teardown{Op: "rbd unmap /dev/rbd" + id, Device: "/dev/rbd" + id, Dev: dev}, nil
}

func blockReset(r Resolver, ev *event.Event) (*event.Teardown, error) {
	name := blockAttr(ev.Path, "reset")
	dev, err := r.devOf("block/" + name + "/dev")
	if err != nil {
		return nil, err
	}
	op := "reset /dev/" + name
	if strings.HasPrefix(name, "zram") {
		op = "zram reset /dev/" + name
	}
	return &event.Teardown{Op: op, Device: "/dev/" + name, Dev: dev}, nil
}

// scsiDelete: echo 1 > /sys/block/sdX/device/delete; the kernel reports
// the SCSI device's directory, whose block/ holds the disk's name.
func scsiDelete(r Resolver, ev *event.Event) (*event.Teardown, error) {
	dir := strings.TrimPrefix(path.Dir(ev.Path), "/sys/") + "/block"
	names, err := fs.ReadDir(r.Sys, dir)
	if err != nil || len(names) == 0 {
		return nil, fmt.Errorf("no block device under /sys/%s: %v", dir, err)
	}
	name := names[0].Name()
	dev, err := r.devOf(dir + "/" + name + "/dev")
	if err != nil {
		return nil, err
	}
	return &event.Teardown{Op: "delete SCSI device /dev/" + name, Device: "/dev/" + name, Dev: dev}, nil
}

package daemon

import (
	"strconv"
	"strings"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/internal/kmount"
)

// The mount attributes and superblock flags statmount reports (uapi
// values), and the words /proc/PID/mountinfo shows for them, in its order.
const (
	mountAttrRdonly   = 0x1
	mountAttrAtime    = 0x70 // the atime field: relatime 0, noatime 0x10, strictatime 0x20
	mountAttrNoatime  = 0x10
	mountAttrRelatime = 0x0
	sbRdonly          = 0x1
)

var (
	mountAttrWords = []struct {
		bit  uint64
		name string
	}{{0x2, "nosuid"}, {0x4, "nodev"}, {0x8, "noexec"}}
	mountAttrLater = []struct {
		bit  uint64
		name string
	}{{0x80, "nodiratime"}}
	sbWords = []struct {
		bit  uint32
		name string
	}{{0x10, "sync"}, {0x80, "dirsync"}, {0x40, "mand"}, {1 << 25, "lazytime"}}
)

// infoOf is m as /proc/PID/mountinfo would show it, but for the source:
// statmount gives it only from 6.13 on, and no rule reads it of a mount
// in a holder's table.
func infoOf(m kmount.Mount) *mountinfo.Info {
	opts := []string{"rw"}
	if m.Attr&mountAttrRdonly != 0 {
		opts[0] = "ro"
	}
	for _, a := range mountAttrWords {
		if m.Attr&a.bit != 0 {
			opts = append(opts, a.name)
		}
	}
	if m.Attr&mountAttrAtime == mountAttrNoatime {
		opts = append(opts, "noatime")
	}
	for _, a := range mountAttrLater {
		if m.Attr&a.bit != 0 {
			opts = append(opts, a.name)
		}
	}
	if m.Attr&mountAttrAtime == mountAttrRelatime {
		opts = append(opts, "relatime")
	}
	vfs := []string{"rw"}
	if m.SBFlags&sbRdonly != 0 {
		vfs[0] = "ro"
	}
	for _, f := range sbWords {
		if m.SBFlags&f.bit != 0 {
			vfs = append(vfs, f.name)
		}
	}
	if m.Opts != "" {
		vfs = append(vfs, m.Opts)
	}
	var optional []string
	if m.Prop&unix.MS_SHARED != 0 {
		optional = append(optional, "shared:"+strconv.FormatUint(m.Peer, 10))
	}
	if m.Prop&unix.MS_SLAVE != 0 {
		optional = append(optional, "master:"+strconv.FormatUint(m.Master, 10))
	}
	if m.Prop&unix.MS_UNBINDABLE != 0 {
		optional = append(optional, "unbindable")
	}
	return &mountinfo.Info{ID: m.OldID, Parent: m.OldParent, Major: int(m.Dev.Major()), Minor: int(m.Dev.Minor()),
		Root: m.Root, Mountpoint: m.Point, Options: strings.Join(opts, ","), Optional: strings.Join(optional, " "),
		FSType: m.FSType, VFSOptions: strings.Join(vfs, ",")}
}

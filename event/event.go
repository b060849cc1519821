package event

import (
	"fmt"
	"strconv"
	"time"
)

// Kind is the kind of an event. The zero value is invalid, as in the BPF
// header, so an all-zero record never decodes.
type Kind uint32

// Kinds, in the order of enum event_kind in bpf/mntleak.h.
const (
	KindInvalid Kind = iota
	KindMount
	KindUmount
	KindUnshare
	KindSetns
	KindNewNSFork
	KindExit
	KindPivotRoot
	KindOpenTree
	KindMoveMount
	KindFsopen
	KindFsmount
	KindMountSetattr
	KindFailure
	// KindLost is synthesized by the reader, never sent by the kernel: events
	// were lost (ring buffer full) since the previous KindLost. Time is when
	// the loss was noticed, LostSince when the previous check found none.
	KindLost
	kindMax
)

var kindNames = [...]string{
	KindInvalid:      "invalid",
	KindMount:        "mount",
	KindUmount:       "umount",
	KindUnshare:      "unshare",
	KindSetns:        "setns",
	KindNewNSFork:    "newns_fork",
	KindExit:         "exit",
	KindPivotRoot:    "pivot_root",
	KindOpenTree:     "open_tree",
	KindMoveMount:    "move_mount",
	KindFsopen:       "fsopen",
	KindFsmount:      "fsmount",
	KindMountSetattr: "mount_setattr",
	KindFailure:      "failure",
	KindLost:         "lost",
}

// Kinds lists every valid kind.
func Kinds() []Kind {
	kinds := make([]Kind, 0, kindMax-1)
	for k := KindMount; k < kindMax; k++ {
		kinds = append(kinds, k)
	}
	return kinds
}

// KernelKinds lists the kinds the BPF programs send (every kind but lost).
func KernelKinds() []Kind {
	kinds := Kinds()
	return kinds[:len(kinds)-1]
}

// FromKernel reports whether the kernel sends events of kind k.
func (k Kind) FromKernel() bool { return k.Valid() && k != KindLost }

// Valid reports whether k is a known, non-zero kind.
func (k Kind) Valid() bool { return k > KindInvalid && k < kindMax }

func (k Kind) String() string {
	if k < kindMax {
		return kindNames[k]
	}
	return "kind(" + strconv.FormatUint(uint64(k), 10) + ")"
}

// MarshalText implements encoding.TextMarshaler.
func (k Kind) MarshalText() ([]byte, error) {
	if !k.Valid() {
		return nil, fmt.Errorf("invalid event kind %d", uint32(k))
	}
	return []byte(k.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (k *Kind) UnmarshalText(b []byte) error {
	kind, err := ParseKind(string(b))
	if err != nil {
		return err
	}
	*k = kind
	return nil
}

// ParseKind returns the kind named s.
func ParseKind(s string) (Kind, error) {
	for k := KindMount; k < kindMax; k++ {
		if kindNames[k] == s {
			return k, nil
		}
	}
	return KindInvalid, fmt.Errorf("unknown event kind %q", s)
}

// Event is one decoded record. The common header comes first; the fields
// after it are set only for the kinds that carry them (see the comments),
// and are omitted from JSON when zero, so a JSON line decodes back into the
// same Event.
type Event struct {
	Kind      Kind      `json:"kind"`
	Time      time.Time `json:"time"`    // wall clock, mapped from MonoNS
	MonoNS    uint64    `json:"mono_ns"` // CLOCK_MONOTONIC, as in the kernel
	PID       uint32    `json:"pid"`     // thread-group id
	TID       uint32    `json:"tid"`
	PPID      uint32    `json:"ppid"`
	UID       uint32    `json:"uid"`
	Comm      string    `json:"comm"`
	MntNS     uint32    `json:"mntns"` // caller's mount namespace inode
	CgroupID  uint64    `json:"cgroup_id"`
	SyscallNr int32     `json:"syscall_nr"` // -1 for fork and exit
	Syscall   string    `json:"syscall,omitempty"`
	Ret       int64     `json:"ret"`
	Errno     string    `json:"errno,omitempty"` // name of -Ret when Ret < 0
	Truncated []string  `json:"truncated,omitempty"`
	// Exe and Cmdline are filled in userspace when the event arrives, for
	// the events a finding may name (failures, namespace creations).
	Exe     string `json:"exe,omitempty"`
	Cmdline string `json:"cmdline,omitempty"`
	// Cgroup is the process's cgroup path (the most telling line of
	// /proc/PID/cgroup), read in userspace when the event arrives, for the
	// events a finding may name as the actor (failures, namespace
	// creations, mount-family calls that worked): it names the container,
	// unit and pod even once the process and its pod are gone.
	Cgroup string `json:"cgroup,omitempty"`

	// mount, umount, unshare, setns (nstype), open_tree, move_mount,
	// fsopen, fsmount, mount_setattr (AT_* flags).
	Flags     uint64 `json:"flags,omitempty"`
	FlagNames string `json:"flag_names,omitempty"`

	FSType string `json:"fstype,omitempty"` // mount, fsopen
	Source string `json:"source,omitempty"` // mount
	Target string `json:"target,omitempty"` // mount, umount
	Data   string `json:"data,omitempty"`   // mount: first bytes of data

	// open_tree, mount_setattr, failure: the object, made absolute.
	Path     string `json:"path,omitempty"`
	FromPath string `json:"from_path,omitempty"` // move_mount
	ToPath   string `json:"to_path,omitempty"`   // move_mount
	NewRoot  string `json:"new_root,omitempty"`  // pivot_root
	PutOld   string `json:"put_old,omitempty"`   // pivot_root

	FD     int32 `json:"fd,omitempty"`      // setns, fsmount (fs_fd), failure (-1: none)
	DirFD  int32 `json:"dirfd,omitempty"`   // open_tree, mount_setattr
	FromFD int32 `json:"from_fd,omitempty"` // move_mount
	ToFD   int32 `json:"to_fd,omitempty"`   // move_mount
	MntID  int32 `json:"mnt_id,omitempty"`  // open_tree, move_mount, fsmount

	// A busy umount2's caller: the mount ids of its cwd and root.
	CwdMntID  int32 `json:"cwd_mnt_id,omitempty"`
	RootMntID int32 `json:"root_mnt_id,omitempty"`

	MntNSBefore uint32 `json:"mntns_before,omitempty"` // unshare, setns
	MntNSAfter  uint32 `json:"mntns_after,omitempty"`  // unshare, setns
	TargetIno   uint32 `json:"target_ino,omitempty"`   // setns: inode behind fd

	ChildPID    uint32 `json:"child_pid,omitempty"`    // newns_fork
	ChildTID    uint32 `json:"child_tid,omitempty"`    // newns_fork
	ParentMntNS uint32 `json:"parent_mntns,omitempty"` // newns_fork
	ChildMntNS  uint32 `json:"child_mntns,omitempty"`  // newns_fork
	// NewMntNSID is the id the kernel gave the namespace an unshare
	// created or a CLONE_NEWNS child was born in (NS_GET_MNTNS_ID, Linux
	// 6.9+), filled in userspace when the event arrives (0: not read): its
	// inode is reused once it is gone, the id never is.
	NewMntNSID uint64 `json:"new_mntns_id,omitempty"`

	ExitCode int32 `json:"exit_code,omitempty"` // exit: raw wait status

	AttrFlags       uint64 `json:"attr_flags,omitempty"`  // fsmount
	AttrSet         uint64 `json:"attr_set,omitempty"`    // mount_setattr
	AttrClr         uint64 `json:"attr_clr,omitempty"`    // mount_setattr
	Propagation     uint64 `json:"propagation,omitempty"` // mount_setattr
	PropagationName string `json:"propagation_name,omitempty"`

	RDev Dev `json:"rdev,omitempty"` // failure: block device behind fd
	Dev  Dev `json:"dev,omitempty"`  // failure: filesystem holding fd

	// A failing teardown call (failure): the ioctl request, and what names
	// the device: the first bytes written to a sysfs file, or a
	// device-mapper ioctl's struct dm_ioctl.
	IoctlCmd uint32 `json:"ioctl_cmd,omitempty"`
	Payload  []byte `json:"payload,omitempty"`
	// Teardown is the device the payload names, resolved in userspace
	// when the event arrives (the device may be gone by a replay).
	Teardown *Teardown `json:"teardown,omitempty"`

	// lost: how many events the kernel could not queue, and since when.
	Lost      uint64    `json:"lost,omitempty"`
	LostSince time.Time `json:"lost_since,omitzero"`
}

// Teardown is the block device a failing teardown call was about, and the
// operation in the words a user typed.
type Teardown struct {
	Op     string `json:"op"`     // "zram hot_remove 1", "rbd unmap /dev/rbd3", "dmsetup remove vg-lv"
	Device string `json:"device"` // "/dev/zram1"
	Dev    Dev    `json:"dev"`    // its device number
}

// Failed reports whether the syscall behind the event returned an error.
func (e *Event) Failed() bool { return e.SyscallNr >= 0 && e.Ret < 0 }

// Dev is a device number in the kernel's internal encoding (MINORBITS = 20),
// as read from dev_t fields inside the kernel. It marshals as "major:minor",
// the form mountinfo uses.
type Dev uint32

// Major returns the major number.
func (d Dev) Major() uint32 { return uint32(d) >> 20 }

// Minor returns the minor number.
func (d Dev) Minor() uint32 { return uint32(d) & (1<<20 - 1) }

// MakeDev builds a Dev from a major and a minor number.
func MakeDev(major, minor uint32) Dev { return Dev(major<<20 | minor&(1<<20-1)) }

func (d Dev) String() string {
	return strconv.FormatUint(uint64(d.Major()), 10) + ":" + strconv.FormatUint(uint64(d.Minor()), 10)
}

// MarshalText implements encoding.TextMarshaler.
func (d Dev) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (d *Dev) UnmarshalText(b []byte) error {
	dev, err := ParseDev(string(b))
	if err != nil {
		return err
	}
	*d = dev
	return nil
}

// ParseDev parses "major:minor".
func ParseDev(s string) (Dev, error) {
	for i := 0; i < len(s); i++ {
		if s[i] != ':' {
			continue
		}
		major, err1 := strconv.ParseUint(s[:i], 10, 12)
		minor, err2 := strconv.ParseUint(s[i+1:], 10, 20)
		if err1 != nil || err2 != nil {
			break
		}
		return MakeDev(uint32(major), uint32(minor)), nil
	}
	return 0, fmt.Errorf("invalid device number %q: want major:minor", s)
}

package kmount

import (
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/event"
)

// The kernel's mount interfaces (Linux 6.8+; by namespace id 6.11+): the
// numbers from the uapi headers, which Debian 12's lack.
const (
	sysStatmount = 457
	sysListmount = 458
	// nsGetMntNSID is NS_GET_MNTNS_ID, _IOR(0xb7, 5, __u64).
	nsGetMntNSID = 2<<30 | 8<<16 | 0xb7<<8 | 0x5
	// lsmtRoot is LSMT_ROOT: list from the namespace's root.
	lsmtRoot = ^uint64(0)
	// mntIDReqSize is sizeof(struct mnt_id_req), MNT_ID_REQ_SIZE_VER1.
	mntIDReqSize = 32
	// statmountHeader is sizeof(struct statmount) before its strings.
	statmountHeader = 512

	statmountSBBasic       = 0x1
	statmountMntBasic      = 0x2
	statmountPropagateFrom = 0x4
	statmountMntRoot       = 0x8
	statmountMntPoint      = 0x10
	statmountFSType        = 0x20
	statmountMntNSID       = 0x40
	statmountMntOpts       = 0x80
	statmountFSSubtype     = 0x100 // 6.14+, as sb_source
	statmountSBSource      = 0x200
	statmountAll           = statmountSBBasic | statmountMntBasic | statmountPropagateFrom | statmountMntRoot |
		statmountMntPoint | statmountFSType | statmountMntNSID | statmountMntOpts | statmountFSSubtype | statmountSBSource
)

// Mount is one mount as statmount describes it: identities the kernel
// never reuses (ID, Parent, NS) beside the ones it does (OldID, the id
// /proc/PID/mountinfo shows).
type Mount struct {
	ID        uint64    `json:"unique_id"` // STATX_MNT_ID_UNIQUE: never reused while the machine runs
	OldID     int       `json:"mount_id"`  // the mountinfo id: reused at once
	Parent    uint64    `json:"parent_unique_id"`
	OldParent int       `json:"-"`        // the mountinfo parent id
	NS        uint64    `json:"mntns_id"` // NS_GET_MNTNS_ID of its namespace
	Dev       event.Dev `json:"dev"`      // the superblock's device
	Point     string    `json:"mount_point"`
	Root      string    `json:"root"` // within its filesystem
	FSType    string    `json:"fstype"`
	Subtype   string    `json:"subtype,omitempty"` // fuse.sshfs's sshfs
	Source    string    `json:"source,omitempty"`  // the superblock's source, mountinfo's field 10
	// HasSource says the kernel filled Source, and so Subtype if it has one
	// (Linux 6.14+; an empty string sets no bit in the mask):
	// without them the mount cannot stand for a mountinfo line.
	HasSource bool   `json:"-"`
	Opts      string `json:"options,omitempty"`
	SBFlags   uint32 `json:"-"`
	Attr      uint64 `json:"-"`
	Prop      uint64 `json:"-"` // MS_SHARED, MS_SLAVE, MS_PRIVATE, MS_UNBINDABLE
	Peer      uint64 `json:"peer_group,omitempty"`
	Master    uint64 `json:"master,omitempty"`
	PropFrom  uint64 `json:"-"`
}

// NSID is the birth id of the mount namespace whose nsfs file fd is.
func NSID(fd int) (uint64, error) {
	var id uint64
	if _, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), nsGetMntNSID, uintptr(unsafe.Pointer(&id))); errno != 0 {
		return 0, fmt.Errorf("NS_GET_MNTNS_ID: %w", errno)
	}
	return id, nil
}

// mntIDReq is struct mnt_id_req (VER1).
func mntIDReq(id, param, ns uint64) []byte {
	b := make([]byte, mntIDReqSize)
	binary.NativeEndian.PutUint32(b[0:], mntIDReqSize)
	binary.NativeEndian.PutUint64(b[8:], id)
	binary.NativeEndian.PutUint64(b[16:], param)
	binary.NativeEndian.PutUint64(b[24:], ns)
	return b
}

// List is the unique id of every mount of namespace ns, in increasing
// order (the order the kernel gives them out).
func List(ns uint64) ([]uint64, error) {
	var all []uint64
	last := uint64(0)
	buf := make([]uint64, 512)
	for {
		req := mntIDReq(lsmtRoot, last, ns)
		n, _, errno := unix.Syscall6(sysListmount, uintptr(unsafe.Pointer(&req[0])), uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)), 0, 0, 0)
		runtime.KeepAlive(req)
		if errno != 0 {
			return nil, fmt.Errorf("listmount of mntns id %d: %w", ns, errno)
		}
		all = append(all, buf[:n]...)
		if int(n) < len(buf) {
			return all, nil
		}
		last = buf[n-1]
	}
}

// Stat describes mount id of namespace ns; buf is reused between calls
// (nil: one is made) and returned, grown when a mount's strings did not fit.
// A mount no longer there (or in another namespace) is unix.ENOENT itself.
func Stat(ns, id uint64, buf []byte) (Mount, []byte, error) {
	if len(buf) < 4096 {
		buf = make([]byte, 4096)
	}
	for {
		req := mntIDReq(id, statmountAll, ns)
		_, _, errno := unix.Syscall6(sysStatmount, uintptr(unsafe.Pointer(&req[0])), uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)), 0, 0, 0)
		runtime.KeepAlive(req)
		if errors.Is(errno, unix.EOVERFLOW) && len(buf) < 1<<20 {
			buf = make([]byte, 4*len(buf))
			continue
		}
		if errno == unix.ENOENT {
			return Mount{}, buf, unix.ENOENT // gone: callers skip it, and build no message
		}
		if errno != 0 {
			return Mount{}, buf, fmt.Errorf("statmount of mount %d in mntns id %d: %w", id, ns, errno)
		}
		m, err := Decode(buf)
		return m, buf, err
	}
}

// Table is every mount of namespace ns, in unique-id order; a mount
// unmounted between the list and its statmount is left out.
func Table(ns uint64) ([]Mount, error) {
	ids, err := List(ns)
	if err != nil {
		return nil, err
	}
	out := make([]Mount, 0, len(ids))
	var buf []byte
	for _, id := range ids {
		var m Mount
		m, buf, err = Stat(ns, id, buf)
		if errors.Is(err, unix.ENOENT) {
			continue // unmounted meanwhile
		}
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

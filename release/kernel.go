package release

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
	statmountAll           = statmountSBBasic | statmountMntBasic | statmountPropagateFrom | statmountMntRoot |
		statmountMntPoint | statmountFSType | statmountMntNSID | statmountMntOpts
)

// Mount is one mount as statmount describes it: identities the kernel
// never reuses (ID, Parent, NS) beside the ones it does (OldID, the id
// /proc/PID/mountinfo shows).
type Mount struct {
	ID       uint64    `json:"unique_id"` // STATX_MNT_ID_UNIQUE: never reused while the machine runs
	OldID    int       `json:"mount_id"`  // the mountinfo id: reused at once
	Parent   uint64    `json:"parent_unique_id"`
	NS       uint64    `json:"mntns_id"` // NS_GET_MNTNS_ID of its namespace
	Dev      event.Dev `json:"dev"`      // the superblock's device
	Point    string    `json:"mount_point"`
	Root     string    `json:"root"` // within its filesystem
	FSType   string    `json:"fstype"`
	Opts     string    `json:"options,omitempty"`
	SBFlags  uint32    `json:"-"`
	Attr     uint64    `json:"-"`
	Prop     uint64    `json:"-"` // MS_SHARED, MS_SLAVE, MS_PRIVATE, MS_UNBINDABLE
	Peer     uint64    `json:"peer_group,omitempty"`
	Master   uint64    `json:"master,omitempty"`
	PropFrom uint64    `json:"-"`
}

// nsIDOf is the birth id of the mount namespace whose nsfs file fd is.
func nsIDOf(fd int) (uint64, error) {
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

// listMounts is the unique id of every mount of namespace ns, in
// increasing order (the order the kernel gives them out).
func listMounts(ns uint64) ([]uint64, error) {
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

// statMount describes mount id of namespace ns.
func statMount(ns, id uint64) (Mount, error) {
	size := 4096
	for {
		buf := make([]byte, size)
		req := mntIDReq(id, statmountAll, ns)
		_, _, errno := unix.Syscall6(sysStatmount, uintptr(unsafe.Pointer(&req[0])), uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)), 0, 0, 0)
		runtime.KeepAlive(req)
		if errors.Is(errno, unix.EOVERFLOW) && size < 1<<20 {
			size *= 4
			continue
		}
		if errno != 0 {
			return Mount{}, fmt.Errorf("statmount of mount %d in mntns id %d: %w", id, ns, errno)
		}
		return decodeStatmount(buf)
	}
}

// decodeStatmount reads struct statmount, checking every length.
func decodeStatmount(b []byte) (Mount, error) {
	if len(b) < statmountHeader {
		return Mount{}, fmt.Errorf("statmount: %d bytes, want at least %d", len(b), statmountHeader)
	}
	u32 := func(off int) uint32 { return binary.NativeEndian.Uint32(b[off:]) }
	u64 := func(off int) uint64 { return binary.NativeEndian.Uint64(b[off:]) }
	size := int(u32(0))
	if size < statmountHeader || size > len(b) {
		return Mount{}, fmt.Errorf("statmount: size %d out of %d bytes", size, len(b))
	}
	mask := u64(8)
	if mask&(statmountSBBasic|statmountMntBasic) != statmountSBBasic|statmountMntBasic {
		return Mount{}, fmt.Errorf("statmount: mask %#x lacks the basic fields", mask)
	}
	str := func(off int, bit uint64) (string, error) {
		if mask&bit == 0 {
			return "", nil
		}
		start := statmountHeader + int(u32(off))
		if start >= size {
			return "", fmt.Errorf("statmount: string at %d beyond %d bytes", start, size)
		}
		end := start
		for end < size && b[end] != 0 {
			end++
		}
		if end == size {
			return "", fmt.Errorf("statmount: string at %d not terminated", start)
		}
		return string(b[start:end]), nil
	}
	m := Mount{
		Dev:     event.MakeDev(u32(16), u32(20)),
		SBFlags: u32(32),
		ID:      u64(40), Parent: u64(48), OldID: int(u32(56)),
		Attr: u64(64), Prop: u64(72), Peer: u64(80), Master: u64(88),
	}
	if mask&statmountPropagateFrom != 0 {
		m.PropFrom = u64(96)
	}
	if mask&statmountMntNSID != 0 {
		m.NS = u64(112)
	}
	var err error
	for _, s := range []struct {
		to  *string
		off int
		bit uint64
	}{{&m.Opts, 4, statmountMntOpts}, {&m.FSType, 36, statmountFSType}, {&m.Root, 104, statmountMntRoot}, {&m.Point, 108, statmountMntPoint}} {
		if *s.to, err = str(s.off, s.bit); err != nil {
			return Mount{}, err
		}
	}
	return m, nil
}

// readTable is every mount of namespace ns, in unique-id order.
func readTable(ns uint64) ([]Mount, error) {
	ids, err := listMounts(ns)
	if err != nil {
		return nil, err
	}
	out := make([]Mount, 0, len(ids))
	for _, id := range ids {
		m, err := statMount(ns, id)
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

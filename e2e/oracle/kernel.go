package oracle

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The nsfs ioctls of the namespace walk (uapi linux/nsfs.h): NSIO is 0xb7.
// struct mnt_ns_info is { __u32 size; __u32 nr_mounts; __u64 mnt_ns_id }.
const (
	nsIOCType        = 0xb7
	mntNSInfoSize    = 16
	iocRead          = 2
	nsMntGetInfo     = iocRead<<30 | mntNSInfoSize<<16 | nsIOCType<<8 | 10
	nsMntGetNext     = iocRead<<30 | mntNSInfoSize<<16 | nsIOCType<<8 | 11
	nsMntGetPrev     = iocRead<<30 | mntNSInfoSize<<16 | nsIOCType<<8 | 12
	mntIDReqSize     = 32                                    // struct mnt_id_req, MNT_ID_REQ_SIZE_VER1
	lsmtRoot         = 0xffffffffffffffff                    // LSMT_ROOT: every mount of the namespace
	statmountHdrSize = 512                                   // struct statmount; strings follow it
	statmountMask    = 0x1 | 0x2 | 0x8 | 0x10 | 0x20 | 0x200 // SB_BASIC MNT_BASIC MNT_ROOT MNT_POINT FS_TYPE SB_SOURCE
)

// mntNSInfo is struct mnt_ns_info.
type mntNSInfo struct {
	Size     uint32
	NrMounts uint32
	ID       uint64
}

// mntIDReq is struct mnt_id_req (VER1); MntNSFd 0 means "none".
type mntIDReq struct {
	Size    uint32
	MntNSFd uint32
	MntID   uint64
	Param   uint64
	MntNSID uint64
}

// walkedNS is one namespace the walk found.
type walkedNS struct {
	inode uint64
	id    uint64
}

// walkNamespaces lists every mount namespace through NS_MNT_GET_NEXT and
// NS_MNT_GET_PREV from the caller's own: also those no process runs in.
func walkNamespaces() ([]walkedNS, error) {
	self, err := unix.Open("/proc/self/ns/mnt", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open /proc/self/ns/mnt: %w", err)
	}
	defer unix.Close(self)
	first, err := nsEntry(self)
	if err != nil {
		return nil, fmt.Errorf("NS_MNT_GET_INFO on /proc/self/ns/mnt: %w", err)
	}
	out := []walkedNS{first}
	for _, dir := range []uintptr{nsMntGetNext, nsMntGetPrev} {
		cur := self
		for {
			fd, info, err := nsStep(cur, dir)
			if cur != self {
				unix.Close(cur)
			}
			if errors.Is(err, unix.ENOENT) {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("namespace walk after mnt ns id %d: %w", out[len(out)-1].id, err)
			}
			var st unix.Stat_t
			if err := unix.Fstat(fd, &st); err != nil {
				unix.Close(fd)
				return nil, fmt.Errorf("stat namespace %d: %w", info.ID, err)
			}
			out = append(out, walkedNS{inode: st.Ino, id: info.ID})
			cur = fd
		}
	}
	return out, nil
}

// nsEntry is the inode and id of the namespace fd refers to.
func nsEntry(fd int) (walkedNS, error) {
	var info mntNSInfo
	info.Size = mntNSInfoSize
	if _, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), nsMntGetInfo, uintptr(unsafe.Pointer(&info))); errno != 0 {
		return walkedNS{}, errno
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return walkedNS{}, err
	}
	return walkedNS{inode: st.Ino, id: info.ID}, nil
}

// nsStep returns a new fd on the next (or previous) namespace.
func nsStep(fd int, req uintptr) (int, mntNSInfo, error) {
	var info mntNSInfo
	info.Size = mntNSInfoSize
	r, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), req, uintptr(unsafe.Pointer(&info)))
	if errno != 0 {
		return -1, info, errno
	}
	return int(r), info, nil
}

// listMounts is every mount id (unique, 64-bit) of namespace nsID.
func listMounts(nsID uint64) ([]uint64, error) {
	buf := make([]uint64, 512)
	var out []uint64
	var last uint64
	for {
		req := mntIDReq{Size: mntIDReqSize, MntID: lsmtRoot, Param: last, MntNSID: nsID}
		n, _, errno := unix.Syscall6(unix.SYS_LISTMOUNT, uintptr(unsafe.Pointer(&req)),
			uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)), 0, 0, 0)
		runtime.KeepAlive(&req)
		if errno != 0 {
			return nil, fmt.Errorf("listmount of mnt ns id %d: %w", nsID, errno)
		}
		out = append(out, buf[:n]...)
		if int(n) < len(buf) {
			return out, nil
		}
		last = buf[n-1]
	}
}

// statMount reads one mount of namespace nsID.
func statMount(nsID, mntID uint64, buf []byte) (Mount, []byte, error) {
	for {
		req := mntIDReq{Size: mntIDReqSize, MntID: mntID, Param: statmountMask, MntNSID: nsID}
		_, _, errno := unix.Syscall6(unix.SYS_STATMOUNT, uintptr(unsafe.Pointer(&req)),
			uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)), 0, 0, 0)
		runtime.KeepAlive(&req)
		if errno == unix.EOVERFLOW && len(buf) < 1<<20 {
			buf = make([]byte, 2*len(buf))
			continue
		}
		if errno != 0 {
			return Mount{}, buf, fmt.Errorf("statmount %d in mnt ns id %d: %w", mntID, nsID, errno)
		}
		m, err := decodeStatmount(buf)
		return m, buf, err
	}
}

// decodeStatmount decodes struct statmount (uapi linux/mount.h), checking
// every offset against the size the kernel wrote.
func decodeStatmount(b []byte) (Mount, error) {
	if len(b) < statmountHdrSize {
		return Mount{}, fmt.Errorf("statmount: %d bytes, want at least %d", len(b), statmountHdrSize)
	}
	le := binary.LittleEndian
	if runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		return Mount{}, fmt.Errorf("statmount: decoding written for little-endian amd64/arm64, not %s", runtime.GOARCH)
	}
	size := int(le.Uint32(b[0:]))
	if size < statmountHdrSize || size > len(b) {
		return Mount{}, fmt.Errorf("statmount: size %d outside [%d, %d]", size, statmountHdrSize, len(b))
	}
	str := func(off int) (string, error) {
		o := statmountHdrSize + int(le.Uint32(b[off:]))
		if o >= size {
			return "", fmt.Errorf("statmount: string at %d beyond size %d", o, size)
		}
		end := o
		for end < size && b[end] != 0 {
			end++
		}
		return string(b[o:end]), nil
	}
	m := Mount{
		Major:    le.Uint32(b[16:]),
		Minor:    le.Uint32(b[20:]),
		ID:       le.Uint64(b[40:]),
		ParentID: le.Uint64(b[48:]),
		OldID:    le.Uint32(b[56:]),
	}
	var err error
	for _, f := range []struct {
		off int
		dst *string
	}{{36, &m.FSType}, {104, &m.Root}, {108, &m.Point}, {124, &m.Source}} {
		if *f.dst, err = str(f.off); err != nil {
			return Mount{}, err
		}
	}
	return m, nil
}

// statxMount is the device and mount of what path resolves to (magic links
// of /proc followed): the unique mount id when the kernel gives it, else
// the old one (unique false).
func statxMount(path string) (dev uint64, ino uint64, mnt uint64, unique bool, err error) {
	var sx unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, path, unix.AT_STATX_DONT_SYNC, unix.STATX_INO|unix.STATX_MNT_ID_UNIQUE, &sx); err != nil {
		return 0, 0, 0, false, err
	}
	dev = unix.Mkdev(sx.Dev_major, sx.Dev_minor)
	return dev, sx.Ino, sx.Mnt_id, sx.Mask&unix.STATX_MNT_ID_UNIQUE != 0, nil
}

// isNotExist tells an error of a process that exited (or a file closed)
// while it was read.
func isNotExist(err error) bool {
	return errors.Is(err, os.ErrNotExist) || errors.Is(err, unix.ESRCH)
}

package kmount

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"unsafe"

	"golang.org/x/sys/unix"
)

// NS_MNT_GET_NEXT and NS_MNT_GET_PREV (Linux 6.12+), _IOR(0xb7, 11 and
// 12, struct mnt_ns_info): the next or previous mount namespace by birth
// id, as a new nsfs file descriptor.
const (
	mntNSInfoSize = 16 // sizeof(struct mnt_ns_info), MNT_NS_INFO_SIZE_VER0
	nsMntGetNext  = 2<<30 | mntNSInfoSize<<16 | 0xb7<<8 | 11
	nsMntGetPrev  = 2<<30 | mntNSInfoSize<<16 | 0xb7<<8 | 12
)

// Namespace is one mount namespace the kernel has: its inode (what
// /proc/PID/ns/mnt names), its birth id and how many mounts it has.
type Namespace struct {
	Ino    uint32 `json:"ino"`
	ID     uint64 `json:"id"`
	Mounts uint32 `json:"mounts,omitempty"`
}

// Namespaces walks every mount namespace of the machine from the one of
// the file self (an nsfs file: /proc/self/ns/mnt), both ways, and returns
// them in birth-id order: also the ones no process runs in (kept by a bind
// of their nsfs file, or a process holding it open) and the kernel's own.
// A kernel without the walk answers ENOTTY or EINVAL: the error says so.
func Namespaces(self string) ([]Namespace, error) {
	fd, err := unix.Open(self, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", self, err)
	}
	own, err := describe(fd)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("%s: %w", self, err)
	}
	out := []Namespace{own}
	for _, req := range []uintptr{nsMntGetNext, nsMntGetPrev} {
		next, err := walk(fd, req)
		if err != nil {
			unix.Close(fd)
			return nil, fmt.Errorf("walk the mount namespaces from %s: %w", self, err)
		}
		out = append(out, next...)
	}
	unix.Close(fd)
	slices.SortFunc(out, func(a, b Namespace) int {
		switch {
		case a.ID < b.ID:
			return -1
		case a.ID > b.ID:
			return 1
		}
		return 0
	})
	return out, nil
}

// walk follows req from fd (left open) until the kernel says there is no
// further namespace (ENOENT).
func walk(fd int, req uintptr) ([]Namespace, error) {
	var out []Namespace
	cur := fd
	defer func() {
		if cur != fd {
			unix.Close(cur)
		}
	}()
	for {
		var info [mntNSInfoSize]byte
		binary.NativeEndian.PutUint32(info[0:], mntNSInfoSize)
		r, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(cur), req, uintptr(unsafe.Pointer(&info[0])))
		if errors.Is(errno, unix.ENOENT) {
			return out, nil
		}
		if errno != 0 {
			return nil, errno
		}
		if cur != fd {
			unix.Close(cur)
		}
		cur = int(r)
		var st unix.Stat_t
		if err := unix.Fstat(cur, &st); err != nil {
			return nil, fmt.Errorf("stat a namespace's file: %w", err)
		}
		out = append(out, Namespace{Ino: uint32(st.Ino), ID: binary.NativeEndian.Uint64(info[8:]),
			Mounts: binary.NativeEndian.Uint32(info[4:])})
	}
}

// describe is the namespace whose nsfs file fd is.
func describe(fd int) (Namespace, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return Namespace{}, err
	}
	id, err := NSID(fd)
	if err != nil {
		return Namespace{}, err
	}
	return Namespace{Ino: uint32(st.Ino), ID: id}, nil
}

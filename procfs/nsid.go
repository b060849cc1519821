package procfs

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// nsGetMntNSID is NS_GET_MNTNS_ID, _IOR(NSIO, 0x5, __u64): the 64-bit id
// the kernel gives a mount namespace when it makes it, never reused while
// the machine runs (Linux 6.9+). Its inode number is reused at once.
const nsGetMntNSID = 2<<30 | 8<<16 | 0xb7<<8 | 0x5

// MntNSID implements Proc. It opens /proc/PID/ns/mnt for the time of one
// ioctl. A kernel without the ioctl answers ENOTTY or EINVAL: the error
// says so, and the caller goes without.
func (h Host) MntNSID(pid int) (uint32, uint64, error) {
	p := h.root() + "/" + strconv.Itoa(pid) + "/ns/mnt"
	f, err := os.Open(p)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return 0, 0, fmt.Errorf("stat %s: %w", p, err)
	}
	var id uint64
	if _, _, errno := unix.Syscall(unix.SYS_IOCTL, f.Fd(), nsGetMntNSID, uintptr(unsafe.Pointer(&id))); errno != 0 {
		return uint32(st.Ino), 0, fmt.Errorf("%s: NS_GET_MNTNS_ID: %w", p, errno)
	}
	runtime.KeepAlive(f)
	return uint32(st.Ino), id, nil
}

// NSFDs implements Proc: it reads the link of every open file of every
// process, and keeps those that are a mount namespace's nsfs file
// ("mnt:[N]") other than the process's own namespace. Nothing is opened.
func (h Host) NSFDs() ([]NSFD, error) {
	pids, err := h.pids()
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", h.root(), err)
	}
	return collect(len(pids), func(i int, s *scratch) ([]NSFD, bool) {
		dir := h.root() + "/" + strconv.Itoa(pids[i])
		fds, err := readDirNames(dir + "/fd")
		denied := isDenied(err)
		var found []NSFD
		for _, name := range fds {
			link, err := s.readlink(dir + "/fd/" + name)
			if err != nil || !strings.HasPrefix(link, "mnt:[") {
				continue
			}
			ns, err := ParseNSLink(link)
			fd, ferr := strconv.Atoi(name)
			if err == nil && ferr == nil {
				found = append(found, NSFD{FD: fd, NS: ns})
			}
		}
		if len(found) == 0 {
			return nil, denied
		}
		p, err := h.process(pids[i], s, true)
		if err != nil {
			return nil, denied // gone meanwhile
		}
		var out []NSFD
		for _, f := range found {
			if f.NS != p.MntNS {
				f.Process = p
				out = append(out, f)
			}
		}
		return out, denied
	})
}

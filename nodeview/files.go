package nodeview

import (
	"fmt"
	"io"
	"os"
	"sort"

	"golang.org/x/sys/unix"
)

// maxFile caps what ReadFile reads: configuration files, not data.
const maxFile = 4 << 20

// Stat stats path (absolute) in the view, following symbolic links, from
// what the kernel has cached of the file (AT_STATX_DONT_SYNC): its type, inode, the device it is on and the one it
// is (Mode, Ino, Dev, Rdev: the rest is zero), which no filesystem's
// server can change. A stat that asks the server fails on a FUSE mount
// whose server died (ENOTCONN), the very path `mntleak why` is asked
// about then. The descriptor it opens (O_PATH) is closed before it returns.
func (v View) Stat(path string) (unix.Stat_t, error) {
	var st unix.Stat_t
	f, err := v.open(path, unix.O_PATH)
	if err != nil {
		return st, err
	}
	defer f.Close()
	var stx unix.Statx_t
	if err := unix.Statx(int(f.Fd()), "", unix.AT_EMPTY_PATH|unix.AT_STATX_DONT_SYNC, unix.STATX_TYPE|unix.STATX_INO, &stx); err != nil {
		return st, fmt.Errorf("stat %s: %w", f.Name(), err)
	}
	st.Mode, st.Ino = uint32(stx.Mode), stx.Ino
	st.Dev, st.Rdev = unix.Mkdev(stx.Dev_major, stx.Dev_minor), unix.Mkdev(stx.Rdev_major, stx.Rdev_minor)
	return st, nil
}

// ReadFile reads a file (at most 4 MiB) in the view.
func (v View) ReadFile(path string) ([]byte, error) {
	f, err := v.open(path, unix.O_RDONLY|unix.O_NOCTTY|unix.O_NONBLOCK)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxFile+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", f.Name(), err)
	}
	if len(b) > maxFile {
		return nil, fmt.Errorf("read %s: larger than %d bytes", f.Name(), maxFile)
	}
	return b, nil
}

// ReadDir lists a directory's names in the view, sorted.
func (v View) ReadDir(path string) ([]string, error) {
	f, err := v.open(path, unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, fmt.Errorf("read directory %s: %w", f.Name(), err)
	}
	sort.Strings(names)
	return names, nil
}

// IsNotExist reports whether err says the path does not exist.
func IsNotExist(err error) bool { return os.IsNotExist(err) }

package procfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
)

// maxLinks is how many symbolic links one resolution follows (the
// kernel's limit, MAXSYMLINKS).
const maxLinks = 40

// RealPath implements Proc: each component is looked up under
// /proc/PID/root, which is pid's root whatever mntleak's own is.
func (h Host) RealPath(pid int, p string) (string, uint32, error) {
	if !strings.HasPrefix(p, "/") {
		return "", 0, fmt.Errorf("realpath %q: not absolute", p)
	}
	dir := filepath.Join(h.root(), strconv.Itoa(pid))
	ns, err := h.nsOf(dir)
	if err != nil {
		return "", 0, err
	}
	root := dir + "/root"
	resolved := "/"
	rest := strings.Split(p, "/")
	for links := 0; len(rest) > 0; {
		c := rest[0]
		rest = rest[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			resolved = path.Dir(resolved)
			continue
		}
		next := path.Join(resolved, c)
		fi, err := os.Lstat(root + next)
		if errors.Is(err, fs.ErrNotExist) {
			return path.Join(append([]string{next}, rest...)...), ns, nil
		}
		if err != nil {
			return "", 0, fmt.Errorf("realpath %s in process %d: %w", p, pid, err)
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			resolved = next
			continue
		}
		if links++; links > maxLinks {
			return "", 0, fmt.Errorf("realpath %s in process %d: too many symbolic links", p, pid)
		}
		target, err := os.Readlink(root + next)
		if err != nil {
			return "", 0, fmt.Errorf("realpath %s in process %d: %w", p, pid, err)
		}
		if strings.HasPrefix(target, "/") {
			resolved = "/"
		}
		rest = append(strings.Split(target, "/"), rest...)
	}
	return resolved, ns, nil
}

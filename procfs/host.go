package procfs

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unique"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/nodeview"
)

// Host reads the live /proc (or another procfs mount, for tests).
type Host struct {
	Root string // "/proc" when empty
	// ListWithoutCgroups leaves Process.Cgroup empty in ProcessList: a
	// one-shot question (why) reads the cgroups of the few processes it
	// names afterwards (Correlator.Why), not those of every process (on
	// cgroup v1 the file lists every hierarchy: a fifth of a why).
	ListWithoutCgroups bool
}

func (h Host) root() string {
	if h.Root == "" {
		return "/proc"
	}
	return h.Root
}

// ParseNSLink parses a namespace link target such as "mnt:[4026531840]".
func ParseNSLink(link string) (uint32, error) {
	i, j := strings.IndexByte(link, '['), strings.LastIndexByte(link, ']')
	if i < 0 || j < i {
		return 0, fmt.Errorf("namespace link %q: want type:[inode]", link)
	}
	n, err := strconv.ParseUint(link[i+1:j], 10, 32)
	if err != nil {
		return 0, fmt.Errorf("namespace link %q: %w", link, err)
	}
	return uint32(n), nil
}

var containerIDInPath = regexp.MustCompile(`[0-9a-f]{64}`)

// pickCgroup chooses the most telling line of /proc/PID/cgroup: one that
// names a container, else the unified (v2) one, else systemd's v1 one.
func pickCgroup(s string) string {
	var unified, systemd, first string
	for _, line := range strings.Split(strings.TrimSpace(s), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		path := parts[2]
		if containerIDInPath.MatchString(path) {
			return path
		}
		switch {
		case parts[0] == "0" && parts[1] == "":
			unified = path
		case parts[1] == "name=systemd":
			systemd = path
		case first == "":
			first = path
		}
	}
	for _, p := range []string{unified, systemd, first} {
		if p != "" && p != "/" {
			return p
		}
	}
	if unified != "" {
		return unified
	}
	return first
}

// Mountinfo implements Proc. The namespace link is read before and after
// the table: if the process changed namespace (setns) or its pid was reused
// in between, the answer is an error rather than a mislabelled table.
func (h Host) Mountinfo(pid int) (uint32, []*Mount, error) {
	return h.mountinfo(pid, newScratch())
}

// mountinfo is Mountinfo with a reader's scratch space: its buffer holds
// the table, its parser interns the strings.
func (h Host) mountinfo(pid int, s *scratch) (uint32, []*Mount, error) {
	dir := filepath.Join(h.root(), strconv.Itoa(pid))
	ns, err := h.scratchNS(dir, s)
	if err != nil {
		return 0, nil, err
	}
	if r, err := s.readlink(dir + "/root"); err == nil && r != "/" {
		// A chrooted process's mountinfo shows only what lies under its
		// root, relative to it: the namespace's whole table is read
		// through its nsfs file instead.
		return h.NSMountinfo(dir + "/ns/mnt")
	}
	table, err := s.read(dir + "/mountinfo")
	if errors.Is(err, unix.EINVAL) {
		// The kernel refuses the mount table of a process that is exiting
		// (its namespaces are already released): it is gone.
		return 0, nil, fmt.Errorf("%s/mountinfo: %w", dir, unix.ESRCH)
	}
	if err != nil {
		return 0, nil, err
	}
	mounts, err := s.tables().parse(table)
	if err != nil {
		return 0, nil, fmt.Errorf("parse %s/mountinfo: %w", dir, err)
	}
	if after, err := h.scratchNS(dir, s); err != nil || after != ns {
		return 0, nil, fmt.Errorf("%s changed mount namespace while being read", dir)
	}
	return ns, mounts, nil
}

// scratchNS is nsOf with a scanner's buffers.
func (h Host) scratchNS(dir string, s *scratch) (uint32, error) {
	link, err := s.readlink(dir + "/ns/mnt")
	if err != nil {
		return 0, err
	}
	return ParseNSLink(link)
}

// intern makes a mount shape's strings the canonical copies: namespaces
// are copies of one another (every container's copy of the host's mounts,
// 300 namespaces of 300 mounts on a busy node), so the same mount point,
// options and source strings are kept once instead of once per namespace
// and per re-read. unique keeps no string nobody references.
func intern(m *MountShape) {
	for _, s := range []*string{&m.Root, &m.Mountpoint, &m.Options, &m.Optional, &m.FSType, &m.Source, &m.VFSOptions} {
		*s = unique.Make(*s).Value()
	}
}

func (h Host) nsOf(dir string) (uint32, error) {
	link, err := os.Readlink(dir + "/ns/mnt")
	if err != nil {
		return 0, err
	}
	return ParseNSLink(link)
}

// CmdlineCap caps a captured command line.
const CmdlineCap = 512

// Command implements Proc.
func (h Host) Command(pid int) (Command, error) {
	dir := filepath.Join(h.root(), strconv.Itoa(pid))
	var c Command
	exe, err := os.Readlink(dir + "/exe")
	if err == nil {
		c.Exe = exe
	}
	b, cerr := os.ReadFile(dir + "/cmdline")
	if cerr == nil {
		if len(b) > CmdlineCap {
			b = b[:CmdlineCap]
		}
		c.Cmdline = strings.TrimSpace(string(bytes.ReplaceAll(b, []byte{0}, []byte{' '})))
	}
	if err != nil && cerr != nil {
		return c, fmt.Errorf("process %d: %w", pid, cerr)
	}
	if stat, err := os.ReadFile(dir + "/stat"); err == nil {
		var p Process
		if _, err := parseStat(stat, &p); err == nil {
			c.Comm, c.StartTime = p.Comm, p.StartTime
		}
	}
	return c, nil
}

// Cgroup returns a process's cgroup path (the line of /proc/PID/cgroup
// that names a container, else the unified (v2) one, else systemd's) and
// its mount namespace's inode.
func (h Host) Cgroup(pid int) (string, uint32, error) {
	dir := filepath.Join(h.root(), strconv.Itoa(pid))
	b, err := os.ReadFile(dir + "/cgroup")
	if err != nil {
		return "", 0, fmt.Errorf("read %s/cgroup: %w", dir, err)
	}
	ns, err := h.nsOf(dir)
	if err != nil {
		return "", 0, fmt.Errorf("read %s/ns/mnt: %w", dir, err)
	}
	return pickCgroup(string(b)), ns, nil
}

// HostNS implements Proc.
func (h Host) HostNS() (uint32, error) {
	// pid 1's; where it cannot be read (a protected init), kthreadd's:
	// kernel threads stay in the initial namespace; else mntleak's own.
	for _, pid := range []string{"1", "2", "self"} {
		if link, err := os.Readlink(filepath.Join(h.root(), pid, "ns", "mnt")); err == nil {
			return ParseNSLink(link)
		}
	}
	_, err := os.Readlink(filepath.Join(h.root(), "self", "ns", "mnt"))
	return 0, err
}

// BlockDevice implements Proc. The path is a node path: a daemon in a
// container (the DaemonSet's pod) has a /dev of its own without the
// node's block devices, so a path its own root lacks is looked up again
// in the node's root (nodeview: /proc/1/root, or kthreadd's).
func (h Host) BlockDevice(path string) (event.Dev, error) {
	dev, err := blockDevice(nodeview.AsGiven(), path)
	if err == nil {
		return dev, nil
	}
	if v, derr := nodeview.Detect(h.root(), true); derr == nil && v.Kind == nodeview.NodeRoot {
		if d, nerr := blockDevice(v, path); nerr == nil {
			return d, nil
		}
	}
	return 0, err
}

func blockDevice(v nodeview.View, path string) (event.Dev, error) {
	st, err := v.Stat(path)
	if err != nil {
		return 0, fmt.Errorf("stat %s: %w", path, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFBLK {
		return 0, fmt.Errorf("%s is not a block device", path)
	}
	return event.MakeDev(unix.Major(st.Rdev), unix.Minor(st.Rdev)), nil
}

// readDirNames lists a directory's names in os.ReadDir's order (by name),
// without the lstat os.ReadDir may do per entry.
func readDirNames(dir string) ([]string, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	sort.Strings(names)
	return names, err
}

// statDev stats path (following the link) and returns its device and, for
// a block device, the device it is.
func statDev(path string) (dev, rdev event.Dev, ok bool) {
	dev, rdev, err := statDevErr(path)
	return dev, rdev, err == nil
}

// statDevErr is statDev with the reason it failed.
func statDevErr(path string) (dev, rdev event.Dev, err error) {
	dev, rdev, _, err = statCached(path)
	return dev, rdev, err
}

// statCached stats path (following the link) from what the kernel has
// cached of the file (AT_STATX_DONT_SYNC): its device, the device a block
// device is, and its inode, none of which a filesystem's server can
// change. A stat that asks the server fails on a FUSE file whose server
// died (ENOTCONN: the processes working in a dead FUSE mount would go
// unseen) and waits on a network filesystem that does not answer.
func statCached(path string) (dev, rdev event.Dev, ino uint64, err error) {
	var stx unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, path, unix.AT_STATX_DONT_SYNC, unix.STATX_TYPE|unix.STATX_INO, &stx); err != nil {
		return 0, 0, 0, err
	}
	dev = event.MakeDev(stx.Dev_major, stx.Dev_minor)
	if stx.Mode&unix.S_IFMT == unix.S_IFBLK {
		rdev = event.MakeDev(stx.Rdev_major, stx.Rdev_minor)
	}
	return dev, rdev, stx.Ino, nil
}

type mapping struct {
	dev  event.Dev
	path string
}

// mapsOn returns the file mappings of a maps file's contents that are on
// wanted devices, one per file. Its device field is "maj:min" in hex. Lines
// are cut by hand: a process maps dozens of files, and a scan of every
// process reads them all, while only a wanted device's lines are kept.
func mapsOn(b []byte, want map[event.Dev]bool) []mapping {
	var out []mapping
	var seen map[string]bool
	for len(b) > 0 {
		var line []byte
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			line, b = b, nil
		}
		// address perms offset dev inode path
		var field [5][]byte
		rest := line
		n := 0
		for ; n < 5; n++ {
			rest = bytes.TrimLeft(rest, " ")
			j := bytes.IndexByte(rest, ' ')
			if j < 0 {
				field[n], rest = rest, nil
				n++
				break
			}
			field[n], rest = rest[:j], rest[j:]
		}
		if n < 5 || len(field[4]) == 0 || string(field[4]) == "0" {
			continue
		}
		path := string(bytes.TrimLeft(rest, " "))
		if path == "" {
			continue
		}
		majS, minS, ok := bytes.Cut(field[3], []byte(":"))
		if !ok {
			continue
		}
		major, ok1 := parseHex(majS)
		minor, ok2 := parseHex(minS)
		if !ok1 || !ok2 {
			continue
		}
		dev := event.MakeDev(uint32(major), uint32(minor))
		if !want[dev] {
			continue
		}
		if seen == nil {
			seen = map[string]bool{}
		}
		if !seen[path] {
			seen[path] = true
			out = append(out, mapping{dev, path})
		}
	}
	return out
}

// parseHex parses a maps device half: up to 8 hex digits.
func parseHex(b []byte) (uint64, bool) {
	if len(b) == 0 || len(b) > 8 {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		switch {
		case c >= '0' && c <= '9':
			v = v<<4 | uint64(c-'0')
		case c >= 'a' && c <= 'f':
			v = v<<4 | uint64(c-'a'+10)
		case c >= 'A' && c <= 'F':
			v = v<<4 | uint64(c-'A'+10)
		default:
			return 0, false
		}
	}
	return v, true
}

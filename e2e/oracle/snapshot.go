package oracle

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Mount is one mount of a namespace's table, as statmount (or mountinfo,
// on a kernel without it) gives it.
type Mount struct {
	ID       uint64 // unique 64-bit id (0 from mountinfo)
	ParentID uint64
	OldID    uint32 // the id of /proc/PID/mountinfo and fdinfo
	Major    uint32 // the superblock's device
	Minor    uint32
	FSType   string
	Root     string // the mount's root in its filesystem; nsfs: "mnt:[N]"
	Point    string // where, from the namespace's own root
	Source   string
}

// Namespace is one mount namespace and its table.
type Namespace struct {
	Inode  uint64 // mnt:[Inode]
	ID     uint64 // the kernel's 64-bit id (0: not known)
	Mounts []Mount
	// Unread says why the table could not be read (no member to read it
	// through, on a kernel without listmount by namespace).
	Unread string
}

// File is a file a process holds: its cwd, root, an open fd, a mapping.
type File struct {
	How    string // "cwd", "root", "fd 3", "map"
	Dev    uint64 // the superblock's device (st_dev)
	Ino    uint64
	MntID  uint64 // the mount it was reached through (a map: 0 until resolved)
	Unique bool   // MntID is the unique id (else the old one)
	// TID is the thread whose cwd or root it is, for a thread in another
	// namespace than its process (its own filesystem context); 0: the
	// process's.
	TID int
	ref string // its /proc link (to print where it points)
}

// Proc is one process and what it holds.
type Proc struct {
	PID   int
	Comm  string
	MntNS uint64 // inode of its mount namespace (its main thread's)
	// Threads are its threads in other mount namespaces than its main
	// thread's (a thread that unshared or entered one keeps it too).
	Threads []Thread
	Files   []File
}

// Thread is one thread of a process in another namespace than the
// process's (/proc/PID/task/TID/ns/mnt).
type Thread struct {
	TID int
	NS  uint64
}

// Snapshot is the kernel's state at one moment: every mount namespace
// with its table and every process with the files it holds.
type Snapshot struct {
	Taken time.Time
	Took  time.Duration
	// Walked is set when the namespaces come from NS_MNT_GET_NEXT (all of
	// them); else from processes, nsfs binds and open namespace fds.
	Walked     bool
	Namespaces []Namespace
	Procs      []Proc
	NSFSDev    uint64 // the device of nsfs files
	// Skipped says what could not be read (a process that vanished is not
	// listed: it holds nothing any more).
	Skipped []string
}

// Take reads the kernel's state now. It needs root.
func Take() (*Snapshot, error) {
	start := time.Now()
	s := &Snapshot{Taken: start}
	var st unix.Stat_t
	if err := unix.Stat("/proc/self/ns/mnt", &st); err != nil {
		return nil, fmt.Errorf("stat /proc/self/ns/mnt: %w", err)
	}
	s.NSFSDev = st.Dev
	if err := s.readNamespacesByWalk(); err != nil {
		s.Skipped = append(s.Skipped, "namespace walk: "+err.Error())
	}
	if err := s.readProcs(); err != nil {
		return nil, err
	}
	if !s.Walked {
		s.readNamespacesFromProcs()
	}
	s.Took = time.Since(start)
	return s, nil
}

// readNamespacesByWalk reads every namespace's table by its id.
func (s *Snapshot) readNamespacesByWalk() error {
	nss, err := walkNamespaces()
	if err != nil {
		return err
	}
	buf := make([]byte, 4096)
	for _, w := range nss {
		ns := Namespace{Inode: w.inode, ID: w.id}
		ids, err := listMounts(w.id)
		if errors.Is(err, unix.ENOENT) {
			continue // torn down since the walk
		}
		if err != nil {
			return err
		}
		for _, id := range ids {
			var m Mount
			m, buf, err = statMount(w.id, id, buf)
			if errors.Is(err, unix.ENOENT) {
				continue // unmounted since listmount
			}
			if err != nil {
				return err
			}
			ns.Mounts = append(ns.Mounts, m)
		}
		s.Namespaces = append(s.Namespaces, ns)
	}
	sort.Slice(s.Namespaces, func(i, j int) bool { return s.Namespaces[i].Inode < s.Namespaces[j].Inode })
	s.Walked = true
	return nil
}

// readProcs reads every process: its namespace, cwd, root, fds and maps.
func (s *Snapshot) readProcs() error {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return fmt.Errorf("read /proc: %w", err)
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		p, err := readProc(pid)
		if isNotExist(err) {
			continue
		}
		if err != nil {
			s.Skipped = append(s.Skipped, err.Error())
			continue
		}
		s.Procs = append(s.Procs, p)
	}
	return nil
}

// readProc reads one process; an error satisfying isNotExist means it exited.
func readProc(pid int) (Proc, error) {
	dir := "/proc/" + strconv.Itoa(pid)
	p := Proc{PID: pid}
	comm, err := os.ReadFile(dir + "/comm")
	if err != nil {
		return p, err
	}
	p.Comm = strings.TrimSuffix(string(comm), "\n")
	var st unix.Stat_t
	if err := unix.Stat(dir+"/ns/mnt", &st); err != nil {
		if isNotExist(err) {
			return p, err
		}
		return p, fmt.Errorf("stat %s/ns/mnt: %w", dir, err)
	}
	p.MntNS = st.Ino
	p.Threads = threadNamespaces(dir, p.MntNS)
	for _, how := range []string{"cwd", "root"} {
		dev, ino, mnt, uniq, err := statxMount(dir + "/" + how)
		if err != nil {
			continue // a kernel thread, a zombie, or gone
		}
		p.Files = append(p.Files, File{How: how, Dev: dev, Ino: ino, MntID: mnt, Unique: uniq, ref: dir + "/" + how})
	}
	for _, th := range p.Threads {
		for _, how := range []string{"cwd", "root"} {
			ref := dir + "/task/" + strconv.Itoa(th.TID) + "/" + how
			dev, ino, mnt, uniq, err := statxMount(ref)
			if err != nil {
				continue // the thread ended
			}
			p.Files = append(p.Files, File{How: how, Dev: dev, Ino: ino, MntID: mnt, Unique: uniq, TID: th.TID, ref: ref})
		}
	}
	fds, err := os.ReadDir(dir + "/fd")
	if err != nil && !isNotExist(err) && !errors.Is(err, unix.EACCES) {
		return p, fmt.Errorf("read %s/fd: %w", dir, err)
	}
	for _, fd := range fds {
		ref := dir + "/fd/" + fd.Name()
		dev, ino, mnt, uniq, err := statxMount(ref)
		if err != nil {
			continue // closed meanwhile
		}
		p.Files = append(p.Files, File{How: "fd " + fd.Name(), Dev: dev, Ino: ino, MntID: mnt, Unique: uniq, ref: ref})
	}
	maps, err := readMaps(dir)
	if err != nil {
		return p, err
	}
	p.Files = append(p.Files, maps...)
	return p, nil
}

// readerThread is the name mntleak gives a thread of its own while it is in
// another namespace for a moment, to read a table there (internal/nsthread's
// ThreadName; written out here, the oracle shares no code with mntleak): a
// daemon of another test, running beside this one, reading the namespaces
// kept by an nsfs file is no member of them.
const readerThread = "mntleak-setns"

// threadNamespaces lists the threads of a process in mount namespaces
// other than main (its main thread's), but mntleak's passing reader
// threads; a thread gone meanwhile is skipped.
func threadNamespaces(dir string, main uint64) []Thread {
	tasks, err := os.ReadDir(dir + "/task")
	if err != nil || len(tasks) < 2 {
		return nil
	}
	var out []Thread
	for _, task := range tasks {
		var st unix.Stat_t
		if unix.Stat(dir+"/task/"+task.Name()+"/ns/mnt", &st) != nil || st.Ino == main {
			continue
		}
		if comm, err := os.ReadFile(dir + "/task/" + task.Name() + "/comm"); err == nil && strings.TrimSpace(string(comm)) == readerThread {
			continue
		}
		if tid, err := strconv.Atoi(task.Name()); err == nil {
			out = append(out, Thread{TID: tid, NS: st.Ino})
		}
	}
	return out
}

// readMaps lists the distinct files a process maps (device and inode from
// /proc/PID/maps; the mount is read through map_files only for a mapping
// on the device asked about: Snapshot.Holders).
func readMaps(dir string) ([]File, error) {
	b, err := os.ReadFile(dir + "/maps")
	if err != nil {
		if isNotExist(err) || errors.Is(err, unix.EACCES) {
			return nil, nil
		}
		return nil, fmt.Errorf("read %s/maps: %w", dir, err)
	}
	type key struct{ dev, ino uint64 }
	seen := map[key]bool{}
	var out []File
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		// start-end perms offset MM:mm inode [path]
		f := strings.Fields(sc.Text())
		if len(f) < 5 || f[4] == "0" {
			continue
		}
		maj, min, ok := strings.Cut(f[3], ":")
		if !ok {
			continue
		}
		ma, err1 := strconv.ParseUint(maj, 16, 32)
		mi, err2 := strconv.ParseUint(min, 16, 32)
		ino, err3 := strconv.ParseUint(f[4], 10, 64)
		if err1 != nil || err2 != nil || err3 != nil {
			return nil, fmt.Errorf("%s/maps: bad line %q", dir, sc.Text())
		}
		k := key{unix.Mkdev(uint32(ma), uint32(mi)), ino}
		if seen[k] {
			continue
		}
		seen[k] = true
		ref, err := mapFilesRef(dir, f[0])
		if err != nil {
			return nil, err
		}
		out = append(out, File{How: "map", Dev: k.dev, Ino: ino, ref: ref})
	}
	return out, nil
}

// mapFilesRef is the map_files link of a maps range: its addresses
// without maps' zero padding ("00400000-00401000" is "400000-401000").
func mapFilesRef(dir, span string) (string, error) {
	lo, hi, ok := strings.Cut(span, "-")
	a, err1 := strconv.ParseUint(lo, 16, 64)
	b, err2 := strconv.ParseUint(hi, 16, 64)
	if !ok || err1 != nil || err2 != nil {
		return "", fmt.Errorf("%s/maps: bad range %q", dir, span)
	}
	return dir + "/map_files/" + strconv.FormatUint(a, 16) + "-" + strconv.FormatUint(b, 16), nil
}

// readNamespacesFromProcs is the fallback without the namespace walk: the
// namespaces of processes (their table read through one member's
// mountinfo), of open namespace fds and of nsfs binds (listed, unread).
func (s *Snapshot) readNamespacesFromProcs() {
	byIno := map[uint64]*Namespace{}
	var order []uint64
	add := func(ino uint64) *Namespace {
		if ns := byIno[ino]; ns != nil {
			return ns
		}
		byIno[ino] = &Namespace{Inode: ino, Unread: "no member to read it through"}
		order = append(order, ino)
		return byIno[ino]
	}
	read := func(ino uint64, task int) {
		ns := add(ino)
		if ns.Unread == "" {
			return
		}
		ms, err := readMountinfo("/proc/" + strconv.Itoa(task) + "/mountinfo") // a tid's is its thread's
		if err != nil {
			return
		}
		ns.Mounts, ns.Unread = ms, ""
	}
	for _, p := range s.Procs {
		read(p.MntNS, p.PID)
		for _, th := range p.Threads {
			read(th.NS, th.TID)
		}
	}
	for _, p := range s.Procs {
		for _, f := range p.Files {
			if f.Dev == s.NSFSDev && strings.HasPrefix(f.How, "fd ") && isMntNS(f.ref) {
				add(f.Ino)
			}
		}
	}
	for _, ino := range order {
		ns := byIno[ino]
		for _, m := range ns.Mounts {
			if n, ok := nsfsInode(m, "mnt"); ok {
				add(n)
			}
		}
	}
	sort.Slice(order, func(i, j int) bool { return order[i] < order[j] })
	for _, ino := range order {
		s.Namespaces = append(s.Namespaces, *byIno[ino])
	}
}

// isMntNS tells an open fd on a mount namespace's nsfs file.
func isMntNS(ref string) bool {
	l, err := os.Readlink(ref)
	return err == nil && strings.HasPrefix(l, "mnt:[")
}

// nsfsInode is the namespace a mount of nsfs shows ("mnt:[N]" as root).
func nsfsInode(m Mount, kind string) (uint64, bool) {
	if m.FSType != "nsfs" {
		return 0, false
	}
	return parseNSRef(m.Root, kind)
}

// parseNSRef reads "kind:[N]" (a leading "/" allowed).
func parseNSRef(s, kind string) (uint64, bool) {
	s = strings.TrimPrefix(s, "/")
	rest, ok := strings.CutPrefix(s, kind+":[")
	if !ok || !strings.HasSuffix(rest, "]") {
		return 0, false
	}
	n, err := strconv.ParseUint(strings.TrimSuffix(rest, "]"), 10, 64)
	return n, err == nil
}

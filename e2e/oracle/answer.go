package oracle

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Target is the object asked about: a filesystem by its superblock's
// device (a block device's number, or st_dev of a tmpfs's mount point),
// and, when Root is set, only its mounts with that root (nsfs: "net:[N]").
type Target struct {
	Major, Minor uint32
	Root         string
}

func (t Target) String() string {
	s := fmt.Sprintf("%d:%d", t.Major, t.Minor)
	if t.Root != "" {
		s += " root " + t.Root
	}
	return s
}

func (t Target) dev() uint64 { return unix.Mkdev(t.Major, t.Minor) }

// ProcRef names a process in an answer; TID, a member by one thread of
// its own in another namespace than the process's (0: by its main thread).
type ProcRef struct {
	PID  int
	TID  int
	Comm string
}

func (p ProcRef) String() string {
	if p.TID != 0 {
		return fmt.Sprintf("%s[%d] thread %d", p.Comm, p.PID, p.TID)
	}
	return fmt.Sprintf("%s[%d]", p.Comm, p.PID)
}

// Holding is one namespace whose table has a mount of the target.
type Holding struct {
	Inode   uint64
	ID      uint64
	Points  []string
	Members []ProcRef
	// KeptBy are the nsfs binds of this namespace ("/run/x in mnt:[N]"),
	// HeldOpenBy the processes holding its nsfs file open.
	KeptBy     []string
	HeldOpenBy []Pin
}

// Pin is a process holding a file on the target: cwd, root, fd, map.
type Pin struct {
	ProcRef
	MntNS uint64 // the process's namespace (its thread's, for a thread's cwd or root)
	How   string
	Path  string
	// InNS is the namespace whose table has the pinned mount; 0 with
	// Detached: the mount is in no table (the kernel detached it).
	InNS     uint64
	Detached bool
}

func (p Pin) String() string {
	s := fmt.Sprintf("%s %s %s", p.ProcRef, p.How, p.Path)
	switch {
	case p.Detached:
		s += " (detached copy)"
	case p.InNS != 0:
		s += fmt.Sprintf(" (mount of mnt:[%d])", p.InNS)
	}
	return s
}

// Answer is who holds the target at the snapshot's moment.
type Answer struct {
	Target     Target
	Taken      time.Time
	Took       time.Duration
	Walked     bool
	Namespaces []Holding
	Pins       []Pin
	Skipped    []string
	// Live are the processes and Exists the mount namespaces (by inode)
	// at the snapshot: a claim about one absent is not checkable.
	Live   map[int]bool
	Exists map[uint64]bool
}

// Held tells whether anything holds the target.
func (a Answer) Held() bool { return len(a.Namespaces) > 0 || len(a.Pins) > 0 }

// Holding returns the namespace's holding, if it has a mount of the target.
func (a Answer) Holding(inode uint64) (Holding, bool) {
	for _, h := range a.Namespaces {
		if h.Inode == inode {
			return h, true
		}
	}
	return Holding{}, false
}

// String prints the answer for a test's failure message.
func (a Answer) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "oracle at %s (%s, %s): %s", a.Taken.Format("15:04:05.000"), a.Took.Round(time.Microsecond),
		map[bool]string{true: "namespace walk", false: "namespaces of /proc"}[a.Walked], a.Target)
	if !a.Held() {
		b.WriteString(": nothing holds it")
	}
	for _, h := range a.Namespaces {
		fmt.Fprintf(&b, "\n  mnt:[%d] (id %d) at %s; members %s", h.Inode, h.ID, strings.Join(h.Points, ", "), refs(h.Members))
		if len(h.KeptBy) > 0 {
			fmt.Fprintf(&b, "; kept by bind %s", strings.Join(h.KeptBy, ", "))
		}
		for _, p := range h.HeldOpenBy {
			fmt.Fprintf(&b, "; held open by %s %s", p.ProcRef, p.How)
		}
	}
	for _, p := range a.Pins {
		fmt.Fprintf(&b, "\n  pin: %s", p)
	}
	for _, s := range a.Skipped {
		fmt.Fprintf(&b, "\n  unread: %s", s)
	}
	return b.String()
}

func refs(ps []ProcRef) string {
	if len(ps) == 0 {
		return "none"
	}
	const max = 6
	var out []string
	for i, p := range ps {
		if i == max {
			out = append(out, fmt.Sprintf("+%d more", len(ps)-max))
			break
		}
		out = append(out, p.String())
	}
	return strings.Join(out, " ")
}

// Holders takes a snapshot now and answers who holds t.
func Holders(t Target) (Answer, error) {
	s, err := Take()
	if err != nil {
		return Answer{}, err
	}
	return s.Holders(t), nil
}

// Holders answers who holds t in the snapshot.
func (s *Snapshot) Holders(t Target) Answer {
	a := Answer{Target: t, Taken: s.Taken, Took: s.Took, Walked: s.Walked, Skipped: s.Skipped,
		Live: map[int]bool{}, Exists: map[uint64]bool{}}
	nsByIno := map[uint64]int{}
	for _, p := range s.Procs {
		a.Live[p.PID] = true
		a.Exists[p.MntNS] = true
		for _, th := range p.Threads {
			a.Exists[th.NS] = true
		}
	}
	for _, ns := range s.Namespaces {
		a.Exists[ns.Inode] = true
		if ns.Unread != "" {
			a.Skipped = append(a.Skipped, fmt.Sprintf("mnt:[%d] (may hold it): %s", ns.Inode, ns.Unread))
			continue
		}
		var points []string
		for _, m := range ns.Mounts {
			if s.matches(t, m) {
				points = append(points, m.Point)
			}
		}
		if len(points) == 0 {
			continue
		}
		nsByIno[ns.Inode] = len(a.Namespaces)
		a.Namespaces = append(a.Namespaces, Holding{Inode: ns.Inode, ID: ns.ID, Points: points})
	}
	s.addKeepers(&a, nsByIno)
	mountNS := s.mountIndex()
	for _, p := range s.Procs {
		ref := ProcRef{PID: p.PID, Comm: p.Comm}
		if i, ok := nsByIno[p.MntNS]; ok {
			a.Namespaces[i].Members = append(a.Namespaces[i].Members, ref)
		}
		for _, th := range p.Threads {
			if i, ok := nsByIno[th.NS]; ok {
				a.Namespaces[i].Members = append(a.Namespaces[i].Members, ProcRef{PID: p.PID, TID: th.TID, Comm: p.Comm})
			}
		}
		for _, f := range p.Files {
			if f.Dev != t.dev() {
				continue
			}
			if f.How == "map" {
				// Read now, for the device asked about: a mapping
				// gone since (unmapped, the process exited) holds nothing.
				var err error
				if _, _, f.MntID, f.Unique, err = statxMount(f.ref); err != nil {
					continue
				}
			}
			loc, known := mountNS[mountKey{f.MntID, f.Unique}]
			if !s.pins(t, f, loc, known) {
				continue
			}
			pin := Pin{ProcRef: ref, MntNS: p.MntNS, How: f.How, Path: linkText(f.ref), InNS: loc.ns, Detached: !known}
			if f.TID != 0 {
				pin.TID, pin.MntNS = f.TID, p.threadNS(f.TID)
			}
			a.Pins = append(a.Pins, pin)
		}
	}
	return a
}

// matches tells a mount of the target.
func (s *Snapshot) matches(t Target, m Mount) bool {
	return m.Major == t.Major && m.Minor == t.Minor && (t.Root == "" || m.Root == t.Root)
}

// pins tells a file on the target (its device matches): with a root, for
// nsfs ("net:[N]") the namespace's own file, else a file reached through
// a mount of that root (one in no table cannot tell its root: not a pin).
func (s *Snapshot) pins(t Target, f File, loc mountLoc, known bool) bool {
	switch {
	case t.Root == "":
		return true
	case f.Dev == s.NSFSDev:
		_, n, ok := strings.Cut(strings.TrimSuffix(t.Root, "]"), ":[")
		return ok && n == strconv.FormatUint(f.Ino, 10)
	default:
		return known && loc.root == t.Root
	}
}

type mountKey struct {
	id     uint64
	unique bool
}

type mountLoc struct {
	ns   uint64
	root string
}

// mountIndex finds a mount's namespace from its unique or old id.
func (s *Snapshot) mountIndex() map[mountKey]mountLoc {
	idx := map[mountKey]mountLoc{}
	for _, ns := range s.Namespaces {
		for _, m := range ns.Mounts {
			loc := mountLoc{ns.Inode, m.Root}
			if m.ID != 0 {
				idx[mountKey{m.ID, true}] = loc
			}
			idx[mountKey{uint64(m.OldID), false}] = loc
		}
	}
	return idx
}

// addKeepers names the nsfs binds and open nsfs fds of each holding
// namespace.
func (s *Snapshot) addKeepers(a *Answer, nsByIno map[uint64]int) {
	for _, ns := range s.Namespaces {
		for _, m := range ns.Mounts {
			if n, ok := nsfsInode(m, "mnt"); ok {
				if i, ok := nsByIno[n]; ok {
					a.Namespaces[i].KeptBy = append(a.Namespaces[i].KeptBy, fmt.Sprintf("%s in mnt:[%d]", m.Point, ns.Inode))
				}
			}
		}
	}
	for _, p := range s.Procs {
		for _, f := range p.Files {
			if f.Dev != s.NSFSDev || !strings.HasPrefix(f.How, "fd ") {
				continue
			}
			if i, ok := nsByIno[f.Ino]; ok {
				a.Namespaces[i].HeldOpenBy = append(a.Namespaces[i].HeldOpenBy,
					Pin{ProcRef: ProcRef{PID: p.PID, Comm: p.Comm}, MntNS: p.MntNS, How: f.How, Path: linkText(f.ref)})
			}
		}
	}
	for i := range a.Namespaces {
		sort.Strings(a.Namespaces[i].KeptBy)
	}
}

// linkText is where a /proc link points ("" once gone).
func linkText(ref string) string {
	l, _ := os.Readlink(ref)
	return l
}

// PathTarget is the target of the filesystem at path: for a block device
// file, the filesystem on it (its rdev); for anything else, the
// filesystem the path lies on (st_dev: a tmpfs's mount point).
func PathTarget(path string) (Target, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return Target{}, fmt.Errorf("stat %s: %w", path, err)
	}
	if st.Mode&unix.S_IFMT == unix.S_IFBLK {
		return Target{Major: unix.Major(st.Rdev), Minor: unix.Minor(st.Rdev)}, nil
	}
	return Target{Major: unix.Major(st.Dev), Minor: unix.Minor(st.Dev)}, nil
}

// threadNS is the namespace of p's thread tid (p's own if it is not listed).
func (p Proc) threadNS(tid int) uint64 {
	for _, th := range p.Threads {
		if th.TID == tid {
			return th.NS
		}
	}
	return p.MntNS
}

package oracle

import (
	"fmt"
	"strings"
	"time"
)

// FindingFacts is what a finding claims, built by the caller from the
// finding (this package never reads the engine's types).
type FindingFacts struct {
	Line   string    // the finding as logged: printed with a disagreement
	At     time.Time // when the call was made (zero: not known)
	Kind   string    // "failure" or "leak"
	Target Target
	// CallerNS is the namespace of the call (for a leak, the unmount's).
	CallerNS uint64
	Holders  []HolderFacts
	// Unnamed counts holder namespaces the finding only counts ("and N more").
	Unnamed int
	// Paths are where the finding says the object is (its path, the
	// holders' mount points): an anonymous device number (a tmpfs's 0:N)
	// the kernel gave to another filesystem since shows at none of them.
	Paths []string
	// Late is set when the snapshot was taken well after the finding (a
	// log read back): then any device number, a loop device's too, may be
	// another test's since, and is judged as an anonymous one.
	Late bool
}

// HolderFacts is one holder a finding names.
type HolderFacts struct {
	NS       uint64
	Self     bool // the caller's own namespace
	Exited   bool // its last member left: the finding says it is gone
	Detached bool // the copy is detached from the namespace's table
	Members  []int
	// Threads are the members the finding names for one thread of theirs
	// (pid → tid): a thread of its own in another namespace than its
	// process's keeps the holder namespace.
	Threads map[int]int
	Pins    []PinFacts
	Actor   *ActorFacts
}

// PinFacts is a process a finding says pins the object: Pin is "cwd",
// "root", "fd", "map", or "nsfd" (it holds the namespace's file open).
type PinFacts struct {
	PID int
	Pin string
	TID int // the thread, for a thread's own cwd or root (0: the process's)
}

// ActorFacts is the process a finding names to act on, and how it holds:
// Role "pinner" (with Pin), "member" or "mounter".
type ActorFacts struct {
	PID  int
	Role string
	Pin  string
	TID  int // the thread, for a pinner by a thread's own cwd or root (0: the process's)
}

// Compare lists where finding f and the oracle's answer a disagree.
func Compare(f FindingFacts, a Answer) []string {
	d, _ := Check(f, a)
	return d
}

// Check is Compare, with the notes on what was not checkable because the
// state moved (a holder exited, a namespace is gone, the object was
// released before the snapshot).
func Check(f FindingFacts, a Answer) (disagree, moved []string) {
	c := &checker{a: a, released: !a.Held()}
	if a.Target != f.Target {
		c.disagree("the oracle was asked about %s, the finding is about %s", a.Target, f.Target)
	}
	if reused(f, a) {
		return nil, []string{fmt.Sprintf("the device number %s is another filesystem's at the snapshot (mounted at none of the finding's paths, in none of its namespaces)", a.Target)}
	}
	for _, h := range f.Holders {
		c.holder(h)
	}
	c.coverage(f)
	return c.out, c.moved
}

// reused tells an anonymous device number (major 0; any, for a late
// check) given to another filesystem since the finding: the oracle's mounts of it are at none of
// the finding's paths and in none of its holder namespaces.
func reused(f FindingFacts, a Answer) bool {
	if (f.Target.Major != 0 && !f.Late) || len(a.Namespaces) == 0 || len(f.Paths) == 0 {
		return false
	}
	for _, h := range a.Namespaces {
		for _, fh := range f.Holders {
			if fh.NS == h.Inode {
				return false
			}
		}
		for _, p := range h.Points {
			for _, fp := range f.Paths {
				if p == fp {
					return false
				}
			}
		}
	}
	return true
}

// Unheld lists what holds the target outside the allowed namespaces: for
// a control, where nothing may hold it after the teardown. For an
// anonymous device (a tmpfs's 0:N, which the kernel gives to the next
// filesystem once this one is gone) only mounts at paths (where the
// control had it) and pins in them count: another filesystem has the
// number elsewhere.
func Unheld(a Answer, paths []string, allowed ...uint64) []string {
	var out []string
	mine := map[uint64]bool{}
	for _, h := range a.Namespaces {
		if a.Target.Major == 0 && len(paths) > 0 && !anyIn(h.Points, paths) {
			continue
		}
		mine[h.Inode] = true
		if !contains(allowed, h.Inode) {
			out = append(out, fmt.Sprintf("mnt:[%d] has it mounted at %s (members %s)", h.Inode, strings.Join(h.Points, ", "), refs(h.Members)))
		}
	}
	for _, p := range a.Pins {
		if p.Detached || (mine[p.InNS] && !contains(allowed, p.InNS)) {
			out = append(out, "pinned: "+p.String())
		}
	}
	return out
}

func anyIn(ss, set []string) bool {
	for _, s := range ss {
		for _, x := range set {
			if s == x {
				return true
			}
		}
	}
	return false
}

type checker struct {
	a        Answer
	released bool // nothing holds the target at the snapshot
	out      []string
	moved    []string
}

func (c *checker) disagree(format string, args ...any) {
	c.out = append(c.out, fmt.Sprintf(format, args...))
}

// unverifiable notes a claim the moved state no longer shows; with the
// target still held elsewhere it is a disagreement.
func (c *checker) unverifiable(format string, args ...any) {
	if c.released {
		c.moved = append(c.moved, fmt.Sprintf(format, args...)+" (nothing holds the object at the snapshot)")
		return
	}
	c.disagree(format, args...)
}

func (c *checker) holder(h HolderFacts) {
	if h.Exited {
		c.moved = append(c.moved, fmt.Sprintf("holder mnt:[%d] exited (the finding says so)", h.NS))
		return
	}
	for _, p := range h.Pins {
		c.pin(p, h.Detached)
	}
	for _, pid := range h.Members {
		c.member(pid, h.Threads[pid], h.NS)
	}
	if a := h.Actor; a != nil {
		switch a.Role {
		case "pinner":
			c.pin(PinFacts{PID: a.PID, TID: a.TID, Pin: a.Pin}, h.Detached)
		default:
			c.member(a.PID, h.Threads[a.PID], h.NS)
		}
	}
	if h.Detached || h.NS == 0 {
		return
	}
	if _, ok := c.a.Holding(h.NS); ok {
		return
	}
	switch {
	case !c.a.Exists[h.NS]:
		c.moved = append(c.moved, fmt.Sprintf("mnt:[%d] is gone at the snapshot", h.NS))
	case len(h.Pins) > 0 && c.pinsConfirmed(h.Pins):
		// a namespace holding it by pins only (no mount in its table)
	default:
		c.unverifiable("the finding says mnt:[%d] holds %s; the oracle finds no mount of it there", h.NS, c.a.Target)
	}
}

// pin checks a pin the finding names against the oracle's.
func (c *checker) pin(p PinFacts, detached bool) {
	if !c.a.Live[p.PID] {
		c.moved = append(c.moved, fmt.Sprintf("pid %d (%s pin) exited before the snapshot", p.PID, p.Pin))
		return
	}
	if p.Pin == "nsfd" {
		for _, h := range c.a.Namespaces {
			for _, o := range h.HeldOpenBy {
				if o.PID == p.PID {
					return
				}
			}
		}
		c.unverifiable("the finding says pid %d holds a holder namespace's nsfs file open; the oracle finds no such fd", p.PID)
		return
	}
	for _, o := range c.a.Pins {
		if o.PID != p.PID || !pinKind(o.How, p.Pin) || (p.Pin != "nsfd" && o.TID != p.TID && isThreadPin(o.How)) {
			continue
		}
		if detached && !o.Detached {
			c.disagree("the finding says pid %d pins a detached copy (%s); the oracle finds it in mnt:[%d]'s table: %s", p.PID, p.Pin, o.InNS, o)
		}
		return
	}
	c.unverifiable("the finding says pid %d pins %s by its %s; the oracle finds no such pin", p.PID, c.a.Target, p.Pin)
}

// member checks a process named as keeping namespace ns (0: any), by
// its thread tid (0: by its main thread): a process the oracle finds
// there by one thread only must be named for that thread, and a thread
// named must be the one there.
func (c *checker) member(pid, tid int, ns uint64) {
	if !c.a.Live[pid] {
		c.moved = append(c.moved, fmt.Sprintf("pid %d exited before the snapshot", pid))
		return
	}
	for _, h := range c.a.Namespaces {
		if ns != 0 && h.Inode != ns {
			continue
		}
		var threads []string
		for _, m := range h.Members {
			if m.PID == pid && m.TID == tid {
				return
			}
			if m.PID == pid {
				threads = append(threads, m.String())
			}
		}
		if len(threads) > 0 {
			named := "the process"
			if tid != 0 {
				named = fmt.Sprintf("its thread %d", tid)
			}
			c.disagree("the finding names %s of pid %d as keeping mnt:[%d]; the oracle finds %s there", named, pid, h.Inode, strings.Join(threads, ", "))
			return
		}
		for _, o := range h.HeldOpenBy {
			if o.PID == pid {
				return
			}
		}
	}
	for _, o := range c.a.Pins {
		if o.PID == pid {
			return
		}
	}
	c.unverifiable("the finding names pid %d as holding %s in mnt:[%d]; the oracle finds it neither a member of a namespace that has it mounted nor pinning it", pid, c.a.Target, ns)
}

func (c *checker) pinsConfirmed(ps []PinFacts) bool {
	n := len(c.out)
	for _, p := range ps {
		c.pin(p, false)
	}
	ok := len(c.out) == n
	c.out = c.out[:n]
	return ok
}

// coverage: every namespace and detached pin the oracle finds is named or
// counted by the finding (the caller's own namespace is exempt for a leak:
// its copy is the one the unmount removed; another mount of it there is
// not what the leak is about).
func (c *checker) coverage(f FindingFacts) {
	named := map[uint64]bool{}
	pids := map[int]bool{}
	for _, h := range f.Holders {
		named[h.NS] = true
		for _, p := range h.Pins {
			pids[p.PID] = true
		}
		pids = addAll(pids, h.Members)
		if h.Actor != nil {
			pids[h.Actor.PID] = true
		}
	}
	spare := f.Unnamed
	for _, h := range c.a.Namespaces {
		if named[h.Inode] || (f.Kind == "leak" && h.Inode == f.CallerNS) {
			continue
		}
		if spare > 0 {
			spare--
			continue
		}
		c.disagree("the oracle finds mnt:[%d] holding %s at %s (members %s); the finding does not name it",
			h.Inode, c.a.Target, strings.Join(h.Points, ", "), refs(h.Members))
	}
	for _, p := range c.a.Pins {
		if p.Detached && !pids[p.PID] {
			c.disagree("the oracle finds a detached copy of %s pinned by %s; the finding does not name it", c.a.Target, p)
		}
	}
}

func addAll(m map[int]bool, pids []int) map[int]bool {
	for _, p := range pids {
		m[p] = true
	}
	return m
}

// pinKind tells whether the oracle's "fd 3" is the finding's "fd".
func pinKind(how, pin string) bool {
	k, _, _ := strings.Cut(how, " ")
	return k == pin
}

func contains(s []uint64, v uint64) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// isThreadPin tells the pins a thread has of its own (cwd, root): open
// files and mappings are the whole process's.
func isThreadPin(how string) bool { return how == "cwd" || how == "root" }

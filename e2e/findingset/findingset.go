package findingset

import (
	"errors"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/finding"
	"github.com/mntleak/mntleak/procfs"
)

// Objects are what a test made: its paths and devices, and the holder
// namespaces. Every finding that names one of them is the test's.
type Objects struct {
	Paths []string // a device, a mount point, what a teardown removed
	NS    []uint32 // holder namespaces (0: none)
	// IDs are the birth ids of NS, index for index (BirthID; 0 or none:
	// not known). Packages run side by side and the kernel gives a freed
	// namespace inode to the next namespace at once: a holder whose
	// finding names its birth id is the test's namespace only by that id.
	IDs []uint64
}

// id is the birth id of NS[i] (0: not known).
func (o Objects) id(i int) uint64 {
	if i < len(o.IDs) {
		return o.IDs[i]
	}
	return 0
}

// SameNS reports whether a holder in namespace ino born with id (0: not
// known) is the namespace ns born with nsid: by birth id where both are
// known, and always by inode.
func SameNS(ino uint32, id uint64, ns uint32, nsid uint64) bool {
	return ino != 0 && ino == ns && (id == 0 || nsid == 0 || id == nsid)
}

// BirthID returns the id the kernel gave the mount namespace of pid at
// birth (NS_GET_MNTNS_ID), 0 on a kernel without the ioctl; read it while
// the namespace's process runs.
func BirthID(t testing.TB, pid int) uint64 {
	t.Helper()
	_, id, err := procfs.Host{}.MntNSID(pid)
	if err != nil && !errors.Is(err, unix.ENOTTY) && !errors.Is(err, unix.EINVAL) {
		t.Fatalf("birth id of the mount namespace of %d: %v", pid, err)
	}
	return id
}

// Names reports whether f names one of the objects: its object or one it
// names besides (Others), the missing bind source, or a holder, the call's
// namespace or a cited event in one of the namespaces. A finding whose
// holder in the inode of one of the namespaces was born with another id
// is about another namespace that has the inode now: that inode names
// nothing of the test's in it.
func (o Objects) Names(f *finding.Finding) bool {
	if o.heldInAnotherTest(f) {
		return false
	}
	paths := []string{f.Object.Path, f.Object.Source}
	for _, other := range f.Others {
		paths = append(paths, other.Path, other.Source)
	}
	for _, h := range f.Holders {
		paths = append(paths, h.Where)
		paths = append(paths, h.Also...)
	}
	for _, p := range paths {
		if p != "" && slices.Contains(o.Paths, p) {
			return true
		}
	}
	if o.anotherTests(f) {
		return false
	}
	line := f.Line()
	for i, ns := range o.NS {
		if ns == 0 {
			continue
		}
		stranger := false
		for _, h := range f.Holders {
			if SameNS(h.MntNS, h.MntNSID, ns, o.id(i)) {
				return true
			}
			stranger = stranger || h.MntNS == ns
		}
		if !stranger && (f.Call.MntNS == ns || strings.Contains(line, "mnt:["+strconv.FormatUint(uint64(ns), 10)+"]")) {
			return true
		}
	}
	return false
}

// anotherTests reports whether f is about another Go test's mount: its
// object, and every other object it names, lies in a test's temporary
// directory ($TMPDIR/Test…, t.TempDir) that none of the objects' paths
// lie in. Packages run side by side, and a private namespace a test makes
// copies every mount of the node, another package's among them: a finding
// about that mount (its failing call explained by the copy in the test's
// namespace) names the test's namespace and is the other test's.
func (o Objects) anotherTests(f *finding.Finding) bool {
	paths := []string{f.Object.Path}
	for _, other := range f.Others {
		paths = append(paths, other.Path)
	}
	for _, p := range paths {
		dir, ok := testTempDir(p)
		if !ok || slices.ContainsFunc(o.Paths, func(q string) bool { d, ok := testTempDir(q); return ok && d == dir }) {
			return false
		}
	}
	return true
}

// heldInAnotherTest reports whether every holder f names holds its mount
// in a Go test's temporary directory that none of the objects' paths lie
// in: the mount is that test's, though its device may be one of the
// objects' (a loop device another package's test freed a moment before
// this one attached the same number, its failure seen by this test's
// daemon).
func (o Objects) heldInAnotherTest(f *finding.Finding) bool {
	if len(f.Holders) == 0 {
		return false
	}
	for _, h := range f.Holders {
		dir, ok := testTempDir(h.Where)
		if !ok || slices.ContainsFunc(o.Paths, func(q string) bool { d, ok := testTempDir(q); return ok && d == dir }) {
			return false
		}
	}
	return true
}

// testTempDir returns the Go test temporary directory p lies in
// ($TMPDIR/TestName…), and whether it lies in one.
func testTempDir(p string) (string, bool) {
	rest, ok := strings.CutPrefix(p, strings.TrimSuffix(os.TempDir(), "/")+"/")
	if !ok || !strings.HasPrefix(rest, "Test") {
		return "", false
	}
	top, _, _ := strings.Cut(rest, "/")
	return top, true
}

// Of returns the findings of all that name one of the objects.
func (o Objects) Of(all []*finding.Finding) []*finding.Finding {
	var out []*finding.Finding
	for _, f := range all {
		if o.Names(f) {
			out = append(out, f)
		}
	}
	return out
}

// Want is one finding a test must get, all of it: its kind, the call, the
// cause, the process named (pid and role; none for a namespace no process
// runs in) and its namespace, whether the event that made the namespace is
// cited or the namespace is said to be inferred (made before tracing), and
// the process the fix names.
type Want struct {
	Kind     finding.FindingKind
	Syscall  string
	Cause    finding.Cause
	PID      int // 0: no process is named
	Role     string
	NS       uint32
	NSID     uint64 // NS's birth id (0: not known): the holder must have it where it names one
	Inferred bool   // else the event Event in NS is cited
	// Event is the kind of the event in NS the finding must cite: "" the
	// one that made the namespace (unshare, newns_fork); "mount" a mount
	// made there (a Bidirectional mount that propagated, the rbind that
	// copied a hostPath into a container).
	Event string
	// Own: NS is the caller's own namespace, where what it holds was
	// mounted before tracing began: the finding says so (the holder is
	// its own), and no event is cited for NS.
	Own bool
	Fix int // the process the fix names (0: none; a unit to restart, a namespace no process runs in)
}

func (w Want) String() string {
	made := "created by its event"
	switch {
	case w.Inferred:
		made = "inferred"
	case w.Own:
		made = "the caller's own, nothing made there traced"
	case w.Event != "":
		made = "citing the " + w.Event + " made there"
	}
	born := ""
	if w.NSID != 0 {
		born = " born " + strconv.FormatUint(w.NSID, 10)
	}
	return string(w.Kind) + " " + w.Syscall + " " + w.Cause.String() + " naming pid " + strconv.Itoa(w.PID) +
		" (" + w.Role + ") in mnt:[" + strconv.FormatUint(uint64(w.NS), 10) + "]" + born + ", " + made
}

// Option changes what is checked.
type Option func(*config)

type config struct{ remote bool }

// Remote: the findings were made on another machine (a guest), whose
// processes cannot be looked up here: a fix's pids are checked against
// the finding's holders, not against this machine's /proc.
func Remote() Option { return func(c *config) { c.remote = true } }

// Exact checks that got, the findings about a test's objects, are exactly
// want, one each, in any order; each is checked whole (Expect). On a
// count or kind mismatch it prints every finding wanted and got.
func Exact(t testing.TB, got []*finding.Finding, want []Want, opts ...Option) {
	t.Helper()
	used := make([]bool, len(got))
	ok := len(got) == len(want)
	for _, w := range want {
		i := slices.IndexFunc(got, func(f *finding.Finding) bool { return f.Kind == w.Kind && f.Call.Syscall == w.Syscall })
		for i >= 0 && used[i] {
			next := slices.IndexFunc(got[i+1:], func(f *finding.Finding) bool { return f.Kind == w.Kind && f.Call.Syscall == w.Syscall })
			if next < 0 {
				i = -1
				break
			}
			i += 1 + next
		}
		if i < 0 {
			ok = false
			continue
		}
		used[i] = true
		Expect(t, got[i], w, opts...)
	}
	if !ok {
		var b strings.Builder
		for _, w := range want {
			b.WriteString("\n  want " + w.String())
		}
		for _, f := range got {
			b.WriteString("\n  got  " + f.Line())
		}
		t.Errorf("%d findings about the test's objects, want exactly %d:%s", len(got), len(want), b.String())
	}
}

// Expect checks one finding against what the test calls for.
func Expect(t testing.TB, f *finding.Finding, w Want, opts ...Option) {
	t.Helper()
	hd, a := f.Actor()
	switch {
	case f.Cause != w.Cause || hd == nil || !SameNS(hd.MntNS, hd.MntNSID, w.NS, w.NSID) || f.Fix == "":
		t.Errorf("want %s; got %s:\n%s", w, f.Cause, f.Line())
	case w.PID == 0 && a != nil:
		t.Errorf("want %s; names %s[%d] for a namespace no process runs in:\n%s", w, a.Comm, a.PID, f.Line())
	case w.PID != 0 && (a == nil || a.PID != w.PID || a.Role != w.Role):
		t.Errorf("want %s; actor %+v:\n%s", w, a, f.Line())
	}
	switch {
	case w.Inferred && !f.Inferred:
		t.Errorf("a namespace made before tracing, not said to be inferred:\n%s", f.Line())
	case w.Own && !hd.Self:
		t.Errorf("mnt:[%d] is not said to be the caller's own:\n%s", w.NS, f.Line())
	case w.Own:
	case !w.Inferred && w.Event == "" && !CreatedBy(f, w.NS):
		t.Errorf("the event that made mnt:[%d] is not cited: %+v\n%s", w.NS, f.Evidence, f.Line())
	case !w.Inferred && w.Event != "" && !Cites(f, w.NS, w.Event):
		t.Errorf("no %s in mnt:[%d] is cited: %+v\n%s", w.Event, w.NS, f.Evidence, f.Line())
	}
	FixPIDs(t, f, w.Fix, opts...)
}

// procInFix is a process named in a fix: "name[pid]" (not "mnt:[inode]"),
// "nsenter -t PID", "/proc/PID/".
var procInFix = regexp.MustCompile(`([^:\s])\[(\d+)\]|-t (\d+)|/proc/(\d+)/`)

// FixPIDs: every pid a fix names is a live process the finding names as
// holding the object (never one that exited or another program that has
// its pid now; with Remote, not looked up here), and it names the process
// to act on (actor; 0: no process, the fix names none: a namespace no
// process runs in, a unit to restart).
func FixPIDs(t testing.TB, f *finding.Finding, actor int, opts ...Option) {
	t.Helper()
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	named := map[int]bool{}
	for _, h := range f.Holders {
		if !h.Exited.IsZero() {
			continue
		}
		for _, p := range h.Processes {
			named[p.PID] = true
			if p.TID != 0 {
				named[p.TID] = true // a thread named as keeping the namespace: nsenter -t TID
			}
		}
		for _, p := range h.Pins {
			named[p.PID] = true
		}
	}
	inFix := map[int]bool{}
	for _, m := range procInFix.FindAllStringSubmatch(f.Fix, -1) {
		pid, _ := strconv.Atoi(m[2] + m[3] + m[4])
		inFix[pid] = true
		if actor == 0 {
			t.Errorf("the fix names pid %d, want none: %s", pid, f.Fix)
		}
		if !named[pid] {
			t.Errorf("the fix names pid %d, which holds nothing here: %s", pid, f.Fix)
			continue
		}
		if cfg.remote {
			continue
		}
		if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); err != nil {
			t.Errorf("the fix names pid %d, which has exited: %s", pid, f.Fix)
		}
	}
	if actor != 0 && !inFix[actor] {
		t.Errorf("the fix does not name pid %d, the process to act on: %s", actor, f.Fix)
	}
}

// CreatedBy reports whether the finding cites the event that made
// namespace ns (its unshare, or its CLONE_NEWNS child).
func CreatedBy(f *finding.Finding, ns uint32) bool { return Cites(f, ns, "unshare", "newns_fork") }

// Cites reports whether the finding cites an event of one of kinds in
// namespace ns (or naming it).
func Cites(f *finding.Finding, ns uint32, kinds ...string) bool {
	for _, e := range f.Evidence {
		if e.Event != nil && slices.Contains(kinds, e.Event.Kind) &&
			(e.Event.MntNS == ns || strings.Contains(e.Event.Summary, "mnt:["+strconv.Itoa(int(ns))+"]")) {
			return true
		}
	}
	return false
}

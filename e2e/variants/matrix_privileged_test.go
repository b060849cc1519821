package variants

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mntleak/mntleak/e2e/testkit/privtest"

	"github.com/mntleak/mntleak/finding"
)

// How the holder namespace is made.
const (
	byUnshare  = "unshare"  // unshare(CLONE_NEWNS), unshare(1)
	byClone    = "clone"    // clone(CLONE_NEWNS): os/exec with Cloneflags
	bySetns    = "setns"    // its creator exits; the holder joined it with setns (nsenter)
	byPredates = "predates" // made before tracing began
	// unit-style: a slave namespace that binds /tmp from a directory
	// named as systemd names a PrivateTmp=yes unit's
	// (systemd-private-…-NAME.service-…/tmp), made by unshare; systemd
	// does not run here (PID 1 is not systemd). Real systemd units are
	// exercised in the lab's guest (e2e/qemu/: TestLabGuest, 1-privatetmp).
	byUnitStyle = "privatetmp-unit-style"
)

// How the holder keeps the copy.
const (
	member = "member" // a process in the namespace, nothing pinned
	cwd    = "cwd"    // its working directory is in the copy
	fd     = "fd"     // an open file in the copy
	mapped = "map"    // it runs a binary from the copy (a mapping)
	root   = "root"   // chroot into the copy
	child  = "child"  // the process that made it exits; a child stays
	bind   = "bind"   // no process: a bind of its nsfs file keeps it (unshare --mount=FILE)
	nsfd   = "nsfd"   // no process: a process elsewhere holds its nsfs file open
)

// Timings.
const (
	exitsFirst = "exits-first" // the holder exits just before the failure
	recycled   = "recycled"    // its creator exits and another program gets its pid
	forked     = "forked"      // the pinner is forked by a member after tracing began
	joined     = "joined"      // the pinner enters the namespace (setns) after tracing began
)

// cell is one variant of the seed situation.
type cell struct {
	maker, hold, prop string
	timing            string
	tmpfs             bool   // the volume is a tmpfs (an anonymous device), not an ext4 loop device
	userns            bool   // the holder namespace belongs to a user namespace of its own
	nodePrivate       bool   // on the node, the volume sits under a private mount
	copyFlag          string // the holder changed its copy's own propagation after it was made
	rootPrivate       bool   // the holder made its root private (not recursively) after it was made
	churn             string // a churn control: no holder of its own (churn.go)
}

func (c cell) name() string {
	if c.churn != "" {
		return "churn/" + c.churn
	}
	n := c.maker + "/" + c.hold + "/" + c.prop
	for _, s := range []struct {
		on   bool
		what string
	}{{c.userns, "userns"}, {c.tmpfs, "tmpfs"}, {c.nodePrivate, "node-private-parent"}, {c.copyFlag != "", "copy-" + c.copyFlag},
		{c.rootPrivate, "root-made-private"}, {c.timing != "", c.timing}} {
		if s.on {
			n += "/" + s.what
		}
	}
	return n
}

func (c cell) pinned() bool {
	return c.hold == cwd || c.hold == fd || c.hold == mapped || c.hold == root || c.timing == forked || c.timing == joined
}

// reaches: the node's unmount propagates to the holder's copy. The kernel
// looks at the copies under the peers and slaves of the unmounted mount's
// parent, whatever the copy's own flag: the holder's root must receive
// from the node's (slave or shared: in a user namespace, shared is made a
// slave), and the node's parent must propagate.
func (c cell) reaches() bool { return !c.nodePrivate && c.prop != "private" && !c.rootPrivate }

// control: the kernel releases the copy (propagation carries the unmount,
// or the namespace dies with its last process): no finding may be made.
func (c cell) control() bool {
	return c.churn != "" || c.timing == exitsFirst || (c.reaches() && !c.pinned())
}

func cells() []cell {
	var out []cell
	// The seed situation: makers x propagations x holdings, and holders
	// that exit first.
	for _, m := range []string{byUnshare, byClone, bySetns, byPredates} {
		for _, p := range []string{"private", "slave", "shared"} {
			for _, h := range []string{member, cwd, fd, mapped, root, child} {
				out = append(out, cell{maker: m, hold: h, prop: p})
			}
		}
		out = append(out, cell{maker: m, hold: member, prop: "private", timing: exitsFirst})
	}
	// A slave namespace laid out like a PrivateTmp=yes unit's (no
	// systemd: see byUnitStyle); its copy leaks when the volume's parent
	// on the node is private.
	for _, h := range []string{member, cwd} {
		for _, np := range []bool{false, true} {
			out = append(out, cell{maker: byUnitStyle, hold: h, prop: "slave", nodePrivate: np})
		}
	}
	// Holders in a user namespace of their own.
	for _, h := range []string{member, cwd} {
		for _, p := range []string{"private", "slave", "shared"} {
			out = append(out, cell{maker: byUnshare, hold: h, prop: p, userns: true})
		}
		out = append(out, cell{maker: byPredates, hold: h, prop: "private", userns: true})
	}
	// Namespaces no process runs in.
	for _, h := range []string{bind, nsfd} {
		for _, m := range []string{byUnshare, byPredates} {
			for _, p := range []string{"private", "slave"} {
				out = append(out, cell{maker: m, hold: h, prop: p})
			}
		}
	}
	// The creator exits and its pid is another program's by the failure.
	for _, m := range []string{byUnshare, byClone, byPredates} {
		out = append(out, cell{maker: m, hold: member, prop: "private", timing: recycled})
	}
	// The pinner is forked by a member after tracing began (forks are not
	// traced: the last process list does not know it).
	for _, m := range []string{byUnshare, byPredates} {
		for _, p := range []string{"private", "slave"} {
			for _, tmpfs := range []bool{true, false} {
				out = append(out, cell{maker: m, hold: cwd, prop: p, tmpfs: tmpfs, timing: forked})
			}
			// ... or enters it with setns (nsenter), into a namespace made
			// before tracing too.
			out = append(out, cell{maker: m, hold: cwd, prop: p, tmpfs: true, timing: joined})
		}
	}
	// The copy's own flag and its parent's propagation disagree.
	for _, h := range []string{member, cwd} {
		out = append(out,
			cell{maker: byUnshare, hold: h, prop: "slave", copyFlag: "private"},
			cell{maker: byUnshare, hold: h, prop: "shared", copyFlag: "private"},
			cell{maker: byUnshare, hold: h, prop: "private", copyFlag: "shared"},
			cell{maker: byUnshare, hold: h, prop: "slave", rootPrivate: true},
			cell{maker: byUnshare, hold: h, prop: "slave", nodePrivate: true})
	}
	for _, ch := range churns() {
		out = append(out, cell{churn: ch.name})
	}
	return out
}

// TestVariantMatrix builds every cell for real and checks the verdict.
func TestVariantMatrix(t *testing.T) {
	privtest.Require(t)
	privtest.RequireCommands(t, "unshare", "nsenter", "mount", "umount", "mkfs.ext4", "losetup", "busybox", "chroot", "sh", "sleep", "stat", "rmdir")
	all, controls := 0, 0
	for _, c := range cells() {
		all++
		if c.control() {
			controls++
		}
		t.Run(c.name(), func(t *testing.T) { runCell(t, c) })
	}
	t.Logf("%d cells, %d of them no-leak controls", all, controls)
}

// scratch is the cell's directory: under /var/lib for a unit-style cell,
// whose private /tmp would hide one under /tmp.
func scratch(t *testing.T, c cell) string {
	if c.maker != byUnitStyle {
		return t.TempDir()
	}
	dir, err := os.MkdirTemp("/var/lib", "mntleak-variant-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// mountVolume mounts the cell's volume on the node and returns the device
// it is (the mount point for a tmpfs) and where it is mounted.
func mountVolume(t *testing.T, node privtest.Node, c cell, dir string) (string, string) {
	parent := dir
	if c.nodePrivate {
		parent = privtest.Mkdir(t, filepath.Join(dir, "private"))
		node.Run(t, "mount", "--bind", parent, parent)
		node.Run(t, "mount", "--make-private", parent)
	}
	vol := privtest.Mkdir(t, filepath.Join(parent, "vol"))
	if c.tmpfs {
		node.Run(t, "mount", "-t", "tmpfs", "variant", vol)
		return vol, vol
	}
	dev := privtest.LoopDevice(t, 8)
	node.Run(t, "mount", dev, vol)
	node.Run(t, "sh", "-c", "echo data >"+vol+"/file && cp "+busybox(t)+" "+vol+"/busybox")
	return dev, vol
}

func runCell(t *testing.T, c cell) {
	if c.churn != "" {
		runChurn(t, c.churn)
		return
	}
	dir := scratch(t, c)
	node := privtest.StartNode(t)
	dev, vol := mountVolume(t, node, c, dir)
	target := volumeTarget(t, node, dev, vol)
	var l *live
	var m made
	if c.maker == byPredates {
		m = startHolder(t, node, c, dir, vol)
		l = startTracing(t)
	} else {
		l = startTracing(t)
		time.Sleep(100 * time.Millisecond)
		m = startHolder(t, node, c, dir, vol)
	}
	l.holderSeen(t)
	if m.forkNow != nil {
		m.own = m.forkNow()
		m.pid = m.own.PID
		time.Sleep(200 * time.Millisecond)
	}
	if c.timing == recycled {
		m.reap()
		recycle(t, m.member)
		time.Sleep(200 * time.Millisecond)
	}
	umountErr := exec.Command("nsenter", "-t", strconv.Itoa(node.PID), "-m", "--", "umount", vol).Run()
	if c.timing == exitsFirst {
		if m.own == nil {
			t.Fatal("no process of the cell to end first")
		}
		if err := m.own.Kill(); err != nil {
			t.Fatal(err)
		}
		waitGone(t, m.pid)
		time.Sleep(200 * time.Millisecond)
	}
	mkfs := func() error {
		return exec.Command("nsenter", "-t", strconv.Itoa(node.PID), "-m", "--", "mkfs.ext4", "-q", "-F", dev).Run()
	}
	objs := objects{paths: []string{dev, vol}, ns: []uint32{m.ns}, ids: []uint64{m.id}}
	switch {
	case c.reaches() && c.pinned():
		// The unmount propagates to a copy that is busy: it fails.
		if umountErr == nil {
			t.Fatalf("umount of %s succeeded with a busy copy", vol)
		}
		l.settle(t, false)
		exactFindings(t, l.all(), objs, []expected{{kind: finding.KindFailure, syscall: "umount2", cause: finding.CauseBusyCopy,
			holder: m.holder, role: finding.RolePinner, inferred: c.maker == byPredates, fix: m.holder.pid}})
	case c.control():
		if umountErr != nil {
			t.Fatalf("umount of %s: %v", vol, umountErr)
		}
		if !c.tmpfs {
			if err := mkfs(); err != nil {
				t.Fatalf("mkfs.ext4 after the copy went: %v", err)
			}
		}
		control(t, l, objs)
		l.oracle.Control(t, target, []string{vol})
	default:
		if umountErr != nil {
			t.Fatalf("umount of %s: %v", vol, umountErr)
		}
		want := leak(t, c, m, mkfs)
		l.settle(t, false)
		exactFindings(t, l.all(), objs, want)
		for _, f := range l.about(dev, vol) {
			verdict(t, c, m, f)
		}
	}
}

// leak makes a leak cell's failure (mkfs.ext4 on the device its copy
// keeps: it fails), and returns the findings the cell must produce: the
// leak the node's unmount left (a namespace with processes), the failure
// (a device: a tmpfs has none).
func leak(t *testing.T, c cell, m made, mkfs func() error) []expected {
	noProcess := c.hold == bind || c.hold == nsfd
	cause := finding.CauseUnshare
	switch {
	case c.maker == byUnitStyle:
		cause = finding.CausePrivateTmp
	case noProcess && c.maker == byPredates:
		cause = finding.CauseUnknown // nothing says who made it
	}
	role := finding.RoleMember
	if c.pinned() || c.hold == nsfd {
		role = finding.RolePinner
	}
	if c.hold == bind {
		role = ""
	}
	// The fix stops (or restarts) the namespace: it names its process (a
	// pinner forked or entered later: the member it was made with, "and
	// the processes in" it), the one holding it open, or for a unit the
	// unit; no process for a namespace no process runs in.
	fix := m.holder.pid
	switch {
	case c.maker == byUnitStyle || c.hold == bind:
		fix = 0
	case c.timing == forked || c.timing == joined:
		fix = m.member
	}
	one := expected{kind: finding.KindLeak, syscall: "umount2", cause: cause, holder: m.holder, role: role, inferred: c.maker == byPredates, fix: fix}
	var want []expected
	if !noProcess { // a namespace no process runs in: the failure explains it
		want = append(want, one)
	}
	if !c.tmpfs { // nothing fails on a tmpfs: the leak is confirmed once settled
		if err := mkfs(); err == nil {
			t.Fatal("mkfs.ext4 succeeded on a device a copy keeps mounted")
		}
		one.kind, one.syscall = finding.KindFailure, "openat"
		want = append(want, one)
	}
	return want
}

// verdict checks what else a finding of a leak cell must say: a bind's
// namespace is named by the bind that keeps it; a slave namespace is not
// told to use slave propagation; the private root is pointed at; the pid
// another program has now is not named.
func verdict(t *testing.T, c cell, m made, f *finding.Finding) {
	t.Helper()
	if c.hold == bind && (len(f.Holders) == 0 || !strings.Contains(f.Holders[0].KeptBy, "bind of its nsfs file")) {
		t.Errorf("want mnt:[%d] kept by its bind:\n%s", m.ns, f.Line())
	}
	slave := c.prop != "private"
	if slave && strings.Contains(f.Fix, "with slave propagation") {
		t.Errorf("a slave namespace is told to use slave propagation: %s", f.Fix)
	}
	if c.rootPrivate && !strings.Contains(f.Fix, "was made private in mnt:["+strconv.Itoa(int(m.ns))+"]") {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(m.pid) + "/mountinfo")
		t.Errorf("the fix does not point at the private mount in the holder mnt:[%d]:\n%s\n%s", m.ns, f.Line(), b)
	}
	if c.timing == recycled {
		if strings.Contains(f.Line(), "impostor") || strings.Contains(f.Fix, "["+strconv.Itoa(m.member)+"]") {
			t.Errorf("names pid %d, which another program has now:\n%s", m.member, f.Line())
		}
	}
}

package variants

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mntleak/mntleak/correlate"
	"github.com/mntleak/mntleak/internal/privtest"
)

// How the holder namespace is made.
const (
	byUnshare  = "unshare"  // unshare(CLONE_NEWNS), unshare(1)
	byClone    = "clone"    // clone(CLONE_NEWNS): os/exec with Cloneflags
	bySetns    = "setns"    // its creator exits; the holder joined it with setns (nsenter)
	byPredates = "predates" // made before tracing began
	bySystemd  = "systemd"  // a unit's slave namespace with PrivateTmp=yes (MountFlags=slave)
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
	// A systemd unit's slave namespace (PrivateTmp=yes); its copy leaks
	// when the volume's parent on the node is private.
	for _, h := range []string{member, cwd} {
		for _, np := range []bool{false, true} {
			out = append(out, cell{maker: bySystemd, hold: h, prop: "slave", nodePrivate: np})
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

// scratch is the cell's directory: under /var/lib for a PrivateTmp cell,
// whose private /tmp would hide one under /tmp.
func scratch(t *testing.T, c cell) string {
	if c.maker != bySystemd {
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
	time.Sleep(300 * time.Millisecond)
	if m.forkNow != nil {
		m.pid = m.forkNow()
		time.Sleep(200 * time.Millisecond)
	}
	if c.timing == recycled {
		m.reap()
		recycle(t, m.member)
		time.Sleep(200 * time.Millisecond)
	}
	umountErr := exec.Command("nsenter", "-t", strconv.Itoa(node.PID), "-m", "--", "umount", vol).Run()
	if c.timing == exitsFirst {
		_ = syscall.Kill(m.pid, syscall.SIGKILL)
		waitGone(t, m.pid)
		time.Sleep(200 * time.Millisecond)
	}
	mkfs := func() error {
		return exec.Command("nsenter", "-t", strconv.Itoa(node.PID), "-m", "--", "mkfs.ext4", "-q", "-F", dev).Run()
	}
	switch {
	case c.reaches() && c.pinned():
		// The unmount propagates to a copy that is busy: it fails.
		if umountErr == nil {
			t.Fatalf("umount of %s succeeded with a busy copy", vol)
		}
		f := l.wait(dev, vol, 5*time.Second, func(f *correlate.Finding) bool {
			return f.Kind == correlate.KindFailure && f.Call.Syscall == "umount2"
		})
		check(t, f, correlate.CauseBusyCopy, m.holder, correlate.RolePinner)
	case c.control():
		if umountErr != nil {
			t.Fatalf("umount of %s: %v", vol, umountErr)
		}
		if !c.tmpfs {
			if err := mkfs(); err != nil {
				t.Fatalf("mkfs.ext4 after the copy went: %v", err)
			}
		}
		time.Sleep(500 * time.Millisecond)
		for _, f := range l.about(dev, vol) {
			if f.Kind != correlate.KindLeak || c.timing != exitsFirst { // a leak that formed before its holder exited is real
				t.Errorf("finding in a control: %s", f.Line())
			}
		}
		l.oracle.Control(t, target, []string{vol})
	default:
		if umountErr != nil {
			t.Fatalf("umount of %s: %v", vol, umountErr)
		}
		leak(t, l, c, m, dev, vol, mkfs)
	}
}

// leak checks a cell whose copy stays: the leak finding (a namespace with
// processes), and the failure of mkfs.ext4 on the device it keeps.
func leak(t *testing.T, l *live, c cell, m made, dev, vol string, mkfs func() error) {
	noProcess := c.hold == bind || c.hold == nsfd
	cause := correlate.CauseUnshare
	switch {
	case c.maker == bySystemd:
		cause = correlate.CausePrivateTmp
	case noProcess && c.maker == byPredates:
		cause = correlate.CauseUnknown // nothing says who made it
	}
	role := correlate.RoleMember
	if c.pinned() || c.hold == nsfd {
		role = correlate.RolePinner
	}
	if c.tmpfs {
		privtest.AfterLeakSettle(t) // nothing fails on a tmpfs: the leak is confirmed once settled
	} else {
		if err := mkfs(); err == nil {
			t.Fatal("mkfs.ext4 succeeded on a device a copy keeps mounted")
		}
		f := l.wait(dev, vol, 5*time.Second, func(f *correlate.Finding) bool {
			return f.Kind == correlate.KindFailure && f.Call.Syscall == "openat"
		})
		verdict(t, c, m, f, cause, role)
	}
	if noProcess {
		return // not live when the node unmounted: the failure explains it
	}
	lk := l.wait(dev, vol, 3*time.Second, func(f *correlate.Finding) bool { return f.Kind == correlate.KindLeak })
	if lk == nil {
		for _, f := range l.about(dev, vol) {
			t.Log(f.Line())
		}
		t.Fatalf("no leak finding when the node unmounted %s", vol)
	}
	verdict(t, c, m, lk, cause, role)
}

// verdict checks one finding of a leak cell: cause, the process named and
// its namespace, the leaking event, a fix that fits.
func verdict(t *testing.T, c cell, m made, f *correlate.Finding, cause correlate.Cause, role string) {
	t.Helper()
	if c.hold == bind {
		if f == nil || f.Cause != cause || len(f.Holders) == 0 || f.Holders[0].MntNS != m.ns ||
			!strings.Contains(f.Holders[0].KeptBy, "bind of its nsfs file") {
			t.Fatalf("want %s naming mnt:[%d] kept by its bind: %v", cause, m.ns, f)
		}
		if _, a := f.Actor(); a != nil {
			t.Errorf("names %s[%d] for a namespace no process runs in:\n%s", a.Comm, a.PID, f.Line())
		}
	} else {
		check(t, f, cause, m.holder, role)
	}
	if f == nil {
		return
	}
	switch {
	case c.maker == byPredates && !f.Inferred:
		t.Errorf("a namespace made before tracing, not said to be inferred:\n%s", f.Line())
	case c.maker != byPredates && !createdBy(f, m.ns):
		t.Errorf("the event that made mnt:[%d] is not cited: %+v", m.ns, f.Evidence)
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

package variants

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/mntleak/mntleak/correlate"
	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/internal/privtest"
	"github.com/mntleak/mntleak/procfs"
	"github.com/mntleak/mntleak/tracer"
)

// How the holder namespace is made.
const (
	byUnshare  = "unshare"  // unshare(CLONE_NEWNS), unshare(1)
	byClone    = "clone"    // clone(CLONE_NEWNS): os/exec with Cloneflags
	bySetns    = "setns"    // its creator exits; the holder joined it with setns
	byPredates = "predates" // made before tracing began
)

// How the holder keeps the copy.
const (
	member = "member" // a process in the namespace, nothing pinned
	cwd    = "cwd"    // its working directory is in the copy
	fd     = "fd"     // an open file in the copy
	mapped = "map"    // it runs a binary from the copy (a mapping)
	root   = "root"   // chroot into the copy
	child  = "child"  // the process that made it exits; a child stays
)

// cell is one variant: maker × holding × propagation, or a holder that
// exits just before the failure.
type cell struct {
	maker, hold, prop string
	exitsFirst        bool
}

func (c cell) name() string {
	n := c.maker + "/" + c.hold + "/" + c.prop
	if c.exitsFirst {
		n += "/exits-first"
	}
	return n
}

func (c cell) pinned() bool { return c.hold != member && c.hold != child }

// control: the kernel releases the copy (propagation carries the unmount,
// or the namespace dies with its last process): no finding may be made.
func (c cell) control() bool { return c.exitsFirst || (c.prop != "private" && !c.pinned()) }

func cells() []cell {
	var out []cell
	for _, m := range []string{byUnshare, byClone, bySetns, byPredates} {
		for _, p := range []string{"private", "slave", "shared"} {
			for _, h := range []string{member, cwd, fd, mapped, root, child} {
				out = append(out, cell{maker: m, hold: h, prop: p})
			}
		}
		out = append(out, cell{maker: m, hold: member, prop: "private", exitsFirst: true})
	}
	return out
}

// TestVariantMatrix builds every cell for real and checks the verdict.
func TestVariantMatrix(t *testing.T) {
	privtest.Require(t)
	privtest.RequireCommands(t, "unshare", "nsenter", "mount", "umount", "mkfs.ext4", "losetup", "busybox", "chroot", "sh", "sleep")
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

// live is a tracer and a correlator running for one cell.
type live struct {
	mu       sync.Mutex
	findings []*correlate.Finding
	stop     func()
}

func startTracing(t *testing.T) *live {
	t.Helper()
	l := &live{}
	corr := correlate.New(procfs.Host{}, correlate.Options{}, func(f *correlate.Finding) {
		l.mu.Lock()
		l.findings = append(l.findings, f)
		l.mu.Unlock()
	})
	tr, err := tracer.New(tracer.Config{Sink: func(ev *event.Event) { corr.Handle(ev) }}, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := corr.Start(); err != nil {
		tr.Close()
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- tr.Run(ctx) }()
	l.stop = func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
		corr.Flush()
		tr.Close()
	}
	t.Cleanup(func() {
		if l.stop != nil {
			l.stop()
		}
	})
	return l
}

// about returns the findings on the cell's device or mount point.
func (l *live) about(dev, vol string) []*correlate.Finding {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []*correlate.Finding
	for _, f := range l.findings {
		if f.Object.Path == dev || f.Object.Path == vol {
			out = append(out, f)
		}
	}
	return out
}

// wait returns the first finding about the cell that match accepts.
func (l *live) wait(dev, vol string, d time.Duration, match func(*correlate.Finding) bool) *correlate.Finding {
	var found *correlate.Finding
	privtest.Poll(d, func() bool {
		for _, f := range l.about(dev, vol) {
			if match(f) {
				found = f
				return true
			}
		}
		return false
	})
	return found
}

type holder struct {
	pid int
	ns  uint32
}

// body is the holder's script: it records the pid to check, says ready,
// and holds the copy of vol the way the cell says.
func body(c cell, vol, pidfile string) string {
	ready := "echo $$ >" + pidfile + " && echo ready && "
	switch c.hold {
	case cwd:
		return "cd " + vol + " && " + ready + "exec sleep 600"
	case fd:
		return "exec 3<" + vol + "/file && " + ready + "exec sleep 600"
	case mapped:
		return ready + "exec " + vol + "/busybox sleep 600"
	case root:
		return ready + "exec chroot " + vol + " /busybox sleep 600"
	case child:
		return "sleep 600 </dev/null >/dev/null 2>&1 & echo $! >" + pidfile + " && echo ready"
	}
	return ready + "exec sleep 600"
}

// startHolder makes the holder namespace inside the node the cell's way.
func startHolder(t *testing.T, node privtest.Node, c cell, vol string) holder {
	t.Helper()
	pidfile := filepath.Join(t.TempDir(), "pid")
	in := []string{"nsenter", "-t", strconv.Itoa(node.PID), "-m", "--"}
	var cmd *exec.Cmd
	switch c.maker {
	case byClone:
		cmd = exec.Command(in[0], append(in[1:], os.Args[0])...)
		cmd.Env = append(os.Environ(), cloneEnv+"=mount --make-r"+c.prop+" / && "+body(c, vol, pidfile))
	case bySetns:
		first := run(t, exec.Command(in[0], append(in[1:], "unshare", "-m", "--propagation", c.prop, "sh", "-c", "echo ready && exec sleep 600")...))
		cmd = exec.Command("nsenter", "-t", strconv.Itoa(first.Process.Pid), "-m", "--", "sh", "-c", body(c, vol, pidfile))
		defer func() { // the creator exits: the joiner keeps the namespace
			_ = first.Process.Kill()
			_ = first.Wait()
		}()
	default:
		cmd = exec.Command(in[0], append(in[1:], "unshare", "-m", "--propagation", c.prop, "sh", "-c", body(c, vol, pidfile))...)
	}
	run(t, cmd)
	b, err := os.ReadFile(pidfile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	return holder{pid: pid, ns: privtest.MountNS(t, strconv.Itoa(pid))}
}

// run starts cmd, waits for its "ready" line, and kills it at cleanup.
func run(t *testing.T, cmd *exec.Cmd) *exec.Cmd {
	t.Helper()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "ready" {
		t.Fatalf("holder %v: %q %v", cmd.Args, line, err)
	}
	return cmd
}

func runCell(t *testing.T, c cell) {
	dir := t.TempDir()
	dev := privtest.LoopDevice(t, 8)
	vol := privtest.Mkdir(t, filepath.Join(dir, "vol"))
	node := privtest.StartNode(t)
	node.Run(t, "mount", dev, vol)
	node.Run(t, "sh", "-c", "echo data >"+vol+"/file && cp "+busybox(t)+" "+vol+"/busybox")
	var l *live
	var h holder
	if c.maker == byPredates {
		h = startHolder(t, node, c, vol)
		l = startTracing(t)
	} else {
		l = startTracing(t)
		time.Sleep(100 * time.Millisecond)
		h = startHolder(t, node, c, vol)
	}
	time.Sleep(300 * time.Millisecond)
	umount := exec.Command("nsenter", "-t", strconv.Itoa(node.PID), "-m", "--", "umount", vol)
	umountErr := umount.Run()
	if c.exitsFirst {
		_ = syscall.Kill(h.pid, syscall.SIGKILL)
		privtest.WaitFor(t, 5*time.Second, "holder gone", func() bool { // a zombie has left its namespaces
			_, err := os.Readlink("/proc/" + strconv.Itoa(h.pid) + "/ns/mnt")
			return err != nil
		})
		time.Sleep(200 * time.Millisecond)
	}
	switch {
	case c.prop != "private" && c.pinned():
		// The unmount propagates to a copy that is busy: it fails.
		if umountErr == nil {
			t.Fatalf("umount of %s succeeded with a busy %s copy", vol, c.prop)
		}
		f := l.wait(dev, vol, 5*time.Second, func(f *correlate.Finding) bool {
			return f.Kind == correlate.KindFailure && f.Call.Syscall == "umount2"
		})
		check(t, f, correlate.CauseBusyCopy, h, correlate.RolePinner)
	case c.control():
		if umountErr != nil {
			t.Fatalf("umount of %s: %v", vol, umountErr)
		}
		mkfs := exec.Command("nsenter", "-t", strconv.Itoa(node.PID), "-m", "--", "mkfs.ext4", "-q", "-F", dev)
		if out, err := mkfs.CombinedOutput(); err != nil {
			t.Fatalf("mkfs.ext4 after the copy went: %v %s", err, out)
		}
		time.Sleep(500 * time.Millisecond)
		for _, f := range l.about(dev, vol) {
			if f.Kind != correlate.KindLeak || !c.exitsFirst { // a leak that formed before its holder exited is real
				t.Errorf("finding in a control: %s", f.Line())
			}
		}
	default:
		if umountErr != nil {
			t.Fatalf("umount of %s: %v", vol, umountErr)
		}
		mkfs := exec.Command("nsenter", "-t", strconv.Itoa(node.PID), "-m", "--", "mkfs.ext4", "-q", "-F", dev)
		if err := mkfs.Run(); err == nil {
			t.Fatal("mkfs.ext4 succeeded on a device a private copy keeps mounted")
		}
		f := l.wait(dev, vol, 5*time.Second, func(f *correlate.Finding) bool {
			return f.Kind == correlate.KindFailure && f.Call.Syscall == "openat"
		})
		role := correlate.RoleMember
		if c.pinned() {
			role = correlate.RolePinner
		}
		check(t, f, correlate.CauseUnshare, h, role)
		if leak := l.wait(dev, vol, time.Second, func(f *correlate.Finding) bool { return f.Kind == correlate.KindLeak }); leak == nil {
			t.Errorf("no leak finding when the node unmounted %s", vol)
		} else if leak.Cause != correlate.CauseUnshare {
			t.Errorf("leak: %s", leak.Line())
		}
	}
}

// check asserts the verdict: cause, the process named, its namespace.
func check(t *testing.T, f *correlate.Finding, cause correlate.Cause, h holder, role string) {
	t.Helper()
	if f == nil {
		t.Fatalf("no finding; want %s naming pid %d in mnt:[%d]", cause, h.pid, h.ns)
	}
	hd, a := f.Actor()
	if f.Cause != cause || a == nil || a.PID != h.pid || a.Role != role || hd.MntNS != h.ns || f.Fix == "" {
		t.Errorf("want %s naming pid %d (%s) in mnt:[%d]; got %s, actor %+v:\n%s", cause, h.pid, role, h.ns, f.Cause, a, f.Line())
	}
}

func busybox(t *testing.T) string {
	p, err := exec.LookPath("busybox")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

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

	"github.com/mntleak/mntleak/e2e/findingset"
	"github.com/mntleak/mntleak/e2e/testkit/privtest"
)

// made is a holder namespace as a cell made it: the process the verdict
// must name, the processes to act on in the cell's timing, and its
// namespace.
type made struct {
	holder                         // the process to name, and the namespace
	member  int                    // the process the namespace was made with (creator or oldest)
	files   string                 // the cell's scratch directory
	forkNow func() *privtest.Owned // forked, joined: make the pinner now
	keeper  *exec.Cmd
	own     *privtest.Owned // pid's process, killed by its pidfd (at cleanup too)
	reap    func()          // recycled: kill the creator and reap it (a zombie keeps its pid)  // bind / nsfd: what keeps the namespace (nsfd: a process)
}

// body is the holder's script: it records the pid to check, says ready,
// and holds the copy of vol the way the cell says.
func body(c cell, vol, files string) string {
	pidfile := filepath.Join(files, "pid")
	pre := ""
	if c.copyFlag != "" {
		pre += "mount --make-" + c.copyFlag + " " + vol + " && "
	}
	if c.rootPrivate {
		pre += "mount --make-private / && "
	}
	if c.maker == byUnitStyle {
		// Laid out as systemd does for PrivateTmp=yes: /tmp is a bind of
		// the unit's private directory (no systemd runs it).
		pre += "mkdir -p " + files + "/tmp/systemd-private-0123456789abcdef0123456789abcdef-mntleak-variant.service-AbCdEf/tmp && " +
			"mount --bind " + files + "/tmp/systemd-private-0123456789abcdef0123456789abcdef-mntleak-variant.service-AbCdEf/tmp /tmp && "
	}
	ready := "echo $$ >" + pidfile + " && echo $$ >" + files + "/member && echo ready && "
	switch {
	case c.timing == recycled:
		// The creator, and a child that keeps the namespace once it exits.
		return pre + "sleep 600 </dev/null >/dev/null 2>&1 & echo $! >" + pidfile + " && echo $$ >" + files + "/member && echo ready && exec sleep 600"
	case c.timing == forked:
		// A member that forks the pinner when told to, after tracing began.
		return pre + "echo $$ >" + files + "/member && echo ready && while [ ! -e " + files + "/go ]; do sleep 0.05; done; " +
			"(cd " + vol + " && exec sleep 600) & echo $! >" + files + "/pid.tmp && mv " + files + "/pid.tmp " + pidfile + " && exec sleep 600"
	}
	if c.timing == joined {
		return pre + ready + "exec sleep 600" // the pinner enters later
	}
	switch c.hold {
	case cwd:
		return pre + "cd " + vol + " && " + ready + "exec sleep 600"
	case fd:
		return pre + "exec 3<" + vol + "/file && " + ready + "exec sleep 600"
	case mapped:
		return pre + ready + "exec " + vol + "/busybox sleep 600"
	case root:
		return pre + ready + "exec chroot " + vol + " /busybox sleep 600"
	case child:
		return pre + "sleep 600 </dev/null >/dev/null 2>&1 & echo $! >" + pidfile + " && echo $$ >" + files + "/member && echo ready"
	case bind:
		return pre + "echo ready"
	}
	return pre + ready + "exec sleep 600"
}

// startHolder makes the holder namespace inside the node the cell's way.
func startHolder(t *testing.T, node privtest.Node, c cell, dir, vol string) made {
	t.Helper()
	files, err := os.MkdirTemp(dir, "holder-") // outside /tmp for a PrivateTmp holder: it hides /tmp
	if err != nil {
		t.Fatal(err)
	}
	in := []string{"nsenter", "-t", strconv.Itoa(node.PID), "-m", "--"}
	unshare := []string{"unshare", "-m", "--propagation", c.prop}
	if c.userns {
		unshare = []string{"unshare", "-U", "-r", "-m", "--propagation", c.prop}
	}
	var cmd *exec.Cmd
	switch {
	case c.hold == bind:
		// No process: the namespace is kept by a bind of its nsfs file
		// (ip netns add, unshare --mount=FILE), made in the host's
		// namespace in a private mount of its own: the kernel refuses to
		// bind a namespace into one whose id is not below it (a loop
		// guard), and the host's is the first; a bind that would
		// propagate is refused too.
		ns := filepath.Join(files, "ns")
		if err := os.WriteFile(ns, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		privtest.Run(t, "mount", "--bind", files, files)
		t.Cleanup(func() { _ = exec.Command("umount", "-l", files).Run() })
		privtest.Run(t, "mount", "--make-private", files)
		maker := run(t, exec.Command(in[0], append(append(in[1:], unshare...), "sh", "-c", body(c, vol, files)+" && exec sleep 600")...))
		id := findingset.BirthID(t, maker.Process.Pid)
		privtest.Run(t, "mount", "--bind", "/proc/"+strconv.Itoa(maker.Process.Pid)+"/ns/mnt", ns)
		t.Cleanup(func() { _ = exec.Command("umount", ns).Run() })
		_ = maker.Process.Kill()
		_ = maker.Wait()
		var st syscall.Stat_t
		if err := syscall.Stat(ns, &st); err != nil {
			t.Fatal(err)
		}
		return made{holder: holder{ns: uint32(st.Ino), id: id}, files: files}
	case c.maker == byClone:
		cmd = exec.Command(in[0], append(in[1:], os.Args[0])...)
		cmd.Env = append(os.Environ(), cloneEnv+"=mount --make-r"+c.prop+" / && "+body(c, vol, files))
	case c.maker == bySetns:
		first := run(t, exec.Command(in[0], append(append(in[1:], unshare...), "sh", "-c", "echo ready && exec sleep 600")...))
		cmd = exec.Command("nsenter", "-t", strconv.Itoa(first.Process.Pid), "-m", "--", "sh", "-c", body(c, vol, files))
		if c.userns {
			cmd = exec.Command("nsenter", "-t", strconv.Itoa(first.Process.Pid), "-U", "-m", "--preserve-credentials", "--", "sh", "-c", body(c, vol, files))
		}
		defer func() { // the creator exits: the joiner keeps the namespace
			_ = first.Process.Kill()
			_ = first.Wait()
		}()
	default:
		cmd = exec.Command(in[0], append(append(in[1:], unshare...), "sh", "-c", body(c, vol, files))...)
	}
	started := run(t, cmd)
	m := made{files: files, member: readPID(t, filepath.Join(files, "member"))}
	m.reap = func() {
		_ = syscall.Kill(m.member, syscall.SIGKILL)
		if started.Process.Pid == m.member {
			_ = started.Wait() // its parent is this test: reaped here
		}
		waitGone(t, m.member)
	}
	if c.timing == forked {
		m.forkNow = func() *privtest.Owned {
			if err := os.WriteFile(filepath.Join(files, "go"), nil, 0o600); err != nil {
				t.Fatal(err)
			}
			privtest.WaitFor(t, 5*time.Second, "the forked pinner", func() bool {
				_, err := os.Stat(filepath.Join(files, "pid"))
				return err == nil
			})
			return privtest.Own(t, readPID(t, filepath.Join(files, "pid")))
		}
		m.ns, m.id = privtest.MountNS(t, strconv.Itoa(m.member)), findingset.BirthID(t, m.member)
		return m
	}
	if c.timing == joined {
		// The pinner enters the namespace (setns) after tracing began.
		m.forkNow = func() *privtest.Owned {
			pinner := run(t, exec.Command("nsenter", "-t", strconv.Itoa(m.member), "-m", "--", "sh", "-c", "cd "+vol+" && echo ready && exec sleep 600"))
			return privtest.Own(t, pinner.Process.Pid)
		}
		m.ns, m.id = privtest.MountNS(t, strconv.Itoa(m.member)), findingset.BirthID(t, m.member)
		return m
	}
	m.own = privtest.Own(t, readPID(t, filepath.Join(files, "pid")))
	m.pid = m.own.PID
	m.ns, m.id = privtest.MountNS(t, strconv.Itoa(m.pid)), findingset.BirthID(t, m.pid)
	if c.hold == nsfd {
		// A process of the node holds the namespace open; its processes go.
		m.keeper = run(t, exec.Command(in[0], append(in[1:], "sh", "-c", "exec 7</proc/"+strconv.Itoa(m.pid)+"/ns/mnt && echo ready && exec sleep 600")...))
		if err := m.own.Kill(); err != nil {
			t.Fatal(err)
		}
		waitGone(t, m.pid)
		m.holder = holder{pid: m.keeper.Process.Pid, ns: m.ns, id: m.id}
	}
	return m
}

func readPID(t *testing.T, file string) int {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// waitGone waits until pid has left its namespaces (a zombie has).
func waitGone(t *testing.T, pid int) {
	t.Helper()
	privtest.WaitFor(t, 5*time.Second, "process "+strconv.Itoa(pid)+" gone", func() bool {
		_, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/ns/mnt")
		return err != nil
	})
}

// recycle gives pid to a new, unrelated process (a copy of sleep named
// impostor, in mntleak's own namespace), through ns_last_pid; it is killed
// at cleanup.
//
// Writing ns_last_pid moves the whole node's pid cursor back: the other
// packages' tests then get pids freed moments ago, which a test of theirs
// that remembers a pid may take for its own process. The cursor goes back
// where it was as soon as the impostor has its pid.
func recycle(t *testing.T, pid int) {
	t.Helper()
	impostor := privtest.CopyBinary(t, "sleep", filepath.Join(t.TempDir(), "impostor"))
	const cursor = "/proc/sys/kernel/ns_last_pid"
	b, err := os.ReadFile(cursor)
	if err != nil {
		t.Fatal(err)
	}
	if last, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
		defer func() {
			if err := os.WriteFile(cursor, []byte(strconv.Itoa(last)), 0o644); err != nil {
				t.Error(err)
			}
		}()
	}
	for range 200 {
		if err := os.WriteFile(cursor, []byte(strconv.Itoa(pid-1)), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(impostor, "600")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		})
		if cmd.Process.Pid == pid {
			return
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
	t.Fatalf("could not give pid %d to another process", pid)
}

// run starts cmd, waits for its "ready" line, and kills it at cleanup.
func run(t *testing.T, cmd *exec.Cmd) *exec.Cmd {
	t.Helper()
	privtest.StartReady(t, cmd, 10*time.Second)
	return cmd
}

func busybox(t *testing.T) string {
	p, err := exec.LookPath("busybox")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

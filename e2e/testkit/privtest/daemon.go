package privtest

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The mntleak binary, built once per test process into binDir, which Main
// removes.
var (
	buildOnce sync.Once
	binDir    string
	binPath   string
	buildErr  error
)

// moduleRoot is the repository's top directory (this file's ../../..).
func moduleRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

// Binary returns the real mntleak binary, built once per test process;
// with the race detector when the tests run under it, so a race in the
// daemon fails the test that started it (Daemon.Stop).
func Binary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "mntleak-testbin-")
		if buildErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "mntleak")
		args := []string{"build", "-o", binPath}
		if raceEnabled {
			args = append(args, "-race")
		}
		cmd := exec.Command("go", append(args, "./cmd/mntleak")...)
		cmd.Dir = moduleRoot()
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	})
	if buildErr != nil {
		t.Fatalf("build mntleak: %v", buildErr)
	}
	return binPath
}

// Main runs a package's tests, then removes the binary Binary built. A
// package that starts the daemon calls it from TestMain. (Whether the
// whole run left anything behind is checked once, after every package:
// cmd/mntleak-leftovers, from make test.)
func Main(m *testing.M) int {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	return code
}

// Lines collects a stream line by line (a daemon's stderr) and is read
// safely meanwhile.
type Lines struct {
	mu  sync.Mutex
	buf []string
}

// Collect reads r until it ends.
func (l *Lines) Collect(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		l.mu.Lock()
		l.buf = append(l.buf, sc.Text())
		l.mu.Unlock()
	}
}

// All returns the lines collected so far.
func (l *Lines) All() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.buf...)
}

// Find returns the first line collected so far that matches.
func (l *Lines) Find(match func(string) bool) (string, bool) {
	for _, s := range l.All() {
		if match(s) {
			return s, true
		}
	}
	return "", false
}

// Wait waits up to 15s for a line that matches and returns it; it fails
// the test, naming what was awaited, when none came.
func (l *Lines) Wait(t testing.TB, what string, match func(string) bool) string {
	t.Helper()
	var got string
	WaitFor(t, 15*time.Second, what, func() bool {
		var ok bool
		got, ok = l.Find(match)
		return ok
	})
	return got
}

// Poll reports whether cond became true within d, checking it every 20ms.
func Poll(d time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(d); ; time.Sleep(20 * time.Millisecond) {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

// WaitFor is Poll that fails the test, naming what it waited for.
func WaitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	if !Poll(d, cond) {
		t.Fatalf("no %s within %v", what, d)
	}
}

// Daemon is a `mntleak trace` started by a test.
type Daemon struct {
	Cmd  *exec.Cmd
	Logs Lines // stderr, the daemon's log
	done chan struct{}
	err  error
}

// StartDaemon starts `mntleak trace --format json --log-format json
// --journald off` with args (later flags win); stdout takes the event
// stream (nil: discarded). It waits for the tracing line, and at cleanup
// kills the daemon (by pid) if it still runs and fails the test if the
// race detector reported a race in it.
func StartDaemon(t testing.TB, stdout io.Writer, args ...string) *Daemon {
	t.Helper()
	argv := append([]string{"trace", "--format", "json", "--log-format", "json", "--journald", "off"}, args...)
	d := &Daemon{Cmd: exec.Command(Binary(t), argv...), done: make(chan struct{})}
	d.Cmd.Stdout = stdout
	stderr, err := d.Cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Cmd.Start(); err != nil {
		t.Fatalf("start mntleak trace: %v", err)
	}
	collected := make(chan struct{})
	go func() { d.Logs.Collect(stderr); close(collected) }()
	go func() { <-collected; d.err = d.Cmd.Wait(); close(d.done) }()
	t.Cleanup(func() {
		select {
		case <-d.done:
		default:
			_ = d.Cmd.Process.Kill()
			<-d.done
		}
		d.checkRace(t)
	})
	started := time.Now()
	if !Poll(daemonStartWait, func() bool {
		_, ok := d.Logs.Find(func(s string) bool {
			return strings.Contains(s, `"msg":"tracing"`) || strings.Contains(s, "\tINFO\ttracing\t") // json, console
		})
		return ok || d.Exited()
	}) || d.Exited() {
		t.Fatalf("mntleak trace did not start in %v:\n%s", time.Since(started).Round(time.Millisecond), strings.Join(d.Logs.All(), "\n"))
	}
	t.Logf("mntleak trace started in %v", time.Since(started).Round(time.Millisecond))
	return d
}

// daemonStartWait bounds StartDaemon's wait for the tracing line (the
// daemon, built with -race under -race, has loaded and attached its BPF
// programs), for a daemon that neither says it nor exits. 15 s was too
// short on this 2-core machine loaded by other builds (load 25): e2e/k8s's
// daemons printed nothing in 15 s, twice in one run.
const daemonStartWait = 2 * time.Minute

// Exited reports whether the daemon has exited.
func (d *Daemon) Exited() bool {
	select {
	case <-d.done:
		return true
	default:
		return false
	}
}

// Signal sends sig and waits at most limit for the exit; it returns the
// time the exit took and the exit code.
func (d *Daemon) Signal(t testing.TB, sig syscall.Signal, limit time.Duration) (time.Duration, int) {
	t.Helper()
	start := time.Now()
	if err := d.Cmd.Process.Signal(sig); err != nil {
		t.Fatalf("signal mntleak trace: %v", err)
	}
	select {
	case <-d.done:
	case <-time.After(limit):
		t.Fatalf("mntleak trace still running %v after %v\n%s", limit, sig, strings.Join(d.Logs.All(), "\n"))
	}
	d.checkRace(t)
	return time.Since(start), d.Cmd.ProcessState.ExitCode()
}

// Stop stops the daemon with SIGINT and fails the test unless it exits 0
// within 5s.
func (d *Daemon) Stop(t testing.TB) {
	t.Helper()
	if _, code := d.Signal(t, syscall.SIGINT, 5*time.Second); code != 0 {
		t.Errorf("mntleak trace exited %d after SIGINT\n%s", code, strings.Join(d.Logs.All(), "\n"))
	}
}

// checkRace fails the test if the daemon's stderr has a race report.
func (d *Daemon) checkRace(t testing.TB) {
	t.Helper()
	if _, ok := d.Logs.Find(func(s string) bool { return strings.Contains(s, "WARNING: DATA RACE") }); ok {
		t.Errorf("the race detector found a data race in mntleak trace:\n%s", strings.Join(d.Logs.All(), "\n"))
	}
}

// Within reports whether a line that matches came within d.
func (l *Lines) Within(d time.Duration, match func(string) bool) bool {
	return Poll(d, func() bool {
		_, ok := l.Find(match)
		return ok
	})
}

// ExitLimit is how long a test lets the daemon take to exit after SIGTERM:
// the 2s the daemon promises, and half as much again when it runs under
// the race detector, which slows every instrumented access (the promise is
// the production binary's).
func ExitLimit() time.Duration {
	if raceEnabled {
		return 3 * time.Second
	}
	return 2 * time.Second
}

// AfterLeakSettle lets a daemon's pending leaks be confirmed: it waits out
// the settle window (2 s of event time after the unmount) and makes one
// event after it (a short-lived namespace), on which the daemon reports a
// leak whose copy is still there.
func AfterLeakSettle(t testing.TB) {
	t.Helper()
	time.Sleep(2200 * time.Millisecond)
	if out, err := exec.Command("unshare", "-m", "true").CombinedOutput(); err != nil {
		t.Fatalf("unshare -m true: %v: %s", err, out)
	}
}

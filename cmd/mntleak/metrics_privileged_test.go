package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/e2e/testkit/privtest"
)

// netns is a network namespace of the test's own, kept by a sleeping
// process (killed by pid at cleanup, which frees the namespace and its
// end of the veth pair).
type netns struct{ pid int }

func startNetns(t *testing.T) netns {
	t.Helper()
	cmd := exec.Command("unshare", "-n", "sleep", "600")
	if err := cmd.Start(); err != nil {
		t.Fatalf("unshare -n: %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	n := netns{pid: cmd.Process.Pid}
	privtest.WaitFor(t, 5*time.Second, "a network namespace of its own", func() bool {
		self, _ := os.Readlink("/proc/self/ns/net")
		link, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", n.pid))
		return err == nil && link != self
	})
	return n
}

// ip runs ip(8) inside the namespace.
func (n netns) ip(t *testing.T, args ...string) {
	t.Helper()
	privtest.Run(t, "nsenter", append([]string{"-t", strconv.Itoa(n.pid), "-n", "ip"}, args...)...)
}

// do runs fn on this goroutine's thread moved into the namespace, and
// moves it back (a thread that cannot go back is never reused: it ends
// with the test's goroutine).
func (n netns) do(t *testing.T, fn func()) {
	t.Helper()
	runtime.LockOSThread()
	self, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()))
	if err != nil {
		t.Fatal(err)
	}
	defer self.Close()
	target, err := os.Open(fmt.Sprintf("/proc/%d/ns/net", n.pid))
	if err != nil {
		t.Fatal(err)
	}
	defer target.Close()
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		t.Fatalf("setns into net namespace of %d: %v", n.pid, err)
	}
	defer func() {
		if err := unix.Setns(int(self.Fd()), unix.CLONE_NEWNET); err != nil {
			t.Errorf("setns back: %v", err) // the thread stays locked, and dies
			return
		}
		runtime.UnlockOSThread()
	}()
	fn()
}

// get makes an HTTP GET of path at addr from inside the namespace: the
// connection is made there (the socket belongs to the namespace of the
// thread that made it), the request is read and written anywhere.
func (n netns) get(t *testing.T, addr, path string) (int, string, error) {
	t.Helper()
	var conn net.Conn
	var err error
	n.do(t, func() { conn, err = net.DialTimeout("tcp", addr, 3*time.Second) })
	if err != nil {
		return 0, "", err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", path, addr)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return 0, "", fmt.Errorf("read the answer from %s: %w", addr, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// TestMetricsFromAnotherNetns is the DaemonSet's set-up: the daemon in a
// network namespace of its own (the pod's) serves metrics on its veth
// address (the pod IP), and a scraper in another namespace (Prometheus,
// elsewhere in the cluster) reads them over the veth pair; the daemon's
// profiles answer on its loopback only, and never on the metrics address.
func TestMetricsFromAnotherNetns(t *testing.T) {
	privtest.Require(t)
	privtest.RequireCommands(t, "ip", "unshare", "nsenter", "sleep")
	privtest.Binary(t) // built in the host's namespace, not the pod's
	pod, scraper := startNetns(t), startNetns(t)
	a, b := fmt.Sprintf("mlk%da", os.Getpid()%100000), fmt.Sprintf("mlk%db", os.Getpid()%100000)
	privtest.Run(t, "ip", "link", "add", a, "netns", strconv.Itoa(pod.pid), "type", "veth", "peer", "name", b, "netns", strconv.Itoa(scraper.pid))
	const podIP, scraperIP = "10.254.7.1", "10.254.7.2"
	pod.ip(t, "addr", "add", podIP+"/30", "dev", a)
	pod.ip(t, "link", "set", a, "up")
	pod.ip(t, "link", "set", "lo", "up")
	scraper.ip(t, "addr", "add", scraperIP+"/30", "dev", b)
	scraper.ip(t, "link", "set", b, "up")

	const metricsAddr, pprofAddr = podIP + ":9464", "127.0.0.1:6060"
	var d *privtest.Daemon
	pod.do(t, func() {
		d = privtest.StartDaemon(t, nil, "--metrics-addr", metricsAddr, "--pprof-addr", pprofAddr, "--state-dir", filepath.Join(t.TempDir(), "state"))
	})

	code, body, err := scraper.get(t, metricsAddr, "/metrics")
	if err != nil || code != http.StatusOK {
		t.Fatalf("scrape %s from another network namespace: %d %v\n%s", metricsAddr, code, err, body)
	}
	for _, want := range []string{"mntleak_leaks_open", "mntleak_namespaces_tracked", "mntleak_mounts_tracked", "go_goroutines"} {
		if !strings.Contains(body, want) {
			t.Errorf("the scrape has no %s", want)
		}
	}
	if code, _, err := scraper.get(t, metricsAddr, "/debug/pprof/"); err != nil || code != http.StatusNotFound {
		t.Errorf("/debug/pprof/ on the metrics address: %d %v, want 404", code, err)
	}
	if _, _, err := scraper.get(t, podIP+":6060", "/debug/pprof/"); err == nil {
		t.Errorf("profiles answered on the pod's address %s:6060; want loopback only", podIP)
	}
	if code, body, err := pod.get(t, pprofAddr, "/debug/pprof/"); err != nil || code != http.StatusOK || !strings.Contains(body, "goroutine") {
		t.Errorf("/debug/pprof/ on the pod's loopback %s: %d %v", pprofAddr, code, err)
	}
	d.Stop(t)
}

// TestPprofRefusesAPodAddress: a non-loopback profile address is one line
// and exit 2, before anything is loaded.
func TestPprofRefusesAPodAddress(t *testing.T) {
	privtest.Require(t)
	out, err := exec.Command(privtest.Binary(t), "trace", "--pprof-addr", "0.0.0.0:6060", "--journald", "off").CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != exitUsage {
		t.Fatalf("mntleak trace --pprof-addr 0.0.0.0:6060: %v, want exit %d\n%s", err, exitUsage, out)
	}
	if lines := strings.Split(strings.TrimSpace(string(out)), "\n"); len(lines) != 1 || !strings.Contains(lines[0], "loopback address only") {
		t.Errorf("want one line naming the loopback rule, got:\n%s", out)
	}
}

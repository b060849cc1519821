package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mntleak/mntleak/e2e/testkit/privtest"
	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/finding"
)

// The storm: the test binary re-executed inside `unshare -m` (a private
// mount namespace of its own, so nothing leaks out of it) bind-mounts and
// unmounts a directory in a loop, stormRate pairs a second, until
// stormSeconds passed or it is killed.
const (
	envStorm      = "MNTLEAK_TEST_STORM"
	envStormRate  = "MNTLEAK_TEST_STORM_RATE"
	envStormUntil = "MNTLEAK_TEST_STORM_SECONDS"
)

func TestMain(m *testing.M) {
	if dir := os.Getenv(envStorm); dir != "" {
		os.Exit(storm(dir))
	}
	os.Exit(privtest.Main(m))
}

func storm(dir string) int {
	rate, _ := strconv.Atoi(os.Getenv(envStormRate))
	secs, _ := strconv.ParseFloat(os.Getenv(envStormUntil), 64)
	src, dst := filepath.Join(dir, "src"), filepath.Join(dir, "dst")
	for _, d := range []string{src, dst} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	end := time.Now().Add(time.Duration(secs * float64(time.Second)))
	batch := max(1, rate/100) // pairs per 10ms
	for time.Now().Before(end) {
		tick := time.Now()
		for i := 0; i < batch; i++ {
			if err := unix.Mount(src, dst, "", unix.MS_BIND, ""); err != nil {
				fmt.Fprintln(os.Stderr, "storm mount:", err)
				return 1
			}
			if err := unix.Unmount(dst, 0); err != nil {
				fmt.Fprintln(os.Stderr, "storm umount:", err)
				return 1
			}
		}
		time.Sleep(time.Until(tick.Add(10 * time.Millisecond)))
	}
	return 0
}

// startStorm runs a storm of rate bind/umount pairs a second for the
// given time in a private mount namespace; it is killed (by pid) at
// cleanup.
func startStorm(t *testing.T, rate int, d time.Duration) *exec.Cmd {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("unshare", "-m", "--propagation", "private", self, "-test.run=^$")
	cmd.Env = append(os.Environ(), envStorm+"="+t.TempDir(), envStormRate+"="+strconv.Itoa(rate),
		envStormUntil+"="+strconv.FormatFloat(d.Seconds(), 'f', 3, 64))
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd
}

// metricsAddr is the address the daemon logged it serves metrics on.
func metricsAddr(t *testing.T, p *privtest.Daemon) string {
	t.Helper()
	var addr string
	p.Logs.Wait(t, "metrics address", func(s string) bool {
		if i := strings.Index(s, `"msg":"serving metrics"`); i >= 0 {
			if j := strings.Index(s, `"addr":"`); j >= 0 {
				addr = s[j+len(`"addr":"`):]
				addr = addr[:strings.IndexByte(addr, '"')]
				return true
			}
		}
		return false
	})
	return addr
}

// scrape returns the sum of the samples of a metric whose label set
// contains labels ("" for any).
func scrape(t *testing.T, addr, name, labels string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var sum float64
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		if labels != "" && !strings.Contains(line, labels) {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err == nil {
			sum += v
		}
	}
	return sum
}

// rssBytes is the resident memory of pid.
func rssBytes(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

// findingOn waits for the daemon's first finding whose object is path and
// returns it.
func findingOn(t *testing.T, d *privtest.Daemon, path string) *finding.Finding {
	t.Helper()
	var f *finding.Finding
	d.Logs.Wait(t, "finding on "+path, func(s string) bool {
		var l struct {
			Logger string           `json:"logger"`
			Detail *finding.Finding `json:"detail"`
		}
		if json.Unmarshal([]byte(s), &l) == nil && l.Logger == "correlate" && l.Detail != nil && l.Detail.Object.Path == path {
			f = l.Detail
			return true
		}
		return false
	})
	return f
}

package incidents

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mntleak/mntleak/correlate"
	"github.com/mntleak/mntleak/internal/privtest"
)

// logged is one finding line of the daemon's JSON log.
type logged struct {
	Level       string             `json:"level"`
	Logger      string             `json:"logger"`
	Msg         string             `json:"msg"`
	Cause       string             `json:"cause"`
	HolderPID   int                `json:"holder_pid"`
	HolderMntNS uint32             `json:"holder_mntns"`
	Container   string             `json:"container"`
	LeakEvent   string             `json:"leak_event"`
	Detail      *correlate.Finding `json:"detail"`
}

var (
	buildOnce sync.Once
	binary    string
	buildErr  error
)

// mntleakBinary builds the real binary once for the package.
func mntleakBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "mntleak-incidents-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binary = filepath.Join(dir, "mntleak")
		out, err := exec.Command("go", "build", "-o", binary, "../cmd/mntleak").CombinedOutput()
		if err != nil {
			buildErr = err
			t.Logf("%s", out)
		}
	})
	if buildErr != nil {
		t.Fatalf("build mntleak: %v", buildErr)
	}
	return binary
}

// requireDocker skips (fails under MNTLEAK_REQUIRE_BPF=1) without root, BPF
// or the real components; it installs them from Debian when missing.
func requireDocker(t *testing.T) {
	t.Helper()
	privtest.Require(t)
	privtest.Install(t, map[string]string{
		"dockerd": "docker.io", "busybox": "busybox-static", "ip": "iproute2",
		"mkfs.ext4": "e2fsprogs", "losetup": "mount", "nsenter": "util-linux",
	})
}

// run starts the mntleak daemon, runs one incident script, stops the daemon
// with SIGINT and returns the findings it logged and the script's
// expectations. The daemon's recorded stream is kept in dir.
func run(t *testing.T, script string) ([]logged, map[string]string) {
	t.Helper()
	requireDocker(t)
	bin := mntleakBinary(t)
	dir := t.TempDir()
	logPath := filepath.Join(dir, "mntleak.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	daemon := exec.Command(bin, "trace", "--format", "json", "--log-format", "json", "--record", filepath.Join(dir, "stream.jsonl"),
		"--journald", "off", "--state-dir", filepath.Join(dir, "state"))
	daemon.Stderr = logFile
	if err := daemon.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = daemon.Process.Kill()
			_ = daemon.Wait()
		}
	})
	waitFor(t, logPath, `"msg":"tracing"`)

	expPath := filepath.Join(dir, "expect")
	outPath := filepath.Join(dir, "output")
	out, err := os.Create(outPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join("scripts", script))
	cmd.Env = append(os.Environ(), "MNTLEAK_EXPECT="+expPath)
	cmd.Stdout, cmd.Stderr = out, out // a file: a leftover process cannot hang the test
	runErr := cmd.Run()
	out.Close()
	time.Sleep(time.Second) // the last events reach the correlator

	_ = daemon.Process.Signal(syscall.SIGINT)
	done := make(chan error, 1)
	go func() { done <- daemon.Wait() }()
	select {
	case err := <-done:
		stopped = true
		if err != nil {
			t.Errorf("mntleak exited with %v after SIGINT", err)
		}
	case <-time.After(5 * time.Second):
		t.Error("mntleak still running 5s after SIGINT")
	}
	logFile.Close()
	if runErr != nil {
		b, _ := os.ReadFile(outPath)
		t.Fatalf("%s: %v\n%s", script, runErr, b)
	}
	return findingsIn(t, logPath), expectations(expPath)
}

func waitFor(t *testing.T, path, what string) {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if b, _ := os.ReadFile(path); strings.Contains(string(b), what) {
			return
		}
	}
	b, _ := os.ReadFile(path)
	t.Fatalf("no %s in the daemon log:\n%s", what, b)
}

func findingsIn(t *testing.T, path string) []logged {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []logged
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var l logged
		if json.Unmarshal(sc.Bytes(), &l) != nil || l.Logger != "correlate" {
			continue
		}
		if l.Detail == nil {
			t.Errorf("finding without detail: %s", sc.Text())
			continue
		}
		out = append(out, l)
	}
	return out
}

func expectations(path string) map[string]string {
	exp := map[string]string{}
	b, _ := os.ReadFile(path)
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			exp[k] = v
		}
	}
	return exp
}

// about keeps the findings about an incident's own objects: under its
// directory, its loop device, or (incident 1) the netns it created.
func about(fs []logged, incident string, exp map[string]string, extra ...string) []logged {
	var out []logged
	for _, f := range fs {
		dir := "/var/lib/mntleak-incidents/" + incident
		p := f.Detail.Object.Path + " " + f.Detail.Object.Source
		// A loop device number is reused by other tests running meanwhile:
		// a finding on the device is the incident's if it also names the
		// incident's directory (where it is held, or how it leaked).
		keep := strings.Contains(p, dir) || (exp["device"] != "" && f.Detail.Object.Path == exp["device"] && strings.Contains(f.Msg, dir))
		for _, e := range extra {
			keep = keep || f.Detail.Object.Path == e
		}
		if keep {
			out = append(out, f)
		}
	}
	return out
}

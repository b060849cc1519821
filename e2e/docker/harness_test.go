package docker

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mntleak/mntleak/e2e/testkit/findinglog"
	"github.com/mntleak/mntleak/e2e/testkit/privtest"
)

// logged is one finding line of the daemon's JSON log.
type logged = findinglog.Line

func TestMain(m *testing.M) { os.Exit(privtest.Main(m)) }

// requireDocker skips (fails under MNTLEAK_REQUIRE_BPF=1) without root, BPF
// or the real components (make deps installs them).
func requireDocker(t *testing.T) {
	t.Helper()
	privtest.Require(t)
	privtest.RequireCommands(t, "dockerd", "busybox", "ip", "mkfs.ext4", "losetup", "nsenter")
}

// atRelease is called when a script reaches its release point (lib.sh's
// release_point), with the daemon's findings so far, the script's
// expectations and the daemon's state dir; the script goes on when it
// returns.
type atRelease func(t *testing.T, findings func() []logged, exp map[string]string, stateDir string)

// run starts the mntleak daemon, runs one incident script, stops the daemon
// with SIGINT and returns the findings it logged and the script's
// expectations. The daemon's recorded stream is kept in dir. With release,
// the script pauses at its release point for it.
func run(t *testing.T, script string, release atRelease) ([]logged, map[string]string) {
	t.Helper()
	requireDocker(t)
	dir := t.TempDir()
	stateDir := filepath.Join(dir, "state")
	daemon := privtest.StartDaemon(t, nil, "--record", filepath.Join(dir, "stream.jsonl"), "--state-dir", stateDir)

	expPath := filepath.Join(dir, "expect")
	outPath := filepath.Join(dir, "output")
	relDir := filepath.Join(dir, "release")
	if err := os.Mkdir(relDir, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := os.Create(outPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join("scripts", script))
	cmd.Env = append(os.Environ(), "MNTLEAK_EXPECT="+expPath)
	if release != nil {
		cmd.Env = append(cmd.Env, "MNTLEAK_RELEASE="+relDir)
	}
	cmd.Stdout, cmd.Stderr = out, out // a file: a leftover process cannot hang the test
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", script, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	// However the test ends, the script (which cleans up after itself) is
	// let go on and waited for.
	var runErr error
	finished := false
	t.Cleanup(func() {
		if !finished {
			_ = os.WriteFile(filepath.Join(relDir, "go"), nil, 0o644)
			<-done
		}
	})
	released := false
	for !finished {
		select {
		case runErr = <-done:
			finished = true
		case <-time.After(100 * time.Millisecond):
			if _, err := os.Stat(filepath.Join(relDir, "ready")); release != nil && !released && err == nil {
				released = true
				findings := func() []logged { return findingsIn(t, daemon.Logs.All()) }
				release(t, findings, expectations(expPath), stateDir)
				if err := os.WriteFile(filepath.Join(relDir, "go"), nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	out.Close()
	time.Sleep(time.Second) // the last events reach the correlator

	daemon.Stop(t)
	if runErr != nil {
		b, _ := os.ReadFile(outPath)
		t.Fatalf("%s: %v\n%s", script, runErr, b)
	}
	return findingsIn(t, daemon.Logs.All()), expectations(expPath)
}

// findingsIn keeps the findings among the daemon's log lines.
func findingsIn(t *testing.T, lines []string) []logged {
	t.Helper()
	var out []logged
	for _, l := range findinglog.All(lines) {
		if l.Logger != "correlate" {
			continue
		}
		if l.Detail == nil {
			t.Errorf("finding without detail: %s", l.Raw)
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

package docker

import (
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mntleak/mntleak/e2e/testkit/privtest"
)

// releaseWant is what mntleak release must do at an incident's release
// point, run with the command the finding carries (its object's path when
// it carries none).
type releaseWant struct {
	from  int    // the finding, among the incident's, whose command is run
	code  int    // the exit code of --apply (and of the dry run)
	want  string // in --apply's output
	freed bool   // the operation that failed succeeds afterwards
}

// releaseAt returns the hook that checks one incident's release: the dry
// run changes nothing, --apply detaches the copy (or refuses), the holder
// keeps running.
func releaseAt(incident string, w releaseWant) atRelease {
	return func(t *testing.T, findings func() []logged, exp map[string]string, stateDir string) {
		t.Helper()
		var got []logged
		privtest.WaitFor(t, 30*time.Second, "the finding to release", func() bool {
			got = about(findings(), incident, exp)
			return len(got) > w.from
		})
		f := got[w.from].Detail
		// The command the finding carries; with none, the finding itself
		// (as the daemon logged it) on stdin.
		args, stdin := []string{"--finding", "-"}, got[w.from].Raw
		if f.Release != "" {
			args, stdin = strings.Fields(strings.TrimPrefix(f.Release, "mntleak release ")), ""
		}
		args = append([]string{"--state-dir", stateDir}, args...)
		// The holder the script saw (a stale bind has none: it is in the
		// caller's namespace, where release refuses to act).
		holder, _ := strconv.Atoi(exp["holder_pid"])
		if holder == 0 {
			holder = os.Getpid()
		}
		before := mountinfo(t, holder)

		out, code := release(t, stdin, args...)
		if code != w.code || (code == 0 && !strings.Contains(out, "dry run: nothing changed")) {
			t.Errorf("release %s: exit %d, want %d with a dry run:\n%s", strings.Join(args, " "), code, w.code, out)
		}
		// The dry run left the planned copy as it was (the rest of the
		// holder's table may move meanwhile: other tests' mounts propagate
		// into a slave namespace).
		if id := flagValue(args, "--mount-id"); id != "" {
			if b, a := mountLine(before, id), mountLine(mountinfo(t, holder), id); b == "" || a != b {
				t.Errorf("the dry run changed mount %s of mnt:[%s]: %q became %q", id, exp["holder_ns"], b, a)
			}
		}
		out, code = release(t, stdin, append([]string{"--apply"}, args...)...)
		t.Logf("mntleak release --apply %s:\n%s", strings.Join(args, " "), out)
		if code != w.code || !strings.Contains(out, w.want) {
			t.Errorf("release --apply: exit %d, want %d and %q:\n%s", code, w.code, w.want, out)
		}
		if id := flagValue(args, "--mount-id"); code == 0 && id != "" {
			if line := mountLine(mountinfo(t, holder), id); line != "" {
				t.Errorf("mount %s is still in the holder's namespace: %s", id, line)
			}
		}
		if err := syscall.Kill(holder, 0); err != nil {
			t.Errorf("the holder %d stopped running: %v", holder, err)
		}
	}
}

// release runs mntleak release with stdin and returns its output and exit
// code.
func release(t *testing.T, stdin string, args ...string) (string, int) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(privtest.Binary(t), append([]string{"release"}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return stdout.String() + stderr.String(), ee.ExitCode()
	} else if err != nil {
		t.Fatalf("mntleak release: %v", err)
	}
	return stdout.String() + stderr.String(), 0
}

func mountinfo(t *testing.T, pid int) []byte {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/mountinfo")
	if err != nil {
		t.Fatalf("the holder's mount table: %v", err)
	}
	return b
}

// mountLine is the line of mount id in a mount table, or "".
func mountLine(table []byte, id string) string {
	for _, line := range strings.Split(string(table), "\n") {
		if strings.HasPrefix(line, id+" ") {
			return line
		}
	}
	return ""
}

func flagValue(args []string, name string) string {
	for i := range args[:max(len(args)-1, 0)] {
		if args[i] == name {
			return args[i+1]
		}
	}
	return ""
}

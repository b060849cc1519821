package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mntleak/mntleak/e2e/testkit/privtest"
)

// refusalCase is one healthy mount that release --apply must leave alone:
// build makes it in a node of its own and returns the release arguments
// (run from inside the node) and the stdin; the mount, its data and its
// process must be as before afterwards.
type refusalCase struct {
	name  string
	build func(t *testing.T, r *releaseRig) (args []string, stdin string)
	want  string // in the refusal
}

// TestHealthyMountsRefused: every target form aimed at a mount that
// is not a leak is refused with --apply (and --force), and the mount, its
// data and its process are as before. The first case is issue 26's: a
// container-like process in a private namespace mounts its own tmpfs,
// keeps data in it and runs with its cwd elsewhere.
func TestHealthyMountsRefused(t *testing.T) {
	privtest.Require(t)
	privtest.RequireCommands(t, "unshare", "nsenter", "mount", "umount", "findmnt")
	bin := privtest.Binary(t)
	for _, tt := range []refusalCase{
		{name: "the namespace's own tmpfs, by --mntns and --mount-id", want: "cannot prove mount",
			build: func(t *testing.T, r *releaseRig) ([]string, string) {
				h := r.ownTmpfs(t)
				return []string{"--mntns", ns(h.MntNS), "--mount-id", strconv.Itoa(copyID(t, h.PID, r.path))}, ""
			}},
		{name: "the namespace's own tmpfs, by MAJ:MIN", want: "cannot prove mount",
			build: func(t *testing.T, r *releaseRig) ([]string, string) {
				r.ownTmpfs(t)
				return []string{r.majMin(t)}, ""
			}},
		{name: "the namespace's own tmpfs, a finding edited to say rprivate-bind", want: "cannot prove mount",
			build: func(t *testing.T, r *releaseRig) ([]string, string) {
				r.ownTmpfs(t)
				return []string{"--finding", "-"}, r.editedFinding(t, r.majMin(t), "rprivate-bind")
			}},
		{name: "a bind of a volume still mounted in the node", want: "not a leak",
			build: func(t *testing.T, r *releaseRig) ([]string, string) {
				vol := privtest.Mkdir(t, filepath.Join(r.dir, "vol"))
				r.node.Run(t, "mount", "-t", "tmpfs", "vol", vol)
				r.node.Run(t, "sh", "-c", "echo data >"+vol+"/file")
				r.path = privtest.Mkdir(t, filepath.Join(r.dir, "ctr"))
				h := r.node.StartHolder(t, "private", "mount --bind "+vol+" "+r.path+" && cd /")
				r.pid = h.PID
				return []string{"--mntns", ns(h.MntNS), "--mount-id", strconv.Itoa(copyID(t, h.PID, r.path))}, ""
			}},
		{name: "the host's namespace", want: "the host's namespace",
			build: func(t *testing.T, r *releaseRig) ([]string, string) {
				// Made after the node: only the host has it.
				r.path = privtest.Mkdir(t, filepath.Join(r.dir, "host"))
				privtest.Mount(t, "host", r.path, "tmpfs", 0, "")
				t.Cleanup(func() { _ = syscall.Unmount(r.path, syscall.MNT_DETACH) })
				privtest.Run(t, "sh", "-c", "echo data >"+r.path+"/file")
				r.pid = os.Getpid()
				return []string{"--mntns", ns(privtest.MountNS(t, "self")), "--mount-id", strconv.Itoa(copyID(t, os.Getpid(), r.path))}, ""
			}},
		{name: "a finding from a previous boot", want: "the finding is from a previous boot",
			build: func(t *testing.T, r *releaseRig) ([]string, string) {
				h, dev := r.provableLeak(t)
				r.pid, r.path = h.PID, filepath.Join(r.dir, "vol")
				f := r.why(t, dev)
				f["finding"] = "leak" // why's finding as the daemon would log it
				f["time"] = time.Now().Add(-24 * 365 * time.Hour).UTC().Format(time.RFC3339Nano)
				b, _ := json.Marshal(f)
				return []string{"--finding", "-"}, string(b)
			}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, bin)
			args, stdin := tt.build(t, r)
			before := r.data(t)
			out, code := r.release(t, stdin, "", append([]string{"--apply", "--force"}, args...)...)
			if code != exitError || !strings.Contains(out, "refused: ") || !strings.Contains(out, tt.want) || strings.Contains(out, "released:") {
				t.Fatalf("exit %d, want %d and refused with %q:\n%s", code, exitError, tt.want, out)
			}
			if after := r.data(t); after != before || before == "" {
				t.Errorf("the healthy mount's data %q became %q", before, after)
			}
			if syscall.Kill(r.pid, 0) != nil {
				t.Error("the process whose mount it is stopped running")
			}
		})
	}
}

// TestContainerMountsRefused: a running Docker container's rootfs, /proc,
// /dev, /sys and /dev/shm (made in its namespace by the runtime) and its
// volume (a tmpfs the node still has mounted, as kubelet mounts a pod's
// emptyDir) are each refused by release --apply --force, named by
// namespace and mount id as a finding's command names a copy; the
// container keeps running and its volume keeps its data. A stand-in for a
// pod's volume on the e2e/k8snode node: the same mounts, made by Docker.
func TestContainerMountsRefused(t *testing.T) {
	privtest.Require(t)
	privtest.RequireCommands(t, "dockerd", "busybox", "nsenter", "findmnt")
	bin := privtest.Binary(t)
	const w = "/var/lib/mntleak-incidents/container-mounts"
	exp := startScript(t, "container-mounts.sh", w)
	holder, _ := strconv.Atoi(exp["holder_pid"])
	ctrNS := privtest.MountNS(t, exp["holder_pid"])
	for _, tt := range []struct{ path, want string }{
		{"/", "not a leak (in-use)"}, // the overlay the node has mounted; Make refuses roots too
		{"/proc", "cannot prove mount"},
		{"/dev", "cannot prove mount"},
		{"/sys", "cannot prove mount"},
		{"/dev/shm", "cannot prove mount"},
		{"/data", "not a leak"},
	} {
		t.Run(tt.path, func(t *testing.T) {
			before, id := mountLine(t, holder, tt.path)
			out, code := releaseIn(t, exp["node_pid"], bin, "", "", "--apply", "--force", "--mntns", ns(ctrNS), "--mount-id", strconv.Itoa(id))
			if code != exitError || !strings.Contains(out, "refused: ") || !strings.Contains(out, tt.want) || strings.Contains(out, "released:") {
				t.Fatalf("exit %d, want %d and refused with %q:\n%s", code, exitError, tt.want, out)
			}
			if after, _ := mountLine(t, holder, tt.path); after != before {
				t.Errorf("the container's %s: %q became %q", tt.path, before, after)
			}
		})
	}
	if b, err := exec.Command("nsenter", "-t", exp["holder_pid"], "-m", "--", "cat", "/data/file").Output(); err != nil || string(b) != "data\n" {
		t.Errorf("the volume's data: %q (%v)", b, err)
	}
	if syscall.Kill(holder, 0) != nil {
		t.Error("the container stopped running")
	}
}

// mountLine is the line of pid's mountinfo of the top mount at path (as
// the process sees it: a container's image has no findmnt), and its id.
func mountLine(t *testing.T, pid int, path string) (string, int) {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	line, id := "", 0
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) > 4 && f[4] == path {
			line = l
			id, _ = strconv.Atoi(f[0])
		}
	}
	if line == "" {
		t.Fatalf("no mount at %s in /proc/%d/mountinfo", path, pid)
	}
	return line, id
}

// startScript runs a testdata script built on e2e/docker's lib.sh (working
// in w), waits for its expectations' ready=1 and returns them; at cleanup
// it tells the script to tear down ($W/done) and waits for it.
func startScript(t *testing.T, script, w string) map[string]string {
	t.Helper()
	dir := t.TempDir()
	expPath := filepath.Join(dir, "expect")
	cmd := exec.Command(filepath.Join("testdata", script))
	cmd.Env = append(os.Environ(), "MNTLEAK_EXPECT="+expPath)
	out, err := os.Create(filepath.Join(dir, "output"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = out, out // a file: a leftover process cannot hang the test
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = os.WriteFile(w+"/done", nil, 0o600)
		if err := cmd.Wait(); err != nil {
			b, _ := os.ReadFile(filepath.Join(dir, "output"))
			t.Errorf("%s: %v\n%s", script, err, b)
		}
		out.Close()
	})
	exp := map[string]string{}
	if !privtest.Poll(120e9, func() bool {
		exp = expectations(expPath)
		return exp["ready"] == "1"
	}) {
		b, _ := os.ReadFile(filepath.Join(dir, "output"))
		t.Fatalf("%s did not get ready:\n%s", script, b)
	}
	return exp
}

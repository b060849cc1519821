package main

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/mntleak/mntleak/e2e/testkit/privtest"
)

// releaseRig is what a release test is built in: a node namespace of its
// own (release runs there: it is the caller's namespace), a directory, the
// binary.
type releaseRig struct {
	node privtest.Node
	dir  string
	bin  string
	// healthy is the mount that must survive: the process whose namespace
	// has it, where, and the data in it.
	pid  int
	path string
}

// newRig is a rig with a node of its own and a directory of the test's.
func newRig(t *testing.T, bin string) *releaseRig {
	t.Helper()
	return &releaseRig{node: privtest.StartNode(t), dir: t.TempDir(), bin: bin}
}

// release runs mntleak release from inside the node, with the daemon's
// state dir stateDir ("" for none), no journal, and stdin.
func (r *releaseRig) release(t *testing.T, stdin, stateDir string, args ...string) (string, int) {
	t.Helper()
	return releaseIn(t, strconv.Itoa(r.node.PID), r.bin, stdin, stateDir, args...)
}

// releaseIn runs bin's release in the mount namespace of process pid, with
// the daemon's state dir stateDir ("" for none), no journal, and stdin:
// its output and exit code.
func releaseIn(t *testing.T, pid, bin, stdin, stateDir string, args ...string) (string, int) {
	t.Helper()
	return runIn(t, stdin, append([]string{"-t", pid, "-m", "--", bin, "release", "--journald-socket", "", "--state-dir", stateDir}, args...)...)
}

// mkfsIn is mkfs.ext4 on dev from inside node: it fails while a leaked
// copy holds the device.
func mkfsIn(node privtest.Node, dev string) error {
	return exec.Command("nsenter", "-t", strconv.Itoa(node.PID), "-m", "--", "mkfs.ext4", "-q", "-F", dev).Run()
}

func ns(ino uint32) string { return strconv.FormatUint(uint64(ino), 10) }

// ownTmpfs starts a holder that mounts a tmpfs of its own in its private
// namespace, writes data in it and runs with its cwd elsewhere.
func (r *releaseRig) ownTmpfs(t *testing.T) *privtest.Holder {
	t.Helper()
	r.path = privtest.Mkdir(t, filepath.Join(r.dir, "own"))
	h := r.node.StartHolder(t, "private", "mount -t tmpfs own "+r.path+" && echo data >"+r.path+"/file && cd /")
	r.pid = h.PID
	return h
}

// majMin is the device of the healthy mount, as MAJ:MIN.
func (r *releaseRig) majMin(t *testing.T) string {
	t.Helper()
	return strings.TrimSpace(privtest.Run(t, "nsenter", "-t", strconv.Itoa(r.pid), "-m", "--", "findmnt", "-n", "-o", "MAJ:MIN", r.path))
}

// data is the healthy mount's file as its process sees it ("" when the
// mount is gone from there).
func (r *releaseRig) data(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("nsenter", "-t", strconv.Itoa(r.pid), "-m", "--", "sh", "-c",
		"findmnt -n "+r.path+" >/dev/null && cat "+r.path+"/file").Output()
	if err != nil {
		return ""
	}
	return string(out)
}

// why is mntleak why --json about target, from inside the node.
func (r *releaseRig) why(t *testing.T, target string) map[string]any {
	t.Helper()
	out, _ := exec.Command("nsenter", "-t", strconv.Itoa(r.node.PID), "-m", "--", r.bin, "why", "--json", "--state-dir", "", target).Output()
	var f map[string]any
	if err := json.Unmarshal(out, &f); err != nil {
		t.Fatalf("why %s: %v: %s", target, err, out)
	}
	return f
}

// editedFinding is why's finding about target made into a daemon's leak
// finding with its cause edited.
func (r *releaseRig) editedFinding(t *testing.T, target, cause string) string {
	t.Helper()
	f := r.why(t, target)
	f["finding"], f["cause"] = "leak", cause
	b, _ := json.Marshal(f)
	return string(b)
}

// provableLeak leaks a tmpfs with data from the node into a private
// holder, with a mount the node made after it (so the holder's table shows
// the copy was in the batch unshare made): its holder and device.
func (r *releaseRig) provableLeak(t *testing.T) (*privtest.Holder, string) {
	t.Helper()
	return r.leakOf(t, "-t", "tmpfs", "vol")
}

// leakOf is provableLeak of what mount's arguments name (a device; or
// -t tmpfs NAME), mounted at r.dir/vol.
func (r *releaseRig) leakOf(t *testing.T, mount ...string) (*privtest.Holder, string) {
	t.Helper()
	vol := privtest.Mkdir(t, filepath.Join(r.dir, "vol"))
	r.node.Run(t, "mount", append(mount, vol)...)
	r.node.Run(t, "sh", "-c", "echo data >"+vol+"/file")
	laterMount(t, r.node, r.dir)
	h := r.node.StartHolder(t, "private", "cd /")
	dev := strings.TrimSpace(r.node.Run(t, "findmnt", "-n", "-o", "MAJ:MIN", vol))
	r.node.Run(t, "umount", vol)
	return h, dev
}

// laterMount is a mount the node makes after the volume, as a real node
// does: the leaked copy is then not the newest mount its holder copied,
// and the holder's own table shows it was copied (docs/release.md).
func laterMount(t *testing.T, node privtest.Node, dir string) {
	t.Helper()
	later := privtest.Mkdir(t, filepath.Join(dir, "later"))
	node.Run(t, "mount", "-t", "tmpfs", "later", later)
}

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/mntleak/mntleak/e2e/oraclecheck"
	"github.com/mntleak/mntleak/e2e/testkit/findinglog"
	"github.com/mntleak/mntleak/e2e/testkit/privtest"

	"github.com/mntleak/mntleak/finding"
)

// podFinding is a finding line of the daemon's JSON log, with its pod
// fields.
type podFinding = findinglog.Line

// podFindings returns the daemon's findings whose object or holders'
// copies lie under dir, in the order logged.
func podFindings(d *privtest.Daemon, dir string) []podFinding {
	var out []podFinding
	for _, f := range findinglog.Findings(d.Logs.All()) {
		if strings.Contains(f.Msg, dir) {
			out = append(out, f)
		}
	}
	return out
}

// waitPodFinding waits for a finding of kind about dir.
func waitPodFinding(t *testing.T, d *privtest.Daemon, dir string, kind finding.FindingKind) podFinding {
	t.Helper()
	var found podFinding
	ok := d.Logs.Within(15e9, func(string) bool {
		for _, f := range podFindings(d, dir) {
			if f.Detail.Kind == kind {
				found = f
				return true
			}
		}
		return false
	})
	if !ok {
		t.Fatalf("no %s finding about %s:\n%s", kind, dir, strings.Join(d.Logs.All(), "\n"))
	}
	oraclecheck.CheckLogged(t, found)
	return found
}

// replayLines replays a recording and returns its finding lines about dir.
func replayLines(t *testing.T, record, dir string) []string {
	t.Helper()
	out, err := exec.Command(privtest.Binary(t), "replay", "--format", "text", record).Output()
	if err != nil {
		t.Fatalf("mntleak replay %s: %v", record, err)
	}
	var lines []string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, dir) {
			lines = append(lines, l)
		}
	}
	return lines
}

// checkReplay: the recording replays to the lines the daemon logged,
// names included, with no runtime asked.
func checkReplay(t *testing.T, d *privtest.Daemon, record, dir string) {
	t.Helper()
	var logged []string
	for _, f := range podFindings(d, dir) {
		logged = append(logged, f.Msg)
	}
	if got := replayLines(t, record, dir); strings.Join(got, "\n") != strings.Join(logged, "\n") {
		t.Errorf("the recording replays to:\n%s\nthe daemon logged:\n%s", strings.Join(got, "\n"), strings.Join(logged, "\n"))
	}
}

// TestStuckPodVolume: a Memory emptyDir under a kubelet root (--kubelet-root
// pointing at a directory of the test's own) whose teardown fails, then
// whose tmpfs survives its unmount in a namespace that pins it: both
// findings name the pod (by UID: no runtime knows it) and the volume, in
// the line and the fields, and the recording replays to the same lines.
func TestStuckPodVolume(t *testing.T) {
	privtest.Require(t)
	root, err := os.MkdirTemp("/tmp", "mntleak-kubelet-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	const uid = "0f3c2a4e-5b6d-4e7f-8a9b-1c2d3e4f5a6b"
	vol := privtest.Mkdir(t, filepath.Join(root, "pods", uid, "volumes", "kubernetes.io~empty-dir", "cache"))
	record := filepath.Join(t.TempDir(), "stream.jsonl")
	d := privtest.StartDaemon(t, nil, "--kubelet-root", root, "--node-name", "node-test", "--cri-socket=", "--docker-socket=",
		"--record", record, "--state-dir", filepath.Join(t.TempDir(), "state"))

	// Mounts in a node namespace of the test's own: namespaces other tests
	// create meanwhile do not copy them.
	node := privtest.StartNode(t)
	node.Run(t, "mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", vol)
	node.Run(t, "sh", "-c", "echo secret >"+vol+"/token")
	// The kubelet's teardown: rmdir of a mounted volume fails.
	if out, err := exec.Command("nsenter", "-t", strconv.Itoa(node.PID), "-m", "--", "rmdir", vol).CombinedOutput(); err == nil {
		t.Fatalf("rmdir of a mounted volume succeeded: %s", out)
	}
	busy := waitPodFinding(t, d, vol, finding.KindFailure)

	// A namespace made after the mount pins its copy; the unmount leaves
	// the copy, and its data, behind.
	holder := node.StartHolder(t, "private", "cd "+vol)
	node.Run(t, "umount", vol)
	privtest.AfterLeakSettle(t)
	leak := waitPodFinding(t, d, vol, finding.KindLeak)
	d.Stop(t)

	tests := []struct {
		name   string
		f      podFinding
		prefix string
	}{
		{"the teardown fails", busy, "pod uid " + uid + " stuck: volume cache (emptyDir): EBUSY rmdir " + vol},
		{"the tmpfs survives the unmount", leak, "pod uid " + uid + ": volume cache (emptyDir, tmpfs: its data stays readable) leaked: LEAK " + vol},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := tt.f
			if !strings.HasPrefix(f.Msg, tt.prefix) {
				t.Errorf("line:\n%s\nwant it to start with:\n%s", f.Msg, tt.prefix)
			}
			if f.StuckPodUID != uid || f.StuckVolume != "cache" || f.StuckVolumeType != "emptyDir" || f.Node != "node-test" || f.StuckPod != "" {
				t.Errorf("fields: stuck_pod_uid %q stuck_volume %q stuck_volume_type %q node %q stuck_pod %q",
					f.StuckPodUID, f.StuckVolume, f.StuckVolumeType, f.Node, f.StuckPod)
			}
			if s := f.Detail.Stuck; s == nil || s.UID != uid || !s.Tmpfs {
				t.Errorf("detail.stuck %+v", s)
			}
			if f.Enrichment != "" {
				t.Errorf("enrichment %q with no runtime to ask", f.Enrichment)
			}
		})
	}
	if _, a := leak.Detail.Actor(); a == nil || a.PID != holder.PID {
		t.Errorf("the leak's actor %+v, want the holder %d", a, holder.PID)
	}
	t.Logf("failure: %s", busy.Msg)
	t.Logf("leak: %s", leak.Msg)
	checkReplay(t, d, record, vol)
}

// TestNamedDockerContainer: on a Docker-only node a leak held by a
// container is told by the container's name and image, asked from a real
// Docker Engine (testdata/named-container.sh, with e2e/docker's lib.sh); the
// docker Source answers about a container, a cri-dockerd style pod
// container, a pod UID and an unknown id; the recording replays to the
// same lines without asking the Engine.
func TestNamedDockerContainer(t *testing.T) {
	privtest.Require(t)
	privtest.RequireCommands(t, "dockerd", "busybox", "nsenter")
	const w = "/var/lib/mntleak-incidents/named-container"
	dir := t.TempDir()
	record := filepath.Join(dir, "stream.jsonl")
	// The socket through a link: lib.sh's cleanup kills every process whose
	// command line names its directory, the daemon's too.
	socket := filepath.Join(dir, "docker.sock")
	if err := os.Symlink(w+"/docker.sock", socket); err != nil {
		t.Fatal(err)
	}
	d := privtest.StartDaemon(t, nil, "--docker-socket", socket, "--cri-socket=", "--node-name", "node-test",
		"--record", record, "--state-dir", filepath.Join(dir, "state"))

	expPath := filepath.Join(dir, "expect")
	cmd := exec.Command(filepath.Join("testdata", "named-container.sh"))
	cmd.Env = append(os.Environ(), "MNTLEAK_EXPECT="+expPath)
	out, err := os.Create(filepath.Join(dir, "output"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	cmd.Stdout, cmd.Stderr = out, out // a file: a leftover process cannot hang the test
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	scriptDone := make(chan error, 1)
	go func() { scriptDone <- cmd.Wait() }()
	var finishOnce sync.Once
	finish := func() {
		finishOnce.Do(func() {
			_ = os.WriteFile(w+"/done", nil, 0o600) // the script tears everything down
			if err := <-scriptDone; err != nil {
				b, _ := os.ReadFile(filepath.Join(dir, "output"))
				t.Errorf("named-container.sh: %v\n%s", err, b)
			}
		})
	}
	t.Cleanup(finish) // also when a check below fails the test
	exp := map[string]string{}
	if !privtest.Poll(120e9, func() bool {
		exp = expectations(expPath)
		return exp["ready"] == "1"
	}) {
		t.Fatalf("the script did not get ready")
	}

	t.Run("source", func(t *testing.T) { checkDockerSource(t, w+"/docker.sock", exp) })
	leak := waitPodFinding(t, d, w+"/src/vol", finding.KindLeak)
	finish()
	if d.Exited() {
		t.Fatalf("the daemon exited before it was stopped:\n%s", strings.Join(d.Logs.All(), "\n"))
	}
	d.Stop(t)

	want := "held by container web (mntleak/busybox): LEAK " + w + "/src/vol"
	if !strings.HasPrefix(leak.Msg, want) {
		t.Errorf("line:\n%s\nwant it to start with:\n%s", leak.Msg, want)
	}
	if !strings.Contains(leak.Msg, "held by sleep["+exp["holder_pid"]+"] (container web (mntleak/busybox))") {
		t.Errorf("line does not name the holding process by its container: %s", leak.Msg)
	}
	if leak.HolderContainer != "web" || leak.HolderImage != "mntleak/busybox" || leak.HolderPod != "" || leak.Enrichment != "" {
		t.Errorf("fields: holder_container %q holder_image %q holder_pod %q enrichment %q", leak.HolderContainer, leak.HolderImage,
			leak.HolderPod, leak.Enrichment)
	}
	if _, a := leak.Detail.Actor(); a == nil || a.Workload == nil || a.Workload.ContainerID != exp["container"] || a.Workload.Runtime != "docker" {
		t.Errorf("actor %+v", a)
	}
	checkReplay(t, d, record, w+"/src/vol")
}

// expectations reads the script's KEY=VALUE lines.
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

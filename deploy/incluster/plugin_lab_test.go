package incluster

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mntleak/mntleak/e2e/k8snode"
	"github.com/mntleak/mntleak/e2e/testkit/privtest"
	"github.com/mntleak/mntleak/finding"
	"github.com/mntleak/mntleak/procfs"
	releasepkg "github.com/mntleak/mntleak/release"
)

// buildCommand builds one of the repository's commands into dir.
func buildCommand(t *testing.T, dir, name string) string {
	t.Helper()
	bin := filepath.Join(dir, name)
	start := time.Now()
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/"+name)
	cmd.Dir = repo
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/%s: %v\n%s", name, err, out)
	}
	t.Logf("go build ./cmd/%s: %v", name, time.Since(start).Round(100*time.Millisecond))
	return bin
}

// result is what a command printed and its exit code.
type result struct {
	stdout, stderr string
	code           int
}

// runCommand runs bin with args (60 s at most) and returns its output and
// exit code; a command that could not run fails the test.
func runCommand(t *testing.T, bin string, args ...string) result {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", bin, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("%s %s: still running after 60 s\n%s%s", filepath.Base(bin), strings.Join(args, " "), stdout.String(), stderr.String())
	}
	r := result{stdout: stdout.String(), stderr: stderr.String()}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		r.code = exit.ExitCode()
	case err != nil:
		t.Fatalf("%s: %v", bin, err)
	}
	t.Logf("$ %s %s (exit %d)\n%s%s", filepath.Base(bin), strings.Join(args, " "), r.code, r.stderr, r.stdout)
	return r
}

// viewerKubeconfig makes a ServiceAccount that may get and list pods and
// list nodes but not exec (removed at cleanup), and returns a kubeconfig
// with its token: the plugin's exec must be refused, and said so.
func viewerKubeconfig(t *testing.T, n *k8snode.Node) string {
	t.Helper()
	rbac := []byte(`apiVersion: v1
kind: ServiceAccount
metadata: {name: plugin-viewer, namespace: kube-system}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: plugin-viewer}
rules:
  - apiGroups: [""]
    resources: ["pods", "nodes"]
    verbs: ["get", "list"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: plugin-viewer}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: plugin-viewer}
subjects: [{kind: ServiceAccount, name: plugin-viewer, namespace: kube-system}]
`)
	return n.TokenKubeconfig(t, rbac, "kube-system", "plugin-viewer")
}

// installChart installs the chart with its defaults (Events on) and this
// node's paths, waits for the DaemonSet's pod to trace, and uninstalls it
// at cleanup. It returns the pod.
func installChart(t *testing.T, n *k8snode.Node, state string) pod {
	t.Helper()
	v := version(t)
	archive := buildArchive(t, privtest.Mkdir(t, filepath.Join(t.TempDir(), "build")))
	n.ImportImage(t, archive, "docker.io/library/mntleak:"+v)
	// The chart's hostPaths, HostToContainer: shared mounts here (the
	// release lock directory, release's own, is made first).
	for _, p := range []string{"/sys/kernel/btf", state, k8snode.KubeletRoot, k8snode.ContainerdSocket, privtest.Mkdir(t, releasepkg.LockDir)} {
		shareHostPath(t, p)
	}
	h := newHelm(t, n)
	t.Cleanup(func() {
		if out, err := h.run("uninstall", release, "--namespace", ns, "--wait"); err != nil && !strings.Contains(out, "not found") {
			t.Error(err)
		}
		if _, err := n.KubectlErr(nil, "delete", "namespace", ns, "--ignore-not-found", "--wait=true", "--timeout=90s"); err != nil {
			t.Errorf("delete namespace %s: %v", ns, err)
		}
	})
	if _, err := h.run("install", release, filepath.Join(repo, "deploy", "helm", "mntleak"), "--namespace", ns, "--create-namespace",
		"--set-string", "image.tag="+v,
		"--set", "journald.enabled=false",
		"--set", "stateDir="+state,
		"--set", "kubeletDir="+k8snode.KubeletRoot,
		"--set", "criSocket="+k8snode.ContainerdSocket); err != nil {
		t.Fatal(err)
	}
	selector := "app.kubernetes.io/instance=" + release
	p := readyPod(t, n, ns, selector)
	tracing := func() bool {
		for _, l := range podLog(t, n, ns, p.Metadata.Name) {
			if l.Msg == "tracing" {
				return true
			}
		}
		return false
	}
	if !privtest.Poll(60*time.Second, tracing) {
		t.Fatalf("the pod is not tracing:\n%s", n.Kubectl(t, "logs", "-n", ns, p.Metadata.Name, "--tail=30"))
	}
	return p
}

// lastLine is the last non-empty line of s.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}

// keep is a file for the test's output.
func keep(t *testing.T, name, s string) {
	t.Helper()
	if dir := os.Getenv("MNTLEAK_PLUGIN_SESSION"); dir != "" {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Error(err)
		}
	}
}

// podAnswer is `mntleak why pod --json`.
type podAnswer struct {
	UID     string `json:"uid"`
	Objects []struct {
		Kind, Text, Path string
		Nested           bool
	} `json:"objects"`
	Held []struct {
		Object struct {
			Text, Path string
		} `json:"object"`
		Holding []uint32        `json:"holding"`
		Finding finding.Finding `json:"finding"`
	} `json:"held"`
}

// decodeAnswer reads a why pod --json answer.
func decodeAnswer(t *testing.T, r result) podAnswer {
	t.Helper()
	var a podAnswer
	if err := json.Unmarshal([]byte(r.stdout), &a); err != nil {
		t.Fatalf("why pod --json: %v\n%s", err, r.stdout)
	}
	return a
}

// scenarioHeld splits the held objects of an answer: those a namespace
// of the scenario's pods holds (in ours, among the answer's holding
// namespaces), and the others, which must be
// held only by namespaces no Kubernetes pod runs in (another test's
// namespace on this shared machine: a copy of the runtime's mounts kept
// by its process), checked against the kernel: a holder's process whose
// cgroup names a pod fails the test (a holder of ours misnamed as
// foreign); its namespace's table is read too, and a process or copy gone
// since the answer (other tests' namespaces come and go) is said so.
func scenarioHeld(t *testing.T, a podAnswer, ours map[uint32]bool) []string {
	t.Helper()
	var mine []string
	for _, h := range a.Held {
		foreign := true
		for _, hh := range h.Finding.Holders {
			if !slices.Contains(h.Holding, hh.MntNS) {
				continue
			}
			if ours[hh.MntNS] {
				foreign = false
				continue
			}
			for _, p := range hh.Processes {
				cg, _ := os.ReadFile("/proc/" + strconv.Itoa(p.PID) + "/cgroup")
				if strings.Contains(string(cg), "kubepods") || p.Pod != "" {
					t.Errorf("%s is held in mnt:[%d] by pid %d (pod %q, cgroup %q): not another test's namespace", h.Object.Text, hh.MntNS, p.PID, p.Pod, cg)
				}
				// The namespace's whole table (a chrooted process's
				// mountinfo shows only what lies under its root).
				ino, mounts, err := procfs.Host{}.Mountinfo(p.PID)
				if err != nil || ino != hh.MntNS || !slices.ContainsFunc(mounts, func(m *procfs.Mount) bool { return m.Mountpoint == hh.Where }) {
					t.Logf("%s: mnt:[%d] of pid %d has no mount at %s any more (%v, now mnt:[%d]): gone since the answer", h.Object.Text, hh.MntNS, p.PID, hh.Where, err, ino)
				}
			}
		}
		if foreign {
			t.Logf("another test's namespace holds %s: %s", h.Object.Text, h.Finding.Summary)
			continue
		}
		mine = append(mine, h.Object.Text)
	}
	return mine
}

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

const webUID = "0f3c2a9e-1b2c-4d5e-8f90-123456789abc"

// fakeRunner answers the commands run in mntleak's pods: by pod name, the
// exit code and output; it records what was run.
type fakeRunner struct {
	mu   sync.Mutex
	ran  []string
	answ map[string]func(cmd []string, stdout, stderr io.Writer) int
}

func (f *fakeRunner) run(_ context.Context, p corev1.Pod, cmd []string, stdout, stderr io.Writer) (int, error) {
	f.mu.Lock()
	f.ran = append(f.ran, p.Name+": "+strings.Join(cmd, " "))
	f.mu.Unlock()
	a, ok := f.answ[p.Name]
	if !ok {
		return 0, errors.New("no answer")
	}
	return a(cmd, stdout, stderr), nil
}

func podOn(ns, name, node string, labels map[string]string, args ...string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: webUID, Labels: labels},
		Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "mntleak", Args: args}}},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}
}

func node(name string) *corev1.Node { return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}} }

// world is a cluster of three nodes, mntleak's pods on two of them, the
// stuck pod shop/web on n1.
func world(allowExec bool) (*fake.Clientset, *fakeRunner) {
	daemon := map[string]string{"app.kubernetes.io/name": "mntleak"}
	c := fake.NewClientset(
		node("n1"), node("n2"), node("n3"),
		podOn("shop", "web", "n1", nil),
		podOn("mntleak", "mntleak-a", "n1", daemon, "trace", "--kubelet-root=/data/kubelet", "--cri-socket=/run/k3s/containerd.sock", "--state-dir=/data/mntleak", "--journald=on", "--journald-socket=/run/journal.sock"),
		podOn("mntleak", "mntleak-b", "n2", daemon, "trace"),
	)
	c.PrependReactor("create", "selfsubjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		r := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview)
		r.Status.Allowed = allowExec
		if !allowExec {
			r.Status.Reason = "no RBAC policy matched"
		}
		return true, r, nil
	})
	held := func(cmd []string, out, errOut io.Writer) int {
		if cmd[1] == "audit" {
			fmt.Fprintln(out, "LEAK tmpfs in mnt:[4026532333]")
			return 1
		}
		if strings.Contains(strings.Join(cmd, " "), "--json") {
			fmt.Fprintln(out, `{"held":[{"object":{"text":"volume cache (emptyDir)"},"finding":{"release":"mntleak release --mntns 4026532333 --mount-id 812","summary":"leaked"}}]}`)
			return 1
		}
		if cmd[1] == "release" {
			// As mntleak release writes: the human lines on stdout, the
			// action record (a JSON line) on stderr, and a warning there.
			result, line := "planned", "plan: umount2 in mnt:[4026532333]"
			if slices.Contains(cmd, "--apply") {
				result, line = "released", "released: mount 812 at /data is gone from mnt:[4026532333]"
				fmt.Fprintln(errOut, "mntleak release: warning: the action record was not kept in the journal: no socket")
			}
			fmt.Fprintln(out, line)
			fmt.Fprintf(errOut, `{"action":"release","result":%q,"step":{"mntns":4026532333,"mount_id":812}}`+"\n", result)
			return 0
		}
		fmt.Fprintln(out, "pod shop/web (uid "+webUID+"): 1 objects on this node")
		return 1
	}
	r := &fakeRunner{answ: map[string]func([]string, io.Writer, io.Writer) int{
		"mntleak-a": held,
		"mntleak-b": func(_ []string, out, _ io.Writer) int { fmt.Fprintln(out, "no leaked mounts"); return 0 },
	}}
	return c, r
}

func TestPluginCommands(t *testing.T) {
	for _, tt := range []struct {
		name      string
		args      []string
		denyExec  bool
		code      int
		stdout    string
		stderr    string // the whole of it
		noStderr  bool   // nothing on stderr
		ran       []string
		forbidPod bool
	}{
		{name: "why", args: []string{"why", "pod/web", "-n", "shop"}, code: 1,
			stdout: "pod shop/web (uid " + webUID + "): 1 objects on this node\n",
			stderr: "kubectl mntleak why: node n1, asking mntleak/mntleak-a\n",
			ran:    []string{"mntleak-a: /mntleak why pod --pod-uid " + webUID + " --node-name n1 --kubelet-root=/data/kubelet --cri-socket=/run/k3s/containerd.sock --state-dir=/data/mntleak shop/web"}},
		{name: "why by uid", args: []string{"why", "--pod-uid", webUID, "--node", "n1", "--json"}, code: 1,
			stdout: `{"held":[{"object":{"text":"volume cache (emptyDir)"},"finding":{"release":"mntleak release --mntns 4026532333 --mount-id 812","summary":"leaked"}}]}` + "\n",
			stderr: "kubectl mntleak why: node n1, asking mntleak/mntleak-a\n",
			ran:    []string{"mntleak-a: /mntleak why pod --pod-uid " + webUID + " --node-name n1 --kubelet-root=/data/kubelet --cri-socket=/run/k3s/containerd.sock --state-dir=/data/mntleak --json"}},
		{name: "no such pod", args: []string{"why", "pod/nope", "-n", "shop"}, code: 4,
			stderr: "kubectl mntleak why: pod shop/nope not found (a pod gone from the API server: --pod-uid UID --node NODE)\n"},
		{name: "no mntleak pod on the node", args: []string{"why", "--pod-uid", webUID, "--node", "n3"}, code: 4,
			stderr: "kubectl mntleak why: node n3 has no running mntleak pod (pods labelled app.kubernetes.io/name=mntleak in any namespace): install the chart deploy/helm/mntleak\n"},
		{name: "exec forbidden", args: []string{"why", "web", "-n", "shop"}, denyExec: true, code: 4,
			stderr: "kubectl mntleak why: forbidden: your RBAC does not allow create pods/exec in namespace mntleak (kubectl auth can-i create pods/exec -n mntleak): no RBAC policy matched\n"},
		{name: "get pods forbidden", args: []string{"why", "web", "-n", "shop"}, forbidPod: true, code: 4,
			stderr: "kubectl mntleak why: forbidden: your RBAC does not allow get pods in namespace shop (kubectl auth can-i get pods -n shop): pods \"web\" is forbidden: no\n"},
		{name: "not a pod", args: []string{"why", "deployment/web"}, code: 2, stderr: "kubectl mntleak why: \"deployment/web\": only pods are explained: want pod/NAME\n"},
		{name: "bad name", args: []string{"why", "pod/Web_1"}, code: 2},
		{name: "two pods", args: []string{"why", "pod/a", "pod/b"}, code: 2, stderr: "kubectl mntleak why: want one pod/NAME, got 2 arguments\n"},
		{name: "nothing", args: []string{"why"}, code: 2, stderr: "kubectl mntleak why: want pod/NAME (or --pod-uid UID --node NODE)\n"},
		{name: "uid without node", args: []string{"why", "--pod-uid", webUID}, code: 2, stderr: "kubectl mntleak why: --pod-uid needs --node (the node the pod ran on)\n"},
		{name: "bad uid", args: []string{"why", "--pod-uid", "x", "--node", "n1"}, code: 2, stderr: "kubectl mntleak why: --pod-uid \"x\": want a pod UID (8-4-4-4-12 hex digits)\n"},
		{name: "unknown flag", args: []string{"why", "--bogus"}, code: 2, stderr: "kubectl mntleak why: flag provided but not defined: -bogus\n"},
		{name: "unknown command", args: []string{"describe"}, code: 2, stderr: "kubectl mntleak: unknown command \"describe\" (see 'kubectl mntleak help')\n"},
		{name: "audit all nodes", args: []string{"audit", "--all-nodes"}, code: 1,
			stdout: "node n1 (mntleak/mntleak-a):\n  LEAK tmpfs in mnt:[4026532333]\n\nnode n2 (mntleak/mntleak-b):\n  no leaked mounts\n\nnode n3: no mntleak pod on this node: not audited\n",
			ran:    []string{"mntleak-a: /mntleak audit", "mntleak-b: /mntleak audit"}},
		{name: "audit one node", args: []string{"audit", "--node", "n2"}, code: 0, stdout: "node n2 (mntleak/mntleak-b):\n  no leaked mounts\n", ran: []string{"mntleak-b: /mntleak audit"}},
		{name: "audit forbidden", args: []string{"audit", "--node", "n2"}, denyExec: true, code: 4,
			stdout: "node n2 (mntleak/mntleak-b): not audited: forbidden: your RBAC does not allow create pods/exec in namespace mntleak (kubectl auth can-i create pods/exec -n mntleak): no RBAC policy matched\n"},
		{name: "audit both", args: []string{"audit", "--node", "n1", "--all-nodes"}, code: 2, stderr: "kubectl mntleak audit: want --node NODE or --all-nodes\n"},
		{name: "audit neither", args: []string{"audit"}, code: 2, stderr: "kubectl mntleak audit: want --node NODE or --all-nodes\n"},
		{name: "release plan", args: []string{"release", "pod/web", "-n", "shop"}, code: 0, noStderr: true,
			stdout: "volume cache (emptyDir): mntleak release --mntns 4026532333 --mount-id 812\nplan: umount2 in mnt:[4026532333]\n",
			ran: []string{"mntleak-a: /mntleak why pod --pod-uid " + webUID + " --node-name n1 --kubelet-root=/data/kubelet --cri-socket=/run/k3s/containerd.sock --state-dir=/data/mntleak --json shop/web",
				"mntleak-a: /mntleak release --mntns 4026532333 --mount-id 812 --state-dir=/data/mntleak --journald-socket=/run/journal.sock"}},
		{name: "release apply", args: []string{"release", "pod/web", "-n", "shop", "--apply"}, code: 0,
			stdout: "volume cache (emptyDir): mntleak release --mntns 4026532333 --mount-id 812\nreleased: mount 812 at /data is gone from mnt:[4026532333]\n",
			stderr: "mntleak release: warning: the action record was not kept in the journal: no socket\n",
			ran: []string{"mntleak-a: /mntleak why pod --pod-uid " + webUID + " --node-name n1 --kubelet-root=/data/kubelet --cri-socket=/run/k3s/containerd.sock --state-dir=/data/mntleak --json shop/web",
				"mntleak-a: /mntleak release --mntns 4026532333 --mount-id 812 --state-dir=/data/mntleak --journald-socket=/run/journal.sock --apply"}},
		{name: "release plan as json", args: []string{"release", "pod/web", "-n", "shop", "--format", "json"}, code: 0, noStderr: true,
			stdout: `{"pod":"shop/web","uid":"` + webUID + `","node":"n1","applied":false,"objects":[{"object":"volume cache (emptyDir)","release":"mntleak release --mntns 4026532333 --mount-id 812","exit":0,` +
				`"records":[{"action":"release","result":"planned","step":{"mntns":4026532333,"mount_id":812}}]}]}` + "\n",
			ran: []string{"mntleak-a: /mntleak why pod --pod-uid " + webUID + " --node-name n1 --kubelet-root=/data/kubelet --cri-socket=/run/k3s/containerd.sock --state-dir=/data/mntleak --json shop/web",
				"mntleak-a: /mntleak release --mntns 4026532333 --mount-id 812 --state-dir=/data/mntleak --journald-socket=/run/journal.sock"}},
		{name: "release apply as json", args: []string{"release", "pod/web", "-n", "shop", "--apply", "--json"}, code: 0,
			stdout: `{"pod":"shop/web","uid":"` + webUID + `","node":"n1","applied":true,"objects":[{"object":"volume cache (emptyDir)","release":"mntleak release --mntns 4026532333 --mount-id 812","exit":0,` +
				`"records":[{"action":"release","result":"released","step":{"mntns":4026532333,"mount_id":812}}]}]}` + "\n",
			stderr: "mntleak release: warning: the action record was not kept in the journal: no socket\n",
			ran: []string{"mntleak-a: /mntleak why pod --pod-uid " + webUID + " --node-name n1 --kubelet-root=/data/kubelet --cri-socket=/run/k3s/containerd.sock --state-dir=/data/mntleak --json shop/web",
				"mntleak-a: /mntleak release --mntns 4026532333 --mount-id 812 --state-dir=/data/mntleak --journald-socket=/run/journal.sock --apply"}},
		{name: "release bad format", args: []string{"release", "pod/web", "-n", "shop", "--format", "yaml"}, code: 2,
			stderr: "kubectl mntleak release: invalid --format \"yaml\": want human or json\n"},
		{name: "why as json by --format", args: []string{"why", "--pod-uid", webUID, "--node", "n1", "--format", "json"}, code: 1,
			stdout: `{"held":[{"object":{"text":"volume cache (emptyDir)"},"finding":{"release":"mntleak release --mntns 4026532333 --mount-id 812","summary":"leaked"}}]}` + "\n",
			stderr: "kubectl mntleak why: node n1, asking mntleak/mntleak-a\n",
			ran:    []string{"mntleak-a: /mntleak why pod --pod-uid " + webUID + " --node-name n1 --kubelet-root=/data/kubelet --cri-socket=/run/k3s/containerd.sock --state-dir=/data/mntleak --json"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, r := world(!tt.denyExec)
			if tt.forbidPod {
				c.PrependReactor("get", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
					return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "web", errors.New("no"))
				})
			}
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tt.args, &stdout, &stderr, &backend{client: c, runner: r})
			if code != tt.code || stdout.String() != tt.stdout || ((tt.stderr != "" || tt.noStderr) && stderr.String() != tt.stderr) {
				t.Errorf("exit %d, stdout:\n%s\nstderr:\n%s\nwant exit %d, stdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String(), tt.code, tt.stdout, tt.stderr)
			}
			if tt.stderr == "" && tt.code == 2 && strings.Count(stderr.String(), "\n") != 1 {
				t.Errorf("stderr %q: want one line", stderr.String())
			}
			if tt.args[0] == "audit" {
				slices.Sort(r.ran) // asks its nodes at once
			}
			if strings.Join(r.ran, "\n") != strings.Join(tt.ran, "\n") {
				t.Errorf("ran:\n%s\nwant:\n%s", strings.Join(r.ran, "\n"), strings.Join(tt.ran, "\n"))
			}
		})
	}
}

package k8snode_test

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mntleak/mntleak/e2e/k8snode"
	"github.com/mntleak/mntleak/e2e/testkit/privtest"
)

// TestControllers: the controllers run as on a real cluster. The token
// controller made the default ServiceAccount and kube-root-ca.crt (up.sh
// creates neither), the DaemonSet controller makes a DaemonSet's pod, the
// scheduler binds it to the node, the kubelet runs it with its projected
// token, and kubectl exec reaches it; deleting the DaemonSet deletes it.
func TestControllers(t *testing.T) {
	n := k8snode.Up(t)
	for _, obj := range []string{"serviceaccount/default", "configmap/kube-root-ca.crt"} {
		n.Kubectl(t, "get", "-n", ns, obj)
	}
	ds := k8snode.DaemonSet(ns, "ds-controllers")
	n.Apply(t, ds)
	t.Cleanup(func() { _, _ = n.KubectlErr(nil, "delete", "daemonset", "-n", ns, ds.Name, "--ignore-not-found") })
	var name string
	privtest.WaitFor(t, k8snode.PodStart, "a pod of DaemonSet "+ds.Name, func() bool {
		out, err := n.KubectlErr(nil, "get", "pods", "-n", ns, "-l", "app="+ds.Name, "-o", "jsonpath={.items[*].metadata.name}")
		name = strings.TrimSpace(out)
		return err == nil && name != ""
	})
	n.WaitPodRunning(t, ns, name)
	got := n.Kubectl(t, "get", "pod", "-n", ns, name, "-o", "jsonpath={.metadata.ownerReferences[0].kind} {.spec.nodeName}")
	if want := "DaemonSet " + n.Name; got != want {
		t.Errorf("pod %s: owner and node %q, want %q", name, got, want)
	}
	if out := n.Kubectl(t, "exec", "-n", ns, name, "--", "cat", "/var/run/secrets/kubernetes.io/serviceaccount/namespace"); out != ns {
		t.Errorf("pod %s: its service account token's namespace %q, want %q", name, out, ns)
	}
	n.Kubectl(t, "delete", "daemonset", "-n", ns, ds.Name, "--wait=true", "--timeout=60s")
	if !n.WaitPodGone(ns, name, 60*time.Second) {
		t.Errorf("pod %s still there after its DaemonSet was deleted", name)
	}
}

// TestImportImage: an image archive made here (one layer: a static busybox
// as /bin/sh and /bin/sleep) is imported into the node's containerd under a
// new name, and a pod runs it with imagePullPolicy Never.
func TestImportImage(t *testing.T) {
	n := k8snode.Up(t)
	ref := "docker.io/library/mntleak-k8slab-import:" + strconv.FormatInt(time.Now().UnixNano(), 36)
	tarPath := filepath.Join(t.TempDir(), "image.tar")
	writeImage(t, tarPath, ref, "/bin/busybox")
	n.ImportImage(t, tarPath, ref)
	m := k8snode.MemoryEmptyDirPod(ns, "imported").WithImage(ref)
	n.Apply(t, m)
	p := n.WaitPodRunning(t, ns, m.Name)
	if out := n.Kubectl(t, "get", "pod", "-n", ns, m.Name, "-o", "jsonpath={.status.containerStatuses[0].image}"); out != ref {
		t.Errorf("pod runs image %q, want %q", out, ref)
	}
	if n.DeletePod(t, ns, m.Name, true) {
		t.Errorf("pod %s stuck", m.Name)
	}
	nothingNaming(t, m.Name, p.UID)
}

// writeImage writes a docker-archive (what docker save writes) holding one
// layer with the static binary at /bin/busybox and /bin/sh, /bin/sleep,
// /bin/echo links to it.
func writeImage(t *testing.T, path, ref, busybox string) {
	t.Helper()
	bin, err := os.ReadFile(busybox)
	if err != nil {
		t.Skipf("no static busybox for the image: %v", err)
	}
	var layer bytes.Buffer
	lw := tar.NewWriter(&layer)
	for _, h := range []*tar.Header{
		{Name: "bin/", Typeflag: tar.TypeDir, Mode: 0o755},
		{Name: "bin/busybox", Typeflag: tar.TypeReg, Mode: 0o755, Size: int64(len(bin))},
		{Name: "bin/sh", Typeflag: tar.TypeSymlink, Linkname: "busybox", Mode: 0o777},
		{Name: "bin/sleep", Typeflag: tar.TypeSymlink, Linkname: "busybox", Mode: 0o777},
		{Name: "data/", Typeflag: tar.TypeDir, Mode: 0o755},
		{Name: "tmp/", Typeflag: tar.TypeDir, Mode: 0o1777},
	} {
		if err := lw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := lw.Write(bin); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := lw.Close(); err != nil {
		t.Fatal(err)
	}
	diffID := fmt.Sprintf("%x", sha256.Sum256(layer.Bytes()))
	config, _ := json.Marshal(map[string]any{
		"architecture": runtime.GOARCH, "os": "linux",
		"config": map[string]any{"Env": []string{"PATH=/bin"}, "Cmd": []string{"sh"}},
		"rootfs": map[string]any{"type": "layers", "diff_ids": []string{"sha256:" + diffID}},
	})
	configName := fmt.Sprintf("%x.json", sha256.Sum256(config))
	manifest, _ := json.Marshal([]map[string]any{{"Config": configName, "RepoTags": []string{ref}, "Layers": []string{diffID + "/layer.tar"}}})
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := tar.NewWriter(f)
	for _, e := range []struct {
		name string
		data []byte
	}{{diffID + "/layer.tar", layer.Bytes()}, {configName, config}, {"manifest.json", manifest}} {
		if err := w.WriteHeader(&tar.Header{Name: e.name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(e.data))}); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(e.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

package k8snode_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/mntleak/mntleak/e2e/k8snode"
)

// TestManifests: each scenario builder renders the manifest in
// testdata/<name>.yaml (go test -update rewrites them), and the paths it
// returns are the ones its pod's script uses.
func TestManifests(t *testing.T) {
	const uid = "0a1b2c3d-0000-4000-8000-000000000001"
	victim := k8snode.EmptyDirPod("default", "victim")
	work := k8snode.MemoryEmptyDirPod("default", "work")
	mounter := k8snode.BidirectionalMounter("default", "mounter", victim, uid)
	pinner := k8snode.Pinner("default", "pinner", work, uid)
	for _, tc := range []struct {
		golden string
		m      k8snode.Manifest
		paths  map[string]string // returned path → what it must be
	}{
		{"emptydir-pod", victim.Manifest, map[string]string{
			victim.HostDir(uid): "/var/lib/kubelet/pods/" + uid + "/volumes/kubernetes.io~empty-dir/data"}},
		{"memory-emptydir-pod", work.Manifest, map[string]string{
			work.HostDir(uid): "/var/lib/kubelet/pods/" + uid + "/volumes/kubernetes.io~empty-dir/data"}},
		{"bidirectional-mounter", mounter.Manifest, map[string]string{
			mounter.HostPath: "/var/lib/kubelet/pods/" + uid + "/volumes/kubernetes.io~empty-dir/data/held"}},
		{"pinner", pinner.Manifest, map[string]string{
			pinner.PinDir:  "/var/lib/kubelet/pods/" + uid + "/volumes/kubernetes.io~empty-dir/data",
			pinner.PinFile: "/var/lib/kubelet/pods/" + uid + "/volumes/kubernetes.io~empty-dir/data/secret"}},
		{"bidirectional-pod", k8snode.BidirectionalPod("default", "plugin"), nil},
		{"kubelet-hostpath-pod", k8snode.KubeletHostPathPod("default", "hostpath").Manifest, nil},
		{"daemonset", k8snode.DaemonSet("default", "ds"), nil},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			got := tc.m.YAML()
			file := filepath.Join("testdata", tc.golden+".yaml")
			if *update {
				if err := os.WriteFile(file, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(file)
			if err != nil {
				t.Fatalf("%v (go test -update writes it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s differs from %s (go test -update rewrites it):\n%s", tc.golden, file, got)
			}
			for p, want := range tc.paths {
				if p != want {
					t.Errorf("path %s, want %s", p, want)
				}
			}
		})
	}
}

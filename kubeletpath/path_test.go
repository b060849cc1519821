package kubeletpath

import "testing"

const podUID = "0f3c2a4e-5b6d-4e7f-8a9b-1c2d3e4f5a6b"

func TestParse(t *testing.T) {
	tests := []struct {
		name, root, path string
		ok               bool
		want             Volume
		text             string
	}{
		{"emptyDir", DefaultRoot, "/var/lib/kubelet/pods/" + podUID + "/volumes/kubernetes.io~empty-dir/cache", true,
			Volume{PodUID: podUID, Name: "cache", Type: "emptyDir"}, "volume cache (emptyDir)"},
		{"a file in a secret", DefaultRoot, "/var/lib/kubelet/pods/" + podUID + "/volumes/kubernetes.io~secret/token/..data/ca.crt", true,
			Volume{PodUID: podUID, Name: "token", Type: "secret"}, "volume token (secret)"},
		{"configMap", "/var/lib/kubelet/", "/var/lib/kubelet/pods/" + podUID + "/volumes/kubernetes.io~configmap/cfg", true,
			Volume{PodUID: podUID, Name: "cfg", Type: "configMap"}, "volume cfg (configMap)"},
		{"projected", DefaultRoot, "/var/lib/kubelet/pods/" + podUID + "/volumes/kubernetes.io~projected/kube-api-access-x2x9z", true,
			Volume{PodUID: podUID, Name: "kube-api-access-x2x9z", Type: "projected"}, "volume kube-api-access-x2x9z (projected)"},
		{"csi mount", DefaultRoot, "/var/lib/kubelet/pods/" + podUID + "/volumes/kubernetes.io~csi/pvc-1234/mount", true,
			Volume{PodUID: podUID, Name: "pvc-1234", Type: "csi"}, "volume pvc-1234 (csi)"},
		{"flexvolume", DefaultRoot, "/var/lib/kubelet/pods/" + podUID + "/volumes/example.com~lvm/data", true,
			Volume{PodUID: podUID, Name: "data", Type: "example.com/lvm"}, "volume data (example.com/lvm)"},
		{"subPath", DefaultRoot, "/var/lib/kubelet/pods/" + podUID + "/volume-subpaths/cfg/app/0", true,
			Volume{PodUID: podUID, Name: "cfg", SubPath: true, Container: "app"}, "volume cfg (subPath of container app)"},
		{"block", DefaultRoot, "/var/lib/kubelet/pods/" + podUID + "/volumeDevices/kubernetes.io~csi/pvc-9", true,
			Volume{PodUID: podUID, Name: "pvc-9", Type: "csi", Block: true}, "volume pvc-9 (csi, block)"},
		{"the pod's directory", DefaultRoot, "/var/lib/kubelet/pods/" + podUID, true, Volume{PodUID: podUID}, ""},
		{"the plugin's directory", DefaultRoot, "/var/lib/kubelet/pods/" + podUID + "/volumes/kubernetes.io~secret", true, Volume{PodUID: podUID}, ""},
		{"etc-hosts", DefaultRoot, "/var/lib/kubelet/pods/" + podUID + "/etc-hosts", true, Volume{PodUID: podUID}, ""},
		{"static pod", DefaultRoot, "/var/lib/kubelet/pods/5c7f8d6b1e2a3c4d5e6f708192a3b4c5/volumes/kubernetes.io~empty-dir/x", true,
			Volume{PodUID: "5c7f8d6b1e2a3c4d5e6f708192a3b4c5", Name: "x", Type: "emptyDir"}, "volume x (emptyDir)"},
		{"custom root", "/tmp/mntleak-x", "/tmp/mntleak-x/pods/" + podUID + "/volumes/kubernetes.io~empty-dir/cache", true,
			Volume{PodUID: podUID, Name: "cache", Type: "emptyDir"}, "volume cache (emptyDir)"},
		{"dot-dot out of the pod", DefaultRoot, "/var/lib/kubelet/pods/" + podUID + "/../../plugins/x", false, Volume{}, ""},
		{"not a uid", DefaultRoot, "/var/lib/kubelet/pods/web/volumes/kubernetes.io~empty-dir/cache", false, Volume{}, ""},
		{"plugins", DefaultRoot, "/var/lib/kubelet/plugins/kubernetes.io/rbd/mounts/k8s-image-pvc-c838258f", false, Volume{}, ""},
		{"another root", DefaultRoot, "/data/kubelet/pods/" + podUID + "/volumes/kubernetes.io~empty-dir/cache", false, Volume{}, ""},
		{"a prefix of the root", DefaultRoot, "/var/lib/kubelet2/pods/" + podUID + "/volumes/kubernetes.io~empty-dir/cache", false, Volume{}, ""},
		{"empty root", "", "/pods/" + podUID + "/volumes/kubernetes.io~empty-dir/cache", false, Volume{}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := Parse(tt.root, tt.path)
			if ok != tt.ok || got != tt.want {
				t.Fatalf("Parse(%q, %q) = %+v, %v; want %+v, %v", tt.root, tt.path, got, ok, tt.want, tt.ok)
			}
			if s := got.Text(); s != tt.text {
				t.Errorf("Text() = %q, want %q", s, tt.text)
			}
		})
	}
}

func TestFind(t *testing.T) {
	tests := []struct {
		name, path string
		ok         bool
		want       Volume
	}{
		{"under the root", "/var/lib/kubelet/pods/" + podUID + "/volumes/kubernetes.io~empty-dir/cache", true,
			Volume{PodUID: podUID, Name: "cache", Type: "emptyDir"}},
		{"through a hostPath of /", "/rootfs/var/lib/kubelet/pods/" + podUID + "/volumes/kubernetes.io~secret/tok", true,
			Volume{PodUID: podUID, Name: "tok", Type: "secret"}},
		{"through a hostPath of the kubelet root", "/host/kubelet/pods/" + podUID + "/volume-subpaths/cfg/app/1", true,
			Volume{PodUID: podUID, Name: "cfg", SubPath: true, Container: "app"}},
		{"the innermost pod directory", "/x/pods/" + podUID + "/volumes/kubernetes.io~empty-dir/a/pods/1a2b3c4d-0000-4000-8000-000000000001/volumes/kubernetes.io~csi/v", true,
			Volume{PodUID: "1a2b3c4d-0000-4000-8000-000000000001", Name: "v", Type: "csi"}},
		{"a pod directory, no volume", "/host/kubelet/pods/" + podUID + "/etc-hosts", false, Volume{}},
		{"a static pod's hash away from the root", "/host/pods/5c7f8d6b1e2a3c4d5e6f708192a3b4c5/volumes/kubernetes.io~empty-dir/x", false, Volume{}},
		{"a stray pods directory", "/srv/pods/web/volumes/data", false, Volume{}},
		{"nothing", "/tmp/x", false, Volume{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := Find(DefaultRoot, tt.path)
			if ok != tt.ok || got != tt.want {
				t.Fatalf("Find(%q) = %+v, %v; want %+v, %v", tt.path, got, ok, tt.want, tt.ok)
			}
		})
	}
}

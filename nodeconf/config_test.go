package nodeconf

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/mntleak/mntleak/nodeview"
)

// TestRead writes each node's files into a directory and reads them
// through a view rooted there, as a pod reads the node's through
// /proc/1/root.
func TestRead(t *testing.T) {
	dockerSlave := "[Unit]\nDescription=Docker\n[Service]\nExecStart=/usr/bin/dockerd\nMountFlags=slave\n"
	for _, tt := range []struct {
		name     string
		files    map[string]string
		cmdlines map[string][]string
		want     Config
		problems []string // substrings, one per problem
	}{
		{name: "nothing configured", want: Config{DockerRoot: DefaultDockerRoot, ContainerdRoot: DefaultContainerdRoot, KubeletRoot: DefaultKubeletRoot}},
		{name: "docker data-root and live-restore, containerd root, kubelet root-dir",
			files: map[string]string{
				DockerConfig:     `{"data-root": "/data/docker/", "live-restore": true}`,
				ContainerdConfig: "version = 2\nroot = \"/data/containerd\"\nstate = \"/run/containerd\"\n[plugins]\n",
			},
			cmdlines: map[string][]string{"kubelet": {"/usr/bin/kubelet --config=/var/lib/kubelet/config.yaml --root-dir /data/kubelet"}},
			want:     Config{DockerRoot: "/data/docker", LiveRestore: true, ContainerdRoot: "/data/containerd", KubeletRoot: "/data/kubelet"}},
		{name: "legacy graph, live-restore on the command line",
			files:    map[string]string{DockerConfig: `{"graph": "/srv/docker"}`},
			cmdlines: map[string][]string{"dockerd": {"/usr/bin/dockerd\x00-H\x00fd://\x00--live-restore"}},
			want:     Config{DockerRoot: "/srv/docker", LiveRestore: true, ContainerdRoot: DefaultContainerdRoot, KubeletRoot: DefaultKubeletRoot}},
		{name: "live-restore=false on the command line overrides nothing",
			cmdlines: map[string][]string{"dockerd": {"/usr/bin/dockerd --live-restore=false --data-root=/d"}},
			want:     Config{DockerRoot: "/d", ContainerdRoot: DefaultContainerdRoot, KubeletRoot: DefaultKubeletRoot}},
		{name: "unreadable configuration named",
			files:    map[string]string{DockerConfig: `{"data-root": `, ContainerdConfig: "root = [\n"},
			want:     Config{DockerRoot: DefaultDockerRoot, ContainerdRoot: DefaultContainerdRoot, KubeletRoot: DefaultKubeletRoot},
			problems: []string{DockerConfig + ": unexpected end of JSON input", ContainerdConfig + ": toml:"}},
		{name: "docker.service with MountFlags=slave, containerd with PrivateTmp in a drop-in",
			files: map[string]string{
				"/lib/systemd/system/docker.service":                    dockerSlave,
				"/lib/systemd/system/containerd.service":                "[Service]\nExecStart=/usr/bin/containerd\n",
				"/etc/systemd/system/containerd.service.d/tmp.conf":     "[Service]\nPrivateTmp=yes\n",
				"/etc/systemd/system/containerd.service.d/notes.txt":    "[Service]\nPrivateMounts=yes\n",
				"/lib/systemd/system/kubelet.service":                   "[Service]\n# MountFlags=private\nExecStart=/usr/bin/kubelet\n",
				"/etc/systemd/system/kubelet.service.d/10-kubeadm.conf": "[Unit]\nPrivateTmp=yes\n",
			},
			want: Config{DockerRoot: DefaultDockerRoot, ContainerdRoot: DefaultContainerdRoot, KubeletRoot: DefaultKubeletRoot, Units: []Unit{
				{Name: "docker.service", Setting: "MountFlags=slave", File: "/lib/systemd/system/docker.service"},
				{Name: "containerd.service", Setting: "PrivateTmp=yes", File: "/etc/systemd/system/containerd.service.d/tmp.conf"},
			}}},
		{name: "a drop-in that resets MountFlags, an /etc unit that shadows /lib's",
			files: map[string]string{
				"/lib/systemd/system/docker.service":               dockerSlave,
				"/etc/systemd/system/docker.service.d/shared.conf": "[Service]\nMountFlags=\n",
				"/lib/systemd/system/crio.service":                 "[Service]\nProtectSystem=full\n",
				"/etc/systemd/system/crio.service":                 "[Service]\nExecStart=/usr/bin/crio\nProtectSystem=no\n",
			},
			want: Config{DockerRoot: DefaultDockerRoot, ContainerdRoot: DefaultContainerdRoot, KubeletRoot: DefaultKubeletRoot}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			for p, content := range tt.files {
				full := filepath.Join(root, p)
				if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got := Read(nodeview.View{Kind: nodeview.NodeRoot, Root: root}, tt.cmdlines)
			problems := got.Problems
			got.Problems = nil
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Read =\n %+v\nwant\n %+v", got, tt.want)
			}
			if len(problems) != len(tt.problems) {
				t.Fatalf("problems %q, want %d", problems, len(tt.problems))
			}
			for i, p := range tt.problems {
				if !strings.Contains(problems[i], p) {
					t.Errorf("problem %q lacks %q", problems[i], p)
				}
			}
		})
	}
}

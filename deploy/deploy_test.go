package deploy

import (
	"bufio"
	"os"
	"os/exec"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/mntleak/mntleak/e2e/testkit/privtest"
)

// mountNamespaceOptions make systemd give a unit its own mount namespace.
var mountNamespaceOptions = []string{
	"PrivateTmp", "MountFlags", "PrivateDevices", "ProtectSystem", "ProtectHome", "ProtectKernelTunables",
	"ProtectKernelModules", "ProtectKernelLogs", "ProtectControlGroups", "ProtectProc", "ProtectClock",
	"ReadOnlyPaths", "ReadWritePaths", "InaccessiblePaths", "TemporaryFileSystem", "BindPaths",
	"BindReadOnlyPaths", "RootDirectory", "RootImage", "PrivateMounts", "NetworkNamespacePath",
}

var wantCaps = []string{"BPF", "DAC_READ_SEARCH", "PERFMON", "SYS_ADMIN", "SYS_CHROOT", "SYS_PTRACE"}

func TestSystemdUnit(t *testing.T) {
	f, err := os.Open("systemd/mntleak.service")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	settings := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == '[' {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			t.Fatalf("not a setting: %q", line)
		}
		settings[k] = v
	}
	for _, opt := range mountNamespaceOptions {
		if _, ok := settings[opt]; ok {
			t.Errorf("%s= gives the unit its own mount namespace: mntleak would hold copies of every mount", opt)
		}
	}
	if !strings.Contains(settings["ExecStart"], "mntleak trace") || !strings.Contains(settings["ExecStart"], "--journald on") {
		t.Errorf("ExecStart %q", settings["ExecStart"])
	}
	for _, key := range []string{"CapabilityBoundingSet", "AmbientCapabilities"} {
		var caps []string
		for _, c := range strings.Fields(settings[key]) {
			caps = append(caps, strings.TrimPrefix(c, "CAP_"))
		}
		sort.Strings(caps)
		if !reflect.DeepEqual(caps, wantCaps) {
			t.Errorf("%s = %v, want %v", key, caps, wantCaps)
		}
	}
}

// dsSpec is the part of a DaemonSet's spec the tests read.
type dsSpec struct {
	Template struct {
		Metadata struct {
			Labels      map[string]string
			Annotations map[string]string
		}
		Spec struct {
			HostPID                      bool              `yaml:"hostPID"`
			HostNetwork                  bool              `yaml:"hostNetwork"`
			AutomountServiceAccountToken *bool             `yaml:"automountServiceAccountToken"`
			PriorityClassName            string            `yaml:"priorityClassName"`
			NodeSelector                 map[string]string `yaml:"nodeSelector"`
			Tolerations                  []map[string]any
			Containers                   []container
			Volumes                      []struct {
				Name     string
				HostPath *struct{ Path, Type string } `yaml:"hostPath"`
			}
		}
	}
}

type container struct {
	Image           string
	ImagePullPolicy string `yaml:"imagePullPolicy"`
	Args            []string
	Env             []struct {
		Name      string
		ValueFrom struct {
			FieldRef struct {
				FieldPath string `yaml:"fieldPath"`
			} `yaml:"fieldRef"`
		} `yaml:"valueFrom"`
	}
	Ports []struct {
		Name          string
		ContainerPort int `yaml:"containerPort"`
	}
	LivenessProbe   map[string]any `yaml:"livenessProbe"`
	Resources       struct{ Requests, Limits map[string]string }
	SecurityContext struct {
		Privileged               bool
		AllowPrivilegeEscalation *bool `yaml:"allowPrivilegeEscalation"`
		Capabilities             struct{ Add, Drop []string }
	} `yaml:"securityContext"`
	VolumeMounts []struct {
		Name             string
		MountPath        string `yaml:"mountPath"`
		ReadOnly         bool   `yaml:"readOnly"`
		MountPropagation string `yaml:"mountPropagation"`
	} `yaml:"volumeMounts"`
}

func (c *container) port(name string) *struct {
	Name          string
	ContainerPort int `yaml:"containerPort"`
} {
	for i := range c.Ports {
		if c.Ports[i].Name == name {
			return &c.Ports[i]
		}
	}
	return nil
}

// env is the downward API field an environment variable comes from.
func (c *container) env(name string) string {
	for _, e := range c.Env {
		if e.Name == name {
			return e.ValueFrom.FieldRef.FieldPath
		}
	}
	return ""
}

// checkDaemonSet checks what every rendering must keep: hostPID without
// hostNetwork, one unprivileged container with exactly the six
// capabilities, every hostPath mounted HostToContainer (mntleak must
// never hold a mount itself), BTF mounted, the tracer run.
func checkDaemonSet(t *testing.T, ds *dsSpec) {
	t.Helper()
	spec := ds.Template.Spec
	if !spec.HostPID || spec.HostNetwork || len(spec.Containers) != 1 {
		t.Fatalf("hostPID %v hostNetwork %v containers %d: want hostPID only, one container", spec.HostPID, spec.HostNetwork, len(spec.Containers))
	}
	c := spec.Containers[0]
	add := append([]string(nil), c.SecurityContext.Capabilities.Add...)
	sort.Strings(add)
	sc := c.SecurityContext
	if sc.Privileged || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || !reflect.DeepEqual(add, wantCaps) || !reflect.DeepEqual(sc.Capabilities.Drop, []string{"ALL"}) {
		t.Errorf("securityContext %+v: want unprivileged, no escalation, drop ALL, add exactly %v", sc, wantCaps)
	}
	hostPaths := map[string]string{}
	for _, v := range spec.Volumes {
		if v.HostPath != nil {
			hostPaths[v.Name] = v.HostPath.Path
		}
	}
	mounted := map[string]bool{}
	for _, m := range c.VolumeMounts {
		if m.MountPropagation != "HostToContainer" {
			t.Errorf("volume %s at %s has mountPropagation %q: every hostPath must be HostToContainer, or mntleak holds copies", m.Name, m.MountPath, m.MountPropagation)
		}
		if hostPaths[m.Name] != m.MountPath {
			t.Errorf("volume %s: host's %s mounted at %s: node paths must keep their names in the pod", m.Name, hostPaths[m.Name], m.MountPath)
		}
		mounted[hostPaths[m.Name]] = true
	}
	if !mounted["/sys/kernel/btf"] {
		t.Errorf("/sys/kernel/btf is not mounted into the pod")
	}
	if len(c.Args) == 0 || c.Args[0] != "trace" {
		t.Errorf("args %v do not run the tracer", c.Args)
	}
}

// TestDaemonSet checks the shipped manifest's DaemonSet.
func TestDaemonSet(t *testing.T) {
	f, err := os.Open("kubernetes/daemonset.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ds := daemonSetOf(t, decodeAll(t, f))
	checkDaemonSet(t, ds)
	c := ds.Template.Spec.Containers[0]
	for _, p := range []string{"/run/systemd/journal/socket", "/var/lib/mntleak"} {
		if !hasMount(&c, p, false) {
			t.Errorf("%s is not mounted into the pod", p)
		}
	}
}

// TestVagrantfile: the lab's Vagrantfile parses (ruby -c), names both
// boxes and installs the unit this package checks.
func TestVagrantfile(t *testing.T) {
	b, err := os.ReadFile("../Vagrantfile")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"ubuntu" =>`, `"rocky8" =>`, "fs.may_detach_mounts", "deploy/systemd/mntleak.service", "go build"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("Vagrantfile lacks %s", want)
		}
	}
	privtest.RequireCommands(t, "ruby") // make deps installs it
	out, err := exec.Command("ruby", "-c", "../Vagrantfile").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "Syntax OK") {
		t.Errorf("ruby -c Vagrantfile: %v\n%s", err, out)
	}
}

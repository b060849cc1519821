package deploy

import (
	"bufio"
	"os"
	"os/exec"
	"reflect"
	"sort"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/mntleak/mntleak/internal/privtest"
)

// mountNamespaceOptions make systemd give a unit its own mount namespace.
var mountNamespaceOptions = []string{
	"PrivateTmp", "MountFlags", "PrivateDevices", "ProtectSystem", "ProtectHome", "ProtectKernelTunables",
	"ProtectKernelModules", "ProtectKernelLogs", "ProtectControlGroups", "ProtectProc", "ProtectClock",
	"ReadOnlyPaths", "ReadWritePaths", "InaccessiblePaths", "TemporaryFileSystem", "BindPaths",
	"BindReadOnlyPaths", "RootDirectory", "RootImage", "PrivateMounts", "NetworkNamespacePath",
}

var wantCaps = []string{"BPF", "DAC_READ_SEARCH", "PERFMON", "SYS_ADMIN", "SYS_PTRACE"}

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

type manifest struct {
	Kind string
	Spec struct {
		Template struct {
			Spec struct {
				HostPID     bool `yaml:"hostPID"`
				HostNetwork bool `yaml:"hostNetwork"`
				Containers  []struct {
					Args            []string
					SecurityContext struct {
						Privileged   bool
						Capabilities struct{ Add, Drop []string }
					} `yaml:"securityContext"`
					VolumeMounts []struct {
						Name             string
						MountPath        string `yaml:"mountPath"`
						MountPropagation string `yaml:"mountPropagation"`
					} `yaml:"volumeMounts"`
				}
				Volumes []struct {
					Name     string
					HostPath *struct{ Path, Type string } `yaml:"hostPath"`
				}
			}
		}
	}
}

func TestDaemonSet(t *testing.T) {
	f, err := os.Open("kubernetes/daemonset.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dec := yaml.NewDecoder(f)
	var ds *manifest
	for {
		var m manifest
		if err := dec.Decode(&m); err != nil {
			break
		}
		if m.Kind == "DaemonSet" {
			ds = &m
		}
	}
	if ds == nil {
		t.Fatal("no DaemonSet in the manifest")
	}
	spec := ds.Spec.Template.Spec
	if !spec.HostPID || spec.HostNetwork || len(spec.Containers) != 1 {
		t.Errorf("hostPID %v hostNetwork %v containers %d: want hostPID only, one container", spec.HostPID, spec.HostNetwork, len(spec.Containers))
	}
	c := spec.Containers[0]
	add := append([]string(nil), c.SecurityContext.Capabilities.Add...)
	sort.Strings(add)
	if c.SecurityContext.Privileged || !reflect.DeepEqual(add, wantCaps) || !reflect.DeepEqual(c.SecurityContext.Capabilities.Drop, []string{"ALL"}) {
		t.Errorf("securityContext %+v: want unprivileged, drop ALL, add exactly %v", c.SecurityContext, wantCaps)
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
		mounted[hostPaths[m.Name]] = true
	}
	for _, p := range []string{"/sys/kernel/btf", "/run/systemd/journal/socket"} {
		if !mounted[p] {
			t.Errorf("%s is not mounted into the pod", p)
		}
	}
	if !strings.Contains(strings.Join(c.Args, " "), "trace") {
		t.Errorf("args %v do not run the tracer", c.Args)
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

package deploy

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"reflect"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/mntleak/mntleak/e2e/testkit/privtest"
	releasepkg "github.com/mntleak/mntleak/release"
)

// helm runs deploy/helm/helm.sh (which builds the helm CLI into its cache
// the first time, from the Go module proxy) and returns its stdout.
func helm(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command("helm/helm.sh", args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("helm.sh %s: %v\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// object is one rendered Kubernetes object, kept whole for the checks.
type object struct {
	Kind     string
	Metadata struct {
		Name        string
		Namespace   string
		Annotations map[string]string
	}
	Spec  yaml.Node
	Rules []struct {
		APIGroups []string `yaml:"apiGroups"`
		Resources []string
		Verbs     []string
	}
	AutomountServiceAccountToken *bool `yaml:"automountServiceAccountToken"`
}

// decodeAll decodes a multi-document YAML stream.
func decodeAll(t *testing.T, r io.Reader) []object {
	t.Helper()
	dec := yaml.NewDecoder(r)
	var out []object
	for {
		var o object
		err := dec.Decode(&o)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("decode the manifest: %v", err)
		}
		if o.Kind != "" {
			out = append(out, o)
		}
	}
}

func kinds(objs []object) []string {
	var ks []string
	for _, o := range objs {
		ks = append(ks, o.Kind)
	}
	slices.Sort(ks)
	return ks
}

// daemonSetOf decodes the DaemonSet's spec.
func daemonSetOf(t *testing.T, objs []object) *dsSpec {
	t.Helper()
	for _, o := range objs {
		if o.Kind == "DaemonSet" {
			var s dsSpec
			if err := o.Spec.Decode(&s); err != nil {
				t.Fatalf("DaemonSet spec: %v", err)
			}
			return &s
		}
	}
	t.Fatalf("no DaemonSet among %v", kinds(objs))
	return nil
}

func version(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../VERSION")
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// TestChartLint: helm lint --strict passes.
func TestChartLint(t *testing.T) {
	out := helm(t, "lint")
	if !strings.Contains(out, "0 chart(s) failed") {
		t.Errorf("helm lint:\n%s", out)
	}
}

// TestManifestIsTheChart: the shipped manifest is the chart rendered with
// its defaults (make manifest writes it).
func TestManifestIsTheChart(t *testing.T) {
	rendered := helm(t, "render")
	shipped, err := os.ReadFile("kubernetes/daemonset.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if rendered != string(shipped) {
		a, b := strings.Split(rendered, "\n"), strings.Split(string(shipped), "\n")
		for i := range min(len(a), len(b)) {
			if a[i] != b[i] {
				t.Fatalf("deploy/kubernetes/daemonset.yaml drifted from the chart at line %d:\n chart: %q\n file:  %q\nrun make manifest", i+1, a[i], b[i])
			}
		}
		t.Fatalf("deploy/kubernetes/daemonset.yaml drifted from the chart (%d lines, the chart renders %d): run make manifest", len(b), len(a))
	}
}

// TestChartVersion: the chart's version and appVersion (the default image
// tag) are the repository's VERSION, the tag make image builds.
func TestChartVersion(t *testing.T) {
	b, err := os.ReadFile("helm/mntleak/Chart.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Version    string
		AppVersion string `yaml:"appVersion"`
	}
	if err := yaml.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	if v := version(t); c.Version != v || c.AppVersion != v {
		t.Errorf("Chart.yaml version %q appVersion %q, want VERSION %q", c.Version, c.AppVersion, v)
	}
}

// TestChartValues renders the chart with each set of values and checks
// what the values must change, and what they must not.
func TestChartValues(t *testing.T) {
	v := version(t)
	type check func(t *testing.T, objs []object, ds *dsSpec, c *container)
	for _, tt := range []struct {
		name  string
		set   []string
		kinds []string
		check check
	}{
		{"defaults", nil, []string{"ClusterRole", "ClusterRoleBinding", "DaemonSet", "Service", "ServiceAccount"}, func(t *testing.T, objs []object, ds *dsSpec, c *container) {
			if c.Image != "mntleak:"+v || c.ImagePullPolicy != "IfNotPresent" {
				t.Errorf("image %s %s, want mntleak:%s IfNotPresent (what make image builds)", c.Image, c.ImagePullPolicy, v)
			}
			wantArgs(t, c, "--journald=on", "--state-dir=/var/lib/mntleak", "--metrics-addr=$(POD_IP):9464", "--node-name=$(NODE_NAME)",
				"--kubelet-root=/var/lib/kubelet", "--cri-socket=/run/containerd/containerd.sock", "--docker-socket=", "--output=/dev/null",
				"--k8s-events=true")
			noArgs(t, c, "--pprof-addr", "--kubeconfig")
			if env := c.env("NODE_NAME"); env != "spec.nodeName" {
				t.Errorf("NODE_NAME from %q, want spec.nodeName", env)
			}
			if p := c.port("metrics"); p == nil || p.ContainerPort != 9464 {
				t.Errorf("ports %+v: want a containerPort named metrics, 9464", c.Ports)
			}
			if env := c.env("POD_IP"); env != "status.podIP" {
				t.Errorf("POD_IP from %q, want the downward API's status.podIP", env)
			}
			a := ds.Template.Metadata.Annotations
			if a["prometheus.io/scrape"] != "true" || a["prometheus.io/port"] != "9464" || a["prometheus.io/path"] != "/metrics" {
				t.Errorf("pod annotations %v", a)
			}
			if ds.Template.Spec.AutomountServiceAccountToken == nil || !*ds.Template.Spec.AutomountServiceAccountToken {
				t.Errorf("Events (on by default) need the service account token")
			}
			leastPrivilege(t, objs)
			if !hasMount(c, "/var/lib/kubelet", true) || !hasMount(c, "/run/systemd/journal/socket", false) || !hasMount(c, "/var/lib/mntleak", false) ||
				!hasMount(c, "/run/containerd/containerd.sock", false) {
				t.Errorf("volume mounts %+v", c.VolumeMounts)
			}
			// release (kubectl mntleak release --apply, run in the pod)
			// locks each copy in the node's lock directory, writable on a
			// read-only root filesystem and shared with a release run on
			// the node.
			if !hasMount(c, releasepkg.LockDir, false) || ds.hostPath("release-locks") != releasepkg.LockDir {
				t.Errorf("volume mounts %+v: want the node's %s, writable", c.VolumeMounts, releasepkg.LockDir)
			}
			if ds.Template.Spec.PriorityClassName != "system-node-critical" || len(ds.Template.Spec.Tolerations) != 1 {
				t.Errorf("priorityClassName %q tolerations %v", ds.Template.Spec.PriorityClassName, ds.Template.Spec.Tolerations)
			}
		}},
		{"event stream", []string{"eventStream=true"}, []string{"ClusterRole", "ClusterRoleBinding", "DaemonSet", "Service", "ServiceAccount"}, func(t *testing.T, objs []object, ds *dsSpec, c *container) {
			noArgs(t, c, "--output")
		}},
		{"events off", []string{"events.enabled=false"}, []string{"DaemonSet", "Service", "ServiceAccount"}, func(t *testing.T, objs []object, ds *dsSpec, c *container) {
			wantArgs(t, c, "--k8s-events=false", "--node-name=$(NODE_NAME)")
			noArgs(t, c, "--kubeconfig")
			if ds.Template.Spec.AutomountServiceAccountToken == nil || *ds.Template.Spec.AutomountServiceAccountToken {
				t.Errorf("the service account token is mounted without Events")
			}
		}},
		{"no journal, no state, no kubelet dir, no runtime socket", []string{"journald.enabled=false", "stateDir=", "kubeletDir=", "criSocket="}, nil, func(t *testing.T, objs []object, ds *dsSpec, c *container) {
			wantArgs(t, c, "--journald=off", "--state-dir=", "--cri-socket=")
			noArgs(t, c, "--kubelet-root")
			if len(c.VolumeMounts) != 2 || c.VolumeMounts[0].MountPath != "/sys/kernel/btf" || c.VolumeMounts[1].MountPath != releasepkg.LockDir ||
				len(ds.Template.Spec.Volumes) != 2 {
				t.Errorf("volume mounts %+v: want /sys/kernel/btf and release's lock directory only", c.VolumeMounts)
			}
		}},
		{"no metrics", []string{"metrics.enabled=false"}, []string{"ClusterRole", "ClusterRoleBinding", "DaemonSet", "ServiceAccount"}, func(t *testing.T, objs []object, ds *dsSpec, c *container) {
			noArgs(t, c, "--metrics-addr")
			if len(c.Ports) != 0 || len(ds.Template.Metadata.Annotations) != 0 || c.LivenessProbe != nil {
				t.Errorf("ports %v annotations %v probe %v without metrics", c.Ports, ds.Template.Metadata.Annotations, c.LivenessProbe)
			}
		}},
		{"monitors", []string{"metrics.serviceMonitor.enabled=true", "metrics.podMonitor.enabled=true", "metrics.port=9500"}, []string{"ClusterRole", "ClusterRoleBinding", "DaemonSet", "PodMonitor", "Service", "ServiceAccount", "ServiceMonitor"}, func(t *testing.T, objs []object, ds *dsSpec, c *container) {
			wantArgs(t, c, "--metrics-addr=$(POD_IP):9500")
			for _, o := range objs {
				if o.Kind == "ServiceMonitor" || o.Kind == "PodMonitor" {
					var s struct {
						Endpoints    []struct{ Port, Path string } `yaml:"endpoints"`
						PodEndpoints []struct{ Port, Path string } `yaml:"podMetricsEndpoints"`
					}
					if err := o.Spec.Decode(&s); err != nil {
						t.Fatal(err)
					}
					eps := append(s.Endpoints, s.PodEndpoints...)
					if len(eps) != 1 || eps[0].Port != "metrics" || eps[0].Path != "/metrics" {
						t.Errorf("%s endpoints %+v", o.Kind, eps)
					}
				}
			}
		}},
		{"Docker's socket", []string{"dockerSocket=/var/run/docker.sock", "criSocket="}, nil, func(t *testing.T, objs []object, ds *dsSpec, c *container) {
			wantArgs(t, c, "--docker-socket=/var/run/docker.sock", "--cri-socket=")
			if !hasMount(c, "/var/run/docker.sock", false) || hasMount(c, "/run/containerd/containerd.sock", false) {
				t.Errorf("volume mounts %+v", c.VolumeMounts)
			}
		}},
		{"pprof", []string{"pprof.enabled=true"}, nil, func(t *testing.T, objs []object, ds *dsSpec, c *container) {
			wantArgs(t, c, "--pprof-addr=127.0.0.1:6060")
			if c.port("pprof") != nil {
				t.Errorf("pprof must not be a containerPort")
			}
		}},
		{"own registry and scheduling", []string{"image.repository=registry.example.com/ops/mntleak", "image.tag=0.1.0-rc1", "image.pullPolicy=Always",
			"nodeSelector.pool=gpu", "priorityClassName=", "resources.limits.memory=512Mi", "extraArgs={--comm,dockerd}", "tolerations=null"}, nil,
			func(t *testing.T, objs []object, ds *dsSpec, c *container) {
				if c.Image != "registry.example.com/ops/mntleak:0.1.0-rc1" || c.ImagePullPolicy != "Always" {
					t.Errorf("image %s %s", c.Image, c.ImagePullPolicy)
				}
				if ds.Template.Spec.NodeSelector["pool"] != "gpu" || ds.Template.Spec.PriorityClassName != "" || len(ds.Template.Spec.Tolerations) != 0 {
					t.Errorf("nodeSelector %v priorityClassName %q tolerations %v", ds.Template.Spec.NodeSelector, ds.Template.Spec.PriorityClassName, ds.Template.Spec.Tolerations)
				}
				if c.Resources.Limits["memory"] != "512Mi" {
					t.Errorf("resources %+v", c.Resources)
				}
				if n := len(c.Args); n < 2 || c.Args[n-2] != "--comm" || c.Args[n-1] != "dockerd" {
					t.Errorf("extra args not last: %v", c.Args)
				}
			}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			args := []string{"template", "mntleak", "helm/mntleak", "--namespace", "mntleak"}
			for _, s := range tt.set {
				args = append(args, "--set", s)
			}
			path := strings.TrimSpace(helm(t, "path"))
			out, err := exec.Command(path, args...).CombinedOutput()
			if err != nil {
				t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
			}
			objs := decodeAll(t, bytes.NewReader(out))
			if tt.kinds != nil && !reflect.DeepEqual(kinds(objs), tt.kinds) {
				t.Errorf("objects %v, want %v", kinds(objs), tt.kinds)
			}
			ds := daemonSetOf(t, objs)
			checkDaemonSet(t, ds)
			tt.check(t, objs, ds, &ds.Template.Spec.Containers[0])
		})
	}
}

func wantArgs(t *testing.T, c *container, want ...string) {
	t.Helper()
	for _, w := range want {
		if !slices.Contains(c.Args, w) {
			t.Errorf("args %v lack %s", c.Args, w)
		}
	}
}

func noArgs(t *testing.T, c *container, prefixes ...string) {
	t.Helper()
	for _, a := range c.Args {
		for _, p := range prefixes {
			if strings.HasPrefix(a, p) {
				t.Errorf("args %v have %s", c.Args, a)
			}
		}
	}
}

func hasMount(c *container, path string, readOnly bool) bool {
	for _, m := range c.VolumeMounts {
		if m.MountPath == path && m.ReadOnly == readOnly {
			return true
		}
	}
	return false
}

// hostPath is the node path of the pod's hostPath volume name ("" for
// none).
func (ds *dsSpec) hostPath(name string) string {
	for _, v := range ds.Template.Spec.Volumes {
		if v.Name == name && v.HostPath != nil {
			return v.HostPath.Path
		}
	}
	return ""
}

// TestChartArgsParse: the daemon's own flag parser takes the args every
// value set renders (mntleak trace ARGS --help stops after parsing them:
// exit 0 only when each flag exists and parses).
func TestChartArgsParse(t *testing.T) {
	bin := privtest.Binary(t)
	for _, set := range [][]string{
		nil,
		{"events.enabled=true", "pprof.enabled=true", "metrics.serviceMonitor.enabled=true"},
		{"journald.enabled=false", "stateDir=", "kubeletDir=", "criSocket=", "dockerSocket=/var/run/docker.sock", "metrics.enabled=false"},
		{"extraArgs={--comm,dockerd,--buffer,perf}"},
	} {
		t.Run(strings.Join(set, ","), func(t *testing.T) {
			args := []string{"template", "mntleak", "helm/mntleak", "--namespace", "mntleak"}
			for _, s := range set {
				args = append(args, "--set", s)
			}
			out, err := exec.Command(strings.TrimSpace(helm(t, "path")), args...).CombinedOutput()
			if err != nil {
				t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
			}
			c := daemonSetOf(t, decodeAll(t, bytes.NewReader(out))).Template.Spec.Containers[0]
			cmd := exec.Command(bin, append(append([]string{}, c.Args...), "--help")...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Run(); err != nil {
				t.Errorf("mntleak %s --help: %v\n%s", strings.Join(c.Args, " "), err, firstLine(stderr.String()))
			}
		})
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// leastPrivilege checks the chart's ClusterRole: create and patch
// events.k8s.io events (nothing of the core group's), get and list pods,
// nothing else.
func leastPrivilege(t *testing.T, objs []object) {
	t.Helper()
	var got []string
	for _, o := range objs {
		if o.Kind != "ClusterRole" {
			continue
		}
		for _, r := range o.Rules {
			for _, res := range r.Resources {
				got = append(got, strings.Join(r.APIGroups, "+")+"/"+res+":"+strings.Join(r.Verbs, ","))
			}
		}
	}
	if want := []string{"events.k8s.io/events:create,patch", "/pods:get,list"}; !reflect.DeepEqual(got, want) {
		t.Errorf("RBAC rules %q, want %q only", got, want)
	}
}

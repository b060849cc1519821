package k8snode

import (
	"bytes"
	"fmt"

	"gopkg.in/yaml.v3"
)

// Images the node has without a registry (build.sh makes them, up.sh
// imports them); pods use them with imagePullPolicy Never.
const (
	BusyboxImage = "docker.io/library/busybox:k8slab"
	PauseImage   = "registry.k8s.io/pause:3.10"
)

// Manifest is one Kubernetes object for Node.Apply.
type Manifest struct {
	Kind      string
	Namespace string
	Name      string
	object    any
}

// YAML is the manifest as kubectl takes it.
func (m Manifest) YAML() []byte {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(m.object); err != nil { // only structs of strings, ints and bools go in
		panic(fmt.Sprintf("k8snode: marshal %s %s/%s: %v", m.Kind, m.Namespace, m.Name, err))
	}
	return b.Bytes()
}

// WithImage is the manifest with every container running image instead
// (imported with Node.ImportImage; pulled never).
func (m Manifest) WithImage(image string) Manifest {
	o, ok := m.object.(object)
	if !ok {
		return m
	}
	set := func(s podSpec) podSpec {
		s.Containers = append([]container(nil), s.Containers...)
		for i := range s.Containers {
			s.Containers[i].Image = image
		}
		return s
	}
	switch s := o.Spec.(type) {
	case podSpec:
		o.Spec = set(s)
	case daemonSetSpec:
		s.Template.Spec = set(s.Template.Spec)
		o.Spec = s
	}
	m.object = o
	return m
}

// The subset of the API the scenarios use, in the API's field names.
type (
	object struct {
		APIVersion string   `yaml:"apiVersion"`
		Kind       string   `yaml:"kind"`
		Metadata   metadata `yaml:"metadata"`
		Spec       any      `yaml:"spec"`
	}
	metadata struct {
		Name      string            `yaml:"name,omitempty"`
		Namespace string            `yaml:"namespace,omitempty"`
		Labels    map[string]string `yaml:"labels,omitempty"`
	}
	podSpec struct {
		TerminationGracePeriodSeconds int         `yaml:"terminationGracePeriodSeconds"`
		DNSPolicy                     string      `yaml:"dnsPolicy"`
		Containers                    []container `yaml:"containers"`
		Volumes                       []volume    `yaml:"volumes,omitempty"`
	}
	container struct {
		Name            string           `yaml:"name"`
		Image           string           `yaml:"image"`
		ImagePullPolicy string           `yaml:"imagePullPolicy"`
		Command         []string         `yaml:"command"`
		SecurityContext *securityContext `yaml:"securityContext,omitempty"`
		VolumeMounts    []volumeMount    `yaml:"volumeMounts,omitempty"`
	}
	securityContext struct {
		Privileged bool `yaml:"privileged"`
	}
	volumeMount struct {
		Name             string `yaml:"name"`
		MountPath        string `yaml:"mountPath"`
		MountPropagation string `yaml:"mountPropagation,omitempty"`
	}
	volume struct {
		Name     string    `yaml:"name"`
		EmptyDir *emptyDir `yaml:"emptyDir,omitempty"`
		HostPath *hostPath `yaml:"hostPath,omitempty"`
	}
	emptyDir struct {
		Medium string `yaml:"medium,omitempty"`
	}
	hostPath struct {
		Path string `yaml:"path"`
		Type string `yaml:"type,omitempty"`
	}
	daemonSetSpec struct {
		Selector labelSelector `yaml:"selector"`
		Template podTemplate   `yaml:"template"`
	}
	labelSelector struct {
		MatchLabels map[string]string `yaml:"matchLabels"`
	}
	podTemplate struct {
		Metadata metadata `yaml:"metadata"`
		Spec     podSpec  `yaml:"spec"`
	}
)

// pod is a one-container busybox pod running script with sh, with a short
// grace period (the script ends in sleep as pid 1, which SIGTERM does not
// stop: the kubelet kills it after the grace period) and the node's DNS
// settings (no cluster DNS here; ClusterFirst only adds a warning Event).
func pod(ns, name, script string, privileged bool, mounts []volumeMount, vols []volume) Manifest {
	c := container{
		Name: "main", Image: BusyboxImage, ImagePullPolicy: "Never",
		Command: []string{"sh", "-c", script}, VolumeMounts: mounts,
	}
	if privileged {
		c.SecurityContext = &securityContext{Privileged: true}
	}
	return Manifest{Kind: "Pod", Namespace: ns, Name: name, object: object{
		APIVersion: "v1", Kind: "Pod",
		Metadata: metadata{Name: name, Namespace: ns, Labels: map[string]string{"app.kubernetes.io/part-of": "mntleak-k8slab"}},
		Spec:     podSpec{TerminationGracePeriodSeconds: 1, DNSPolicy: "Default", Containers: []container{c}, Volumes: vols},
	}}
}

// DaemonSet is a busybox DaemonSet that sleeps: its pod is made by the
// DaemonSet controller and placed by the scheduler, as on a real cluster.
func DaemonSet(ns, name string) Manifest {
	labels := map[string]string{"app": name}
	spec := podSpec{TerminationGracePeriodSeconds: 1, DNSPolicy: "Default", Containers: []container{{
		Name: "main", Image: BusyboxImage, ImagePullPolicy: "Never", Command: []string{"sleep", "100000"},
	}}}
	return Manifest{Kind: "DaemonSet", Namespace: ns, Name: name, object: object{
		APIVersion: "apps/v1", Kind: "DaemonSet",
		Metadata: metadata{Name: name, Namespace: ns},
		Spec: daemonSetSpec{
			Selector: labelSelector{MatchLabels: labels},
			Template: podTemplate{Metadata: metadata{Labels: labels}, Spec: spec},
		},
	}}
}

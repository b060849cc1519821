package attribution

// The labels the kubelet puts on a pod's containers and sandbox (the CRI
// passes them through; dockershim and cri-dockerd put them on Docker
// containers).
const (
	LabelPodName       = "io.kubernetes.pod.name"
	LabelPodNamespace  = "io.kubernetes.pod.namespace"
	LabelPodUID        = "io.kubernetes.pod.uid"
	LabelContainerName = "io.kubernetes.container.name"
	// LabelDockerType is "podsandbox" on a Docker-run pod's sandbox
	// (dockershim, cri-dockerd).
	LabelDockerType = "io.kubernetes.docker.type"
)

// FromLabels fills the pod fields of c from a container's labels.
func FromLabels(c *Container, labels map[string]string) {
	c.Pod = labels[LabelPodName]
	c.Namespace = labels[LabelPodNamespace]
	c.PodUID = labels[LabelPodUID]
	c.PodContainer = labels[LabelContainerName]
	if c.PodContainer == "POD" || labels[LabelDockerType] == "podsandbox" {
		c.Sandbox, c.PodContainer = true, ""
	}
}

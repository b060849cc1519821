package correlate

import (
	"regexp"
	"strings"

	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/finding"
)

var (
	hex64 = regexp.MustCompile(`[0-9a-f]{64}`)
	// systemd units at the end of a cgroup path: ntpd.service, docker-<id>.scope.
	unitInPath = regexp.MustCompile(`([A-Za-z0-9:_.@\\-]+\.(?:service|scope))$`)
	// kubelet's pod cgroups: .../kubepods/burstable/pod<uid>/... or kubepods-burstable-pod<uid_with_underscores>.slice
	podUIDInPath = regexp.MustCompile(`pod([0-9a-f]{8}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{12})`)
)

// ContainerID returns the container id a cgroup path (or any path) names:
// docker (/docker/<id>, docker-<id>.scope), containerd/CRI
// (cri-containerd-<id>.scope, /kubepods/.../<id>), cri-o (crio-<id>.scope),
// podman (libpod-<id>.scope), and runtime directories such as
// /run/containerd/io.containerd.runtime.v2.task/k8s.io/<id>/rootfs.
func ContainerID(path string) string {
	return hex64.FindString(path)
}

// Unit returns the systemd unit at the end of a cgroup path, or "".
func Unit(cgroup string) string {
	m := unitInPath.FindStringSubmatch(strings.TrimSuffix(cgroup, "/"))
	if m == nil {
		return ""
	}
	return m[1]
}

// PodUID returns the Kubernetes pod UID a cgroup path carries, or "".
func PodUID(cgroup string) string {
	m := podUIDInPath.FindStringSubmatch(cgroup)
	if m == nil {
		return ""
	}
	return strings.ReplaceAll(m[1], "_", "-")
}

// workloadWords names where a process ran, from its cgroup path, as a
// summary says it: "pod UID" (finding.NamePods rewrites it once the pod's
// name is known), else "container 5f2c0e1a9b8d", else the unit
// ("ntpd.service"); "" when the path names none of them.
func workloadWords(cgroup string) string {
	switch {
	case cgroup == "":
		return ""
	case PodUID(cgroup) != "":
		return "pod " + PodUID(cgroup)
	case ContainerID(cgroup) != "":
		return "container " + finding.ShortID(ContainerID(cgroup))
	}
	return Unit(cgroup)
}

// actorName is the process an event was made by, named by its pod,
// container or unit when the event carried its cgroup:
// "mounter[701] (pod 0c2f3a1e-…)", else "mounter[701]".
func actorName(ev *event.Event) string {
	who := finding.ProcName(ev.Comm, int(ev.PID))
	if w := workloadWords(ev.Cgroup); w != "" {
		who += " (" + w + ")"
	}
	return who
}

// privateTmpRoot matches the root of the /tmp that systemd binds for a
// PrivateTmp=yes unit: /tmp/systemd-private-<boot id>-<unit>-<random>/tmp.
var privateTmpRoot = regexp.MustCompile(`/systemd-private-[0-9a-f]{32}-(.+)-[A-Za-z0-9]{6,}/tmp$`)

// PrivateTmpUnit returns the unit whose private /tmp a mount root is, or "".
func PrivateTmpUnit(root string) string {
	m := privateTmpRoot.FindStringSubmatch(strings.TrimSuffix(root, "//deleted"))
	if m == nil {
		return ""
	}
	return m[1]
}

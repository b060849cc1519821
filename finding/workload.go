package finding

import (
	"slices"
	"strings"
)

// Workload is who a process is in its container runtime's and
// Kubernetes' terms: set off the event path (package enrich) from the
// runtime's answer about the container id its cgroup names.
type Workload struct {
	ContainerID string `json:"container_id"`
	Runtime     string `json:"runtime,omitempty"` // cri, docker
	Name        string `json:"name,omitempty"`    // the runtime's name for the container
	Image       string `json:"image,omitempty"`
	// The pod, for a Kubernetes container.
	Pod          string `json:"pod,omitempty"`
	Namespace    string `json:"namespace,omitempty"`
	PodUID       string `json:"pod_uid,omitempty"`
	PodContainer string `json:"pod_container,omitempty"` // the container's name in the pod spec
	Sandbox      bool   `json:"sandbox,omitempty"`       // the pod's sandbox (pause) container
}

// StuckPod is the pod a finding's object belongs to: the failing path, or
// the leaked copy, lies under <kubelet root>/pods/<uid>/.
type StuckPod struct {
	UID       string `json:"uid"`
	Name      string `json:"name,omitempty"` // "" when no source knew the UID
	Namespace string `json:"namespace,omitempty"`
	// The volume, when the path lies in one: its name and type as the pod
	// spec gives them (secret, configMap, emptyDir, projected, csi, ...),
	// and its text ("volume cache (emptyDir)").
	Volume     string `json:"volume,omitempty"`
	VolumeType string `json:"volume_type,omitempty"`
	VolumeText string `json:"volume_text,omitempty"`
	// Tmpfs: the volume is a tmpfs (secret, projected token, Memory
	// emptyDir): a copy that survives keeps its data readable.
	Tmpfs bool `json:"tmpfs,omitempty"`
}

// PodText is the pod as the line names it: "pod default/web-7f9c", or
// by UID when its name is not known.
func (s *StuckPod) PodText() string {
	if s.Name != "" {
		return "pod " + s.Namespace + "/" + s.Name
	}
	return "pod uid " + s.UID
}

// Text is the workload as a finding line names it: "pod
// monitoring/node-exporter-x2x (container node-exporter)", "pod
// default/web (sandbox)", "container web (busybox)"; "" when only its id is
// known.
func (w *Workload) Text() string {
	if w == nil {
		return ""
	}
	switch {
	case w.Pod != "" && w.Sandbox:
		return "pod " + w.Namespace + "/" + w.Pod + " (sandbox)"
	case w.Pod != "" && w.PodContainer != "":
		return "pod " + w.Namespace + "/" + w.Pod + " (container " + w.PodContainer + ")"
	case w.Pod != "":
		return "pod " + w.Namespace + "/" + w.Pod
	case w.Name != "" && w.Image != "":
		return "container " + w.Name + " (" + w.Image + ")"
	case w.Name != "":
		return "container " + w.Name
	}
	return ""
}

// HolderWorkload is the workload of the process the finding names to act
// on (Actor), else of the first holding process whose workload is known,
// in a holder whose copy does not only receive the primary holder's mount
// (mntleak's own pod, whose HostToContainer copy of the kubelet's
// directory has every pod's mounts, is never named for them).
func (f *Finding) HolderWorkload() *Workload {
	if _, a := f.Actor(); a != nil && a.Workload.Text() != "" {
		return a.Workload
	}
	for i := range f.Holders {
		h := &f.Holders[i]
		if i > 0 && h.receives(&f.Holders[0]) {
			continue
		}
		for _, p := range h.Pins {
			if p.Workload.Text() != "" {
				return p.Workload
			}
		}
		for _, p := range h.Processes {
			if p.Workload.Text() != "" {
				return p.Workload
			}
		}
	}
	return nil
}

// podPrefix is what a finding line says first when a pod or a named
// container is involved, in pod terms:
//
//	pod default/web-7f9c stuck: volume cache (emptyDir) held by pod monitoring/node-exporter-x2x (container node-exporter)
//	pod default/web-7f9c: volume cache (emptyDir, tmpfs: its data stays readable) leaked, held by container web (busybox)
//	held by pod monitoring/node-exporter-x2x (container node-exporter)
//
// and "" when neither is known; the line goes on with what it says without
// them.
func (f *Finding) podPrefix() string {
	var b strings.Builder
	if s := f.Stuck; s != nil {
		b.WriteString(s.PodText())
		vol := s.VolumeText
		if vol != "" && s.Tmpfs && f.Kind == KindLeak {
			if v, ok := strings.CutSuffix(vol, ")"); ok {
				vol = v + ", tmpfs: its data stays readable)"
			} else {
				vol += " (tmpfs: its data stays readable)"
			}
		}
		switch {
		case f.Kind == KindLeak && vol != "":
			b.WriteString(": " + vol + " leaked")
		case f.Kind == KindLeak:
			b.WriteString(": leaked")
		case vol != "":
			b.WriteString(" stuck: " + vol)
		default:
			b.WriteString(" stuck")
		}
	}
	if w := f.HolderWorkload(); w != nil {
		switch {
		case f.Stuck != nil && f.Kind == KindLeak:
			b.WriteString(", held by ")
		case f.Stuck != nil:
			b.WriteString(" held by ")
		default:
			b.WriteString("held by ")
		}
		b.WriteString(w.Text())
	}
	return b.String()
}

// procTag is how a process's container or unit is named after it:
// " (pod monitoring/x (container y))", " (container web (busybox))",
// " (container 5f2c…)" when only the id is known, " (ntpd.service)".
func procTag(p ProcRef) string {
	switch {
	case p.Workload.Text() != "":
		return " (" + p.Workload.Text() + ")"
	case p.Container != "":
		return " (container " + ShortID(p.Container) + ")"
	case p.Unit != "":
		return " (" + p.Unit + ")"
	}
	return ""
}

// workloadTag is procTag for a pinning process, which the line has named
// by pid only: the workload when known, nothing otherwise (as before).
func workloadTag(p ProcRef) string {
	if t := p.Workload.Text(); t != "" {
		return " (" + t + ")"
	}
	return ""
}

// NamePods rewrites "pod UID" in the finding's summary and fix (what the
// correlator could say from a cgroup path) as "pod NAMESPACE/NAME" for the
// pods its workloads, its evidence events' workloads (the process that
// made a mount or a namespace, named also once its pod is gone) and its
// stuck pod name (enrich fills them), in UID order so replays agree.
func (f *Finding) NamePods() {
	names := map[string]string{}
	add := func(uid, ns, name string) {
		if uid != "" && name != "" && ns != "" {
			names[uid] = ns + "/" + name
		}
	}
	addWorkload := func(w *Workload) {
		if w != nil {
			add(w.PodUID, w.Namespace, w.Pod)
		}
	}
	if s := f.Stuck; s != nil {
		add(s.UID, s.Namespace, s.Name)
	}
	addWorkload(f.Call.Workload)
	for _, h := range f.Holders {
		for _, p := range h.Processes {
			addWorkload(p.Workload)
		}
		for _, p := range h.Pins {
			addWorkload(p.Workload)
		}
	}
	for _, e := range f.Evidence {
		if e.Event != nil {
			addWorkload(e.Event.Workload)
		}
	}
	uids := make([]string, 0, len(names))
	for uid := range names {
		uids = append(uids, uid)
	}
	slices.Sort(uids)
	for _, uid := range uids {
		f.Summary = strings.ReplaceAll(f.Summary, "pod "+uid, "pod "+names[uid])
		f.Fix = strings.ReplaceAll(f.Fix, "pod "+uid, "pod "+names[uid])
	}
}

// ShortID is the 12-character form docker prints.
func ShortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

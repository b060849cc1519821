package enrich

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/mntleak/mntleak/attribution"
	"github.com/mntleak/mntleak/finding"
	"github.com/mntleak/mntleak/kubeletpath"
)

// Config is what enrichment knows of the node.
type Config struct {
	// Node is the node's name (--node-name), on every finding.
	Node string
	// KubeletRoot is the kubelet's --root-dir: a path under
	// <root>/pods/<uid>/ names a pod.
	KubeletRoot string
	// Timeout bounds one finding's questions, all together. Default 3s.
	Timeout time.Duration
	// Queue is how many findings may wait to be enriched. Default 256.
	Queue int
}

// Defaults returns c with the defaults of what it leaves unset, as Fill
// and New use them (the kubelet's root that names a stuck pod's paths).
func (c Config) Defaults() Config {
	c.defaults()
	return c
}

func (c *Config) defaults() {
	if c.Timeout == 0 {
		c.Timeout = 3 * time.Second
	}
	if c.Queue == 0 {
		c.Queue = 256
	}
	if c.KubeletRoot == "" {
		c.KubeletRoot = kubeletpath.DefaultRoot
	}
}

// Fill adds to f the node, the stuck pod and the workloads lookup knows,
// asking each question once, in a fixed order (the stuck pod, the caller,
// then each holder's processes, pins and actor, then the evidence events'
// processes), so a replay asks the same
// questions in the same order. What could not be learned for another
// reason than an unknown id is said in f.Enrichment.
func Fill(ctx context.Context, f *finding.Finding, cfg Config, lookup attribution.Lookup) {
	cfg.defaults()
	FillPaths(f, cfg)
	q := &questions{lookup: lookup, containers: map[string]*finding.Workload{}, pods: map[string]*attribution.Pod{}}
	if s := f.Stuck; s != nil {
		if p := q.pod(ctx, s.UID); p != nil {
			s.Name, s.Namespace = p.Name, p.Namespace
		}
	}
	q.name(ctx, &f.Call.Workload, f.Call.Container, f.Call.Pod)
	for i := range f.Holders {
		h := &f.Holders[i]
		for j := range h.Processes {
			p := &h.Processes[j]
			q.name(ctx, &p.Workload, p.Container, p.Pod)
		}
		for j := range h.Pins {
			p := &h.Pins[j].ProcRef
			q.name(ctx, &p.Workload, p.Container, p.Pod)
		}
		if a := h.Actor; a != nil {
			q.name(ctx, &a.Workload, a.Container, a.Pod)
		}
	}
	// The processes of its evidence events, by where they ran then (the
	// process that made the mount or the namespace may be gone, with its
	// pod: Warmer asked about them when their events arrived).
	for i := range f.Evidence {
		if e := f.Evidence[i].Event; e != nil {
			q.name(ctx, &e.Workload, e.Container, e.Pod)
		}
	}
	f.NamePods()
	if len(q.errs) > 0 {
		f.Enrichment = problem(q.errs)
	}
}

// FillPaths is the part of Fill that needs no lookup: the node, and the
// stuck pod (by UID) and its volume from the object's path or, failing
// that, a holder's copy.
func FillPaths(f *finding.Finding, cfg Config) {
	cfg.defaults()
	f.Node = cfg.Node
	v, ok := stuckVolume(f, cfg.KubeletRoot)
	if !ok {
		return
	}
	f.Stuck = &finding.StuckPod{UID: v.PodUID, Volume: v.Name, VolumeType: v.Type, VolumeText: v.Text(),
		Tmpfs: f.Object.FSType == "tmpfs" && v.Name != ""}
}

// stuckVolume finds the pod directory the object lies in: its path under
// the kubelet's root, else a holder's copy under it (the same layout in
// another namespace), else another object of the same teardown (a leak
// that names the sandbox's shm and the pod's volume), else any of them
// seen through a hostPath.
func stuckVolume(f *finding.Finding, root string) (kubeletpath.Volume, bool) {
	paths := []string{f.Object.Path}
	for _, h := range f.Holders {
		paths = append(paths, h.Where)
		paths = append(paths, h.Also...)
	}
	for _, o := range f.Others {
		paths = append(paths, o.Path)
	}
	for _, find := range []func(string, string) (kubeletpath.Volume, bool){kubeletpath.Parse, kubeletpath.Find} {
		for _, p := range paths {
			if p == "" {
				continue
			}
			if v, ok := find(root, p); ok {
				return v, true
			}
		}
	}
	return kubeletpath.Volume{}, false
}

// questions asks each container id and pod UID once per finding and keeps
// the errors that are not an unknown id.
type questions struct {
	lookup     attribution.Lookup
	containers map[string]*finding.Workload
	pods       map[string]*attribution.Pod
	errs       []error
}

func (q *questions) failed(err error) {
	if !errors.Is(err, attribution.ErrNotFound) && !errors.Is(err, attribution.ErrUnavailable) {
		q.errs = append(q.errs, err)
	}
}

// name sets *w from the container id, or for a process in a pod's cgroup
// without one, from the pod UID.
func (q *questions) name(ctx context.Context, w **finding.Workload, container, podUID string) {
	switch {
	case container != "":
		*w = q.container(ctx, container)
	case podUID != "":
		if p := q.pod(ctx, podUID); p != nil {
			*w = &finding.Workload{Pod: p.Name, Namespace: p.Namespace, PodUID: p.UID}
		}
	}
}

func (q *questions) container(ctx context.Context, id string) *finding.Workload {
	if w, ok := q.containers[id]; ok {
		return w
	}
	c, err := q.lookup.Container(ctx, id)
	var w *finding.Workload
	if err != nil {
		q.failed(err)
	} else {
		w = &finding.Workload{ContainerID: c.ID, Runtime: c.Runtime, Name: c.Name, Image: c.Image, Pod: c.Pod,
			Namespace: c.Namespace, PodUID: c.PodUID, PodContainer: c.PodContainer, Sandbox: c.Sandbox}
		if w.ContainerID == "" {
			w.ContainerID = id
		}
	}
	q.containers[id] = w
	return w
}

func (q *questions) pod(ctx context.Context, uid string) *attribution.Pod {
	if p, ok := q.pods[uid]; ok {
		return p
	}
	p, err := q.lookup.Pod(ctx, uid)
	var out *attribution.Pod
	if err != nil {
		q.failed(err)
	} else {
		out = &p
	}
	q.pods[uid] = out
	return out
}

// The enrichment field's prefixes (Result tells them apart).
const (
	prefixFailed   = "failed: "
	prefixTimedOut = "timed out: "
	prefixSkipped  = "skipped: "
)

// Result is how f's enrichment went, as a metric's label: ok, timed_out,
// skipped or failed.
func Result(f *finding.Finding) string {
	switch s := f.Enrichment; {
	case s == "":
		return "ok"
	case strings.HasPrefix(s, prefixTimedOut):
		return "timed_out"
	case strings.HasPrefix(s, prefixSkipped):
		return "skipped"
	}
	return "failed"
}

// problem is the enrichment field for the errors met: "timed out: ..." or
// "failed: ...", the first error and how many more.
func problem(errs []error) string {
	s := prefixFailed
	if attribution.IsTimeout(errs[0]) {
		s = prefixTimedOut
	}
	s += errs[0].Error()
	if len(errs) > 1 {
		s += " (+" + strconv.Itoa(len(errs)-1) + " more)"
	}
	return s
}

package finding_test

import (
	"strings"
	"testing"

	"github.com/mntleak/mntleak/event"

	"github.com/mntleak/mntleak/finding"
)

// TestLineInPodTerms: a finding with a pod or a named container reads in pod
// terms first, then says what it says without them; processes are named
// with their workload instead of a bare container id.
func TestLineInPodTerms(t *testing.T) {
	exporter := &finding.Workload{ContainerID: "3f1c0e6e8b8a4f4d", Runtime: "cri", Name: "node-exporter", Pod: "node-exporter-x2x",
		Namespace: "monitoring", PodUID: "7d2c9a1e", PodContainer: "node-exporter"}
	web := &finding.Workload{ContainerID: "5f2c7a9d0b1e", Runtime: "docker", Name: "web", Image: "busybox"}
	sandbox := &finding.Workload{ContainerID: "9a8b", Pod: "web-7f9c", Namespace: "default", Sandbox: true}
	stuck := &finding.StuckPod{UID: "0f3c2a4e-5b6d-4e7f-8a9b-1c2d3e4f5a6b", Name: "web-7f9c", Namespace: "default",
		Volume: "cache", VolumeType: "emptyDir", VolumeText: "volume cache (emptyDir)", Tmpfs: true}
	path := "/var/lib/kubelet/pods/0f3c2a4e-5b6d-4e7f-8a9b-1c2d3e4f5a6b/volumes/kubernetes.io~empty-dir/cache"
	failure := func(w *finding.Workload, s *finding.StuckPod) *finding.Finding {
		return &finding.Finding{Kind: finding.KindFailure, Cause: finding.CauseRprivateBind, Fix: "fix it",
			Call:   finding.Call{PID: 40, Comm: "kubelet", Syscall: "unlinkat", Errno: "EBUSY", MntNS: 1},
			Object: finding.Object{Path: path, FSType: "tmpfs"}, Stuck: s,
			Holders: []finding.Holder{{MntNS: 2, Where: "/host" + path,
				Processes: []finding.ProcRef{{PID: 50, Comm: "node_exporter", Container: "3f1c0e6e8b8a4f4d", Workload: w}},
				Actor:     &finding.Actor{ProcRef: finding.ProcRef{PID: 50, Comm: "node_exporter", Container: "3f1c0e6e8b8a4f4d", Workload: w}, Role: finding.RoleMember}}}}
	}
	leak := func(w *finding.Workload, s *finding.StuckPod) *finding.Finding {
		f := failure(w, s)
		f.Kind, f.Call.Syscall, f.Call.Errno, f.Call.Comm = finding.KindLeak, "umount2", "", "umount"
		h := &f.Holders[0]
		h.Pins = []finding.PinRef{{ProcRef: finding.ProcRef{PID: 51, Comm: "sh", Workload: w}, MntNS: 2, Pin: "cwd", Path: "/host" + path}}
		h.Actor = &finding.Actor{ProcRef: h.Pins[0].ProcRef, Role: finding.RolePinner, Pin: "cwd", Path: "/host" + path}
		return f
	}
	uidOnly := *stuck
	uidOnly.Name, uidOnly.Namespace = "", ""
	noVolume := *stuck
	noVolume.Volume, noVolume.VolumeType, noVolume.VolumeText = "", "", ""
	tests := []struct {
		name   string
		f      *finding.Finding
		prefix string   // the line starts with it
		has    []string // and says these
		hasNot []string
	}{
		{"failure: stuck pod held by a pod", failure(exporter, stuck),
			"pod default/web-7f9c stuck: volume cache (emptyDir) held by pod monitoring/node-exporter-x2x (container node-exporter): EBUSY unlinkat " + path + " by kubelet[40]: ",
			[]string{"held by node_exporter[50] (pod monitoring/node-exporter-x2x (container node-exporter)) (namespace members"}, []string{"container 3f1c0e6e8b8a"}},
		{"leak of a tmpfs volume held by a named container", leak(web, stuck),
			"pod default/web-7f9c: volume cache (emptyDir, tmpfs: its data stays readable) leaked, held by container web (busybox): LEAK " + path + " unmounted by umount[40] in mnt:[1]: ",
			[]string{"held by sh[51] (container web (busybox)) cwd /host" + path}, nil},
		{"the stuck pod known by its UID only", failure(nil, &uidOnly),
			"pod uid 0f3c2a4e-5b6d-4e7f-8a9b-1c2d3e4f5a6b stuck: volume cache (emptyDir): EBUSY unlinkat ",
			[]string{"held by node_exporter[50] (container 3f1c0e6e8b8a) (namespace members"}, nil},
		{"a path in the pod's directory, no volume", leak(sandbox, &noVolume),
			"pod default/web-7f9c: leaked, held by pod default/web-7f9c (sandbox): LEAK ", nil, nil},
		{"no stuck pod, a holder pod", failure(exporter, nil),
			"held by pod monitoring/node-exporter-x2x (container node-exporter): EBUSY unlinkat ", nil, nil},
		{"only a container id: the line as before", failure(&finding.Workload{ContainerID: "3f1c0e6e8b8a4f4d"}, nil),
			"EBUSY unlinkat " + path + " by kubelet[40]: still mounted in mnt:[2]",
			[]string{"held by node_exporter[50] (container 3f1c0e6e8b8a) (namespace members"}, []string{"pod "}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			line := tt.f.Line()
			if !strings.HasPrefix(line, tt.prefix) {
				t.Errorf("line:\n%s\nwant it to start with:\n%s", line, tt.prefix)
			}
			for _, s := range tt.has {
				if !strings.Contains(line, s) {
					t.Errorf("line:\n%s\nsays nothing of %q", line, s)
				}
			}
			for _, s := range tt.hasNot {
				if strings.Contains(line, s) {
					t.Errorf("line:\n%s\nsays %q", line, s)
				}
			}
			if !strings.HasSuffix(line, "[cause: rprivate-bind]. Fix: fix it") {
				t.Errorf("line does not end with the cause and fix: %s", line)
			}
		})
	}
}

// TestPodTermsEscaped: names from a runtime are untrusted: a label with a
// newline cannot split the line.
func TestPodTermsEscaped(t *testing.T) {
	f := &finding.Finding{Kind: finding.KindFailure, Call: finding.Call{PID: 1, Comm: "x", Syscall: "umount2", Errno: "EBUSY"},
		Object:  finding.Object{Path: "/a", Dev: event.MakeDev(7, 0)},
		Holders: []finding.Holder{{MntNS: 2, Where: "/a", Processes: []finding.ProcRef{{PID: 3, Comm: "y", Workload: &finding.Workload{Name: "evil\nINFO forged", Image: "i"}}}}}}
	f.Holders[0].Actor = &finding.Actor{ProcRef: f.Holders[0].Processes[0], Role: finding.RoleMember}
	if line := f.Line(); strings.Contains(line, "\n") || !strings.HasPrefix(line, "held by container evil") {
		t.Errorf("line %q", line)
	}
}

// TestReceivingCopyNamesNoPod: a pod stuck by a mount the node still has
// (in-use), with copies in three other namespaces, as on the Kubernetes
// node: mntleak's own pod (a slave: master:4, HostToContainer), a host
// process's peer namespace, and the Bidirectional pod that made the mount
// (a peer). The finding names neither mntleak's pod nor its process; the
// pod it relates to is the peer's, csi-node.
func TestReceivingCopyNamesNoPod(t *testing.T) {
	daemon := &finding.Workload{ContainerID: "1a", Pod: "mntleak-z9j9p", Namespace: "mntleak", PodUID: "u-1", PodContainer: "mntleak"}
	csi := &finding.Workload{ContainerID: "2b", Pod: "csi-node", Namespace: "plugin-storage", PodUID: "u-2", PodContainer: "main"}
	member := func(ns uint32, prop string, pid int, comm string, w *finding.Workload) finding.Holder {
		p := finding.ProcRef{PID: pid, Comm: comm, Workload: w}
		return finding.Holder{MntNS: ns, Where: "/kubelet/pods/x/held", Propagation: prop, Processes: []finding.ProcRef{p},
			Actor: &finding.Actor{ProcRef: p, Role: finding.RoleMember}}
	}
	f := &finding.Finding{Kind: finding.KindFailure, Cause: finding.CauseInUse,
		Call:   finding.Call{PID: 40, Comm: "kubelet", Syscall: "rmdir", Errno: "EBUSY", MntNS: 1},
		Object: finding.Object{Path: "/var/lib/kubelet/pods/x/held", FSType: "tmpfs"},
		Holders: []finding.Holder{{MntNS: 1, Self: true, Where: "/var/lib/kubelet/pods/x/held", Propagation: "shared:4"},
			member(2, "master:4", 500, "mntleak", daemon), member(3, "shared:4", 1137, "bash", nil), member(4, "shared:4", 600, "sleep", csi)}}
	if h, a := f.Actor(); a == nil || a.PID != 1137 || h.MntNS != 3 {
		t.Errorf("Actor: %+v in %+v, want bash[1137] in mnt:[3], the first peer", a, h)
	}
	if w := f.HolderWorkload(); w != csi {
		t.Errorf("HolderWorkload: %s, want %s", w.Text(), csi.Text())
	}
	// A slave copy something pins is held there: its pinner is named.
	f.Holders[1].Pins = []finding.PinRef{{ProcRef: finding.ProcRef{PID: 501, Comm: "sh", Workload: daemon}, MntNS: 2, Pin: "cwd"}}
	f.Holders[1].Actor = &finding.Actor{ProcRef: f.Holders[1].Pins[0].ProcRef, Role: finding.RolePinner, Pin: "cwd"}
	if _, a := f.Actor(); a == nil || a.PID != 501 {
		t.Errorf("Actor with a pinned slave copy: %+v, want sh[501]", a)
	}
}

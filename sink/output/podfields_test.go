package output

import (
	"testing"

	"github.com/mntleak/mntleak/internal/logkey"
	"github.com/mntleak/mntleak/sink/journald"

	"github.com/mntleak/mntleak/finding"
)

// TestPodFields: the pod terms are fields (journald's MNTLEAK_STUCK_POD
// and the rest), present only when known.
func TestPodFields(t *testing.T) {
	pod := &finding.Workload{ContainerID: "c1", Name: "node-exporter", Image: "node-exporter:v1", Pod: "node-exporter-x2x",
		Namespace: "monitoring", PodUID: "u2", PodContainer: "node-exporter"}
	docker := &finding.Workload{ContainerID: "c2", Runtime: "docker", Name: "web", Image: "busybox"}
	makeFinding := func(w *finding.Workload, stuck *finding.StuckPod) *finding.Finding {
		p := finding.ProcRef{PID: 5, Comm: "sleep", Workload: w}
		return &finding.Finding{Kind: finding.KindLeak, Node: "node-1", Stuck: stuck,
			Holders: []finding.Holder{{MntNS: 2, Processes: []finding.ProcRef{p}, Actor: &finding.Actor{ProcRef: p, Role: finding.RoleMember}}}}
	}
	stuck := &finding.StuckPod{UID: "u1", Name: "web-7f9c", Namespace: "default", Volume: "cache", VolumeType: "emptyDir"}
	tests := []struct {
		name string
		f    *finding.Finding
		want map[string]string // journald field → value; others must be absent
	}{
		{"stuck pod held by a pod", makeFinding(pod, stuck), map[string]string{
			"MNTLEAK_STUCK_POD": "web-7f9c", "MNTLEAK_STUCK_NAMESPACE": "default", "MNTLEAK_STUCK_POD_UID": "u1",
			"MNTLEAK_STUCK_VOLUME": "cache", "MNTLEAK_STUCK_VOLUME_TYPE": "emptyDir", "MNTLEAK_HOLDER_POD": "node-exporter-x2x",
			"MNTLEAK_HOLDER_NAMESPACE": "monitoring", "MNTLEAK_HOLDER_CONTAINER": "node-exporter", "MNTLEAK_HOLDER_IMAGE": "node-exporter:v1",
			"MNTLEAK_NODE": "node-1"}},
		{"a Docker container", makeFinding(docker, nil), map[string]string{
			"MNTLEAK_HOLDER_CONTAINER": "web", "MNTLEAK_HOLDER_IMAGE": "busybox", "MNTLEAK_NODE": "node-1"}},
		{"nothing known", makeFinding(nil, nil), map[string]string{"MNTLEAK_NODE": "node-1"}},
	}
	keys := []string{logkey.StuckPod, logkey.StuckNamespace, logkey.StuckPodUID, logkey.StuckVolume, logkey.StuckVolumeType,
		logkey.HolderPod, logkey.HolderNamespace, logkey.HolderContainer, logkey.HolderImage, logkey.Node, logkey.Enrichment}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := map[string]string{}
			for _, fd := range FindingFields(tt.f) {
				got[journald.FieldName(fd.Key)] = fd.String
			}
			for _, k := range keys {
				name := journald.FieldName(k)
				if got[name] != tt.want[name] {
					t.Errorf("%s = %q, want %q", name, got[name], tt.want[name])
				}
			}
		})
	}
}

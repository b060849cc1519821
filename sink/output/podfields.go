package output

import (
	"github.com/mntleak/mntleak/internal/logkey"
	"go.uber.org/zap"

	"github.com/mntleak/mntleak/finding"
)

// podFields are a finding's fields in pod terms (journald:
// MNTLEAK_STUCK_POD, MNTLEAK_HOLDER_POD, MNTLEAK_NODE, ...): each only
// when known.
func podFields(f *finding.Finding) []zap.Field {
	var fields []zap.Field
	add := func(key, val string) {
		if val != "" {
			fields = append(fields, zap.String(key, val))
		}
	}
	if s := f.Stuck; s != nil {
		add(logkey.StuckPod, s.Name)
		add(logkey.StuckNamespace, s.Namespace)
		add(logkey.StuckPodUID, s.UID)
		add(logkey.StuckVolume, s.Volume)
		add(logkey.StuckVolumeType, s.VolumeType)
	}
	if w := f.HolderWorkload(); w != nil {
		add(logkey.HolderPod, w.Pod)
		add(logkey.HolderNamespace, w.Namespace)
		container := w.PodContainer
		if container == "" && w.Pod == "" {
			container = w.Name
		}
		add(logkey.HolderContainer, container)
		add(logkey.HolderImage, w.Image)
	}
	add(logkey.Node, f.Node)
	add(logkey.Enrichment, f.Enrichment)
	return fields
}

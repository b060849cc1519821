package enrich

import (
	"context"

	"github.com/mntleak/mntleak/attribution"
	"github.com/mntleak/mntleak/finding"
)

// Replayer fills replayed findings from a recording's attribution
// answers: the n-th finding as the daemon filled its n-th.
type Replayer struct {
	answers *attribution.Replay
	cfg     Config
	n       int
}

// NewReplayer returns the Replayer for a recording's answers; ok is false
// when the recording holds no settings (it was made without enrichment,
// or before mntleak had it): its findings are replayed as they are.
func NewReplayer(answers *attribution.Replay) (r *Replayer, ok bool) {
	node, root, ok := answers.Settings()
	if !ok {
		return nil, false
	}
	return &Replayer{answers: answers, cfg: Config{Node: node, KubeletRoot: root}}, true
}

// Apply fills the next replayed finding.
func (r *Replayer) Apply(f *finding.Finding) {
	r.n++
	if why, ok := r.answers.Skipped(r.n); ok {
		skip(f, r.cfg, why)
		return
	}
	Fill(context.Background(), f, r.cfg, r.answers)
}

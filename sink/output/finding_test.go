package output

import (
	"testing"
	"time"

	"github.com/mntleak/mntleak/internal/logkey"

	"github.com/mntleak/mntleak/finding"
)

// TestFindingFieldsIncomplete: a finding whose evidence overlaps lost
// events carries the count as a field (a journal field too), so it can be
// selected without parsing the line.
func TestFindingFieldsIncomplete(t *testing.T) {
	at := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name       string
		incomplete *finding.Incomplete
		want       int64 // -1: no field
	}{
		{"complete", nil, -1},
		{"events lost", &finding.Incomplete{Lost: 42, From: at.Add(-time.Second), To: at}, 42},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &finding.Finding{Kind: finding.KindFailure, Call: finding.Call{Syscall: "umount2", Errno: "EINVAL", Time: at},
				Incomplete: tt.incomplete}
			got := int64(-1)
			for _, fd := range FindingFields(f) {
				if fd.Key == logkey.EvidenceLost {
					got = fd.Integer
				}
			}
			if got != tt.want {
				t.Errorf("%s field = %d, want %d", logkey.EvidenceLost, got, tt.want)
			}
		})
	}
}

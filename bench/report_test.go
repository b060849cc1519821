package bench

import (
	"strings"
	"testing"
)

// TestHardTargetsMissed: the run's verdict names exactly what failed
// (a fresh machine once read "a hard target failed" when only bpftrace
// could not start); a soft miss and a target not run are not failures.
func TestHardTargetsMissed(t *testing.T) {
	rows := []Row{
		{Workload: "mount storm", Figure: "events received", Measured: "99 / 100 received, 1 lost", Target: "100% received", Hard: true, Status: missed},
		{Workload: "file churn", Figure: "wall ratio", Measured: "×1.09", Target: "≤ 1.03", Status: missed},
		{Workload: "container churn", Figure: "findings", Measured: "not run", Target: "zero findings", Hard: true, Status: notRun},
		{Workload: "latency", Figure: "p99", Measured: "2 ms", Target: "≤ 20 ms", Hard: true, Status: met},
	}
	got := hardTargetsMissed(rows)
	if len(got) != 1 || !strings.Contains(got[0], "mount storm") || !strings.Contains(got[0], "1 lost") {
		t.Errorf("hardTargetsMissed = %q, want only the storm, with what was measured", got)
	}
}

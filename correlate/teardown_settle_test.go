package correlate_test

import (
	"testing"
	"time"

	"github.com/mntleak/mntleak/finding"
)

// TestTeardownSettlesAfterItsLastUnmount: an event that comes between the
// settle deadlines of one teardown's unmounts (50 ms apart) does not split
// it in two leak findings: the teardown settles 2 s after its last
// unmount (variants' TestOneLeakPerTeardown got two under load).
func TestTeardownSettlesAfterItsLastUnmount(t *testing.T) {
	w := teardownWorld(t)
	w.send(umountEv(40, "containerd", hostNS, "/srv/vol", 0))
	w.now = w.now.Add(-150 * time.Millisecond) // send adds 200 ms: the next unmount 50 ms later
	w.send(umountEv(40, "containerd", hostNS, "/srv/rootfs", 0))
	w.now = w.now.Add(1760 * time.Millisecond) // 2.01 s after the first unmount: past its deadline, before the second's
	w.send(exitEv(22, "true", hostNS))
	w.now = w.now.Add(time.Second)
	w.send(exitEv(23, "true", hostNS))
	var leaks []*finding.Finding
	for _, f := range w.findings {
		if f.Kind == finding.KindLeak {
			leaks = append(leaks, f)
		}
	}
	if len(leaks) != 1 || len(leaks[0].Others) != 1 {
		for _, f := range w.findings {
			t.Log(f.Line())
		}
		t.Fatalf("%d leak findings, want one naming both objects of the teardown", len(leaks))
	}
}

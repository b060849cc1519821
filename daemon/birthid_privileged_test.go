package daemon

import (
	"testing"

	"go.uber.org/zap"

	"github.com/mntleak/mntleak/e2e/testkit/privtest"
	"github.com/mntleak/mntleak/procfs"
)

// TestBirthIDWhenTheCreatorLeft: a namespace's birth id is read when its
// creation arrives, through the process that made it; runc's
// runc:[1:CHILD] unshares and exits at once, so by then it is often gone
// (incident 3's release was refused: "the ledger has no creation of
// mnt:[N] with birth id M"). The id is then read through a process that
// is in the namespace now.
func TestBirthIDWhenTheCreatorLeft(t *testing.T) {
	privtest.Require(t)
	privtest.RequireCommands(t, "unshare", "sh", "sleep")
	h := privtest.StartHolder(t, "private", "true")
	var host procfs.Host
	ino, want, err := host.MntNSID(h.PID)
	if err != nil || ino != h.MntNS {
		t.Fatalf("read mnt:[%d]'s id through its holder %d: %v (got mnt:[%d])", h.MntNS, h.PID, err, ino)
	}
	p := Sources{Log: zap.NewNop()}
	const gone = 1<<22 + 7 // above pid_max's default: no such process
	if got := p.BirthID(gone, h.MntNS); got != want {
		t.Errorf("birth id of mnt:[%d] whose creator %d is gone: %d, want %d (read through its process %d)", h.MntNS, gone, got, want, h.PID)
	}
	if got := p.BirthID(h.PID, h.MntNS); got != want {
		t.Errorf("birth id of mnt:[%d] through its creator: %d, want %d", h.MntNS, got, want)
	}
	if got := p.BirthID(gone, 1); got != 0 {
		t.Errorf("birth id of a namespace no process is in: %d, want 0", got)
	}
}

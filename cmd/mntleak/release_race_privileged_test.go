package main

import (
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mntleak/mntleak/e2e/testkit/findinglog"
	"github.com/mntleak/mntleak/e2e/testkit/privtest"
)

// TestDaemonReadsWhileReleasing (issue 26, one actor at a time): the
// daemon runs with its state dir while three `release --apply` act on one
// leaked copy, and meanwhile mkfs.ext4 on the device fails again and
// again, so the daemon reads the holder's table (each failure is a
// finding: the holders' tables are read) while the releases read and
// detach. Exactly one release detaches the copy, the others are refused
// (the copy gone, naming who took it), the daemon logs no error or
// warning that is not a finding and no data race, and afterwards the
// copy is gone from the holder's table and mkfs.ext4 succeeds.
func TestDaemonReadsWhileReleasing(t *testing.T) {
	privtest.Require(t)
	privtest.RequireCommands(t, "unshare", "nsenter", "mount", "umount", "mkfs.ext4", "findmnt")
	bin := privtest.Binary(t)
	dir := t.TempDir()
	stateDir := filepath.Join(dir, "state")
	d := privtest.StartDaemon(t, nil, "--journald", "off", "--state-dir", stateDir)
	dev := privtest.LoopDevice(t, 16)
	r := newRig(t, bin)
	h, _ := r.leakOf(t, dev)
	vol := filepath.Join(r.dir, "vol")
	id := copyID(t, h.PID, vol)
	mkfs := func() error { return mkfsIn(r.node, dev) }
	if mkfs() == nil {
		t.Fatal("mkfs.ext4 on the leaked device succeeded before the release")
	}
	findingLine(t, d, `"finding":"failure"`, dev) // the daemon reads tables on a failure
	privtest.WaitLogged(t, stateDir, time.Minute, privtest.Made(h.MntNS), privtest.Unmounted(vol))

	done := make(chan struct{})
	failures := make(chan int, 1)
	go func() { // the device's failures while the releases run
		n := 0
		for {
			select {
			case <-done:
				failures <- n
				return
			default:
			}
			if mkfs() != nil {
				n++
			}
		}
	}()
	args := []string{"--apply", "--mntns", ns(h.MntNS), "--mount-id", strconv.Itoa(id)}
	var wg sync.WaitGroup
	outs, codes := make([]string, 3), make([]int, 3)
	for i := range outs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i], codes[i] = r.release(t, "", stateDir, args...)
		}()
	}
	wg.Wait()
	close(done)
	t.Logf("mkfs.ext4 failed %d times while the releases ran", <-failures)
	if released := judgeRace(t, h.MntNS, outs, codes); released != 1 {
		t.Errorf("%d releases detached the copy, want 1", released)
	}
	if strings.Contains(privtest.Run(t, "nsenter", "-t", strconv.Itoa(h.PID), "-m", "--", "findmnt", "-n", "-r", "-o", "TARGET"), vol+"\n") {
		t.Errorf("the copy at %s is still in mnt:[%d]", vol, h.MntNS)
	}
	if err := mkfs(); err != nil {
		t.Errorf("mkfs.ext4 after the release: %v", err)
	}
	if syscall.Kill(h.PID, 0) != nil {
		t.Error("the holder did not keep running")
	}
	d.Stop(t) // fails the test on a data race in the daemon
	for _, s := range d.Logs.All() {
		if l, ok := findinglog.Parse(s); ok && !l.IsFinding() && (l.Level == "error" || l.Level == "warn" || l.Level == "dpanic" || l.Level == "panic" || l.Level == "fatal") {
			t.Errorf("the daemon logged: %s", s)
		}
	}
}

package bench

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/e2e/testkit/privtest"
	"github.com/mntleak/mntleak/internal/nsthread"
)

// TestEnsureTracefs: on a machine without tracefs (a fresh one: bpftrace
// then cannot find a tracepoint) the benchmark mounts it, and unmounts
// only what it mounted. Run in a mount namespace of a locked thread's own,
// with tracefs taken away there, so the machine's mounts are not touched.
func TestEnsureTracefs(t *testing.T) {
	privtest.Require(t)
	done := make(chan struct{})
	go nsthread.Run(func() error { // the thread dies with its namespace
		defer close(done)
		if err := unix.Unshare(unix.CLONE_NEWNS | unix.CLONE_FS); err != nil {
			t.Errorf("unshare: %v", err)
			return nil
		}
		if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
			t.Errorf("make / private: %v", err)
			return nil
		}
		for unix.Unmount(tracefsDir, unix.MNT_DETACH) == nil {
		}
		if _, err := os.Stat(tracefsDir + "/events"); err == nil {
			t.Error("tracefs still there after unmounting it")
			return nil
		}
		unmount, err := ensureTracefs()
		if err != nil || unmount == nil {
			t.Errorf("ensureTracefs on a machine without it: unmount %v, err %v", unmount != nil, err)
			return nil
		}
		if _, err := os.Stat(tracefsDir + "/events/sched/sched_process_fork"); err != nil {
			t.Errorf("tracefs mounted, but no sched_process_fork: %v", err)
		}
		again, err := ensureTracefs()
		if err != nil || again != nil {
			t.Errorf("ensureTracefs with tracefs there mounted again (%v) or failed (%v)", again != nil, err)
		}
		unmount()
		if _, err := os.Stat(tracefsDir + "/events"); err == nil {
			t.Error("tracefs left mounted after the unmount")
		}
		return nil
	})
	<-done
}

package privtest

import (
	"errors"
	"fmt"
	"testing"

	"golang.org/x/sys/unix"
)

// Owned is a process a test started by other means than an exec.Cmd of
// its own (a pid a script printed), held by a pidfd opened while the pid
// is known to name it: a signal sent through it never reaches another
// process that took the pid after this one exited (pid_max is 32768 on
// the test machines, and other packages' tests go through pids fast).
type Owned struct {
	PID int
	fd  int
}

// Own opens pid's pidfd now, while the caller knows pid names its
// process, and kills the process and closes the pidfd at cleanup.
func Own(t testing.TB, pid int) *Owned {
	t.Helper()
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		t.Fatalf("pidfd of process %d: %v", pid, err)
	}
	o := &Owned{PID: pid, fd: fd}
	t.Cleanup(func() {
		if err := o.Kill(); err != nil {
			t.Error(err)
		}
		_ = unix.Close(fd)
	})
	return o
}

// Kill sends SIGKILL; a process already gone is not an error.
func (o *Owned) Kill() error {
	err := unix.PidfdSendSignal(o.fd, unix.SIGKILL, nil, 0)
	if err != nil && !errors.Is(err, unix.ESRCH) {
		return fmt.Errorf("kill process %d: %w", o.PID, err)
	}
	return nil
}

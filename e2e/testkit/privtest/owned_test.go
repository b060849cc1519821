package privtest

import (
	"os/exec"
	"syscall"
	"testing"
)

// TestOwnedKillsItsOwnProcessOnly: Kill ends the process it was opened
// on; once that process is gone and reaped, Kill is a no-op (the pidfd
// names no other process, whoever has the pid now).
func TestOwnedKillsItsOwnProcessOnly(t *testing.T) {
	cmd := exec.Command("sleep", "600")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	o := Own(t, cmd.Process.Pid)
	if err := o.Kill(); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("sleep ended with %v, want killed by SIGKILL", err)
	}
	if err := o.Kill(); err != nil {
		t.Errorf("Kill after the process was reaped: %v", err)
	}
}

package bench

import (
	"fmt"
	"os/exec"
	"strconv"
	"syscall"
	"time"
)

// group is a set of child processes the benchmark started and kills.
type group struct{ cmds []*exec.Cmd }

// sleeper starts `sleep` for d. newNS gives it a mount namespace of its
// own, a private copy of its parent's (Go makes / private in the child).
func (g *group) sleeper(d time.Duration, newNS bool) (*exec.Cmd, error) {
	cmd := exec.Command("sleep", strconv.Itoa(int(d.Seconds())))
	if newNS {
		cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start sleep: %w", err)
	}
	g.cmds = append(g.cmds, cmd)
	return cmd, nil
}

// kill ends every process of the group, by pid, and reaps it.
func (g *group) kill() {
	for _, c := range g.cmds {
		_ = c.Process.Kill()
	}
	for _, c := range g.cmds {
		_ = c.Wait()
	}
	g.cmds = nil
}

package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"
)

// bpftraceScript is the probe set of mntleak written for bpftrace: entry
// and exit of every syscall mntleak traces (the entry saves a timestamp, the
// exit prints the call with its mount namespace), forks and exits, and
// every syscall that fails with EBUSY. bpftrace has no raw sys_exit with
// the return value in a register, so the catch-all is the raw_syscalls
// tracepoint, as a bpftrace user would write it.
const bpftraceScript = `
tracepoint:syscalls:sys_enter_mount, tracepoint:syscalls:sys_enter_umount,
tracepoint:syscalls:sys_enter_pivot_root, tracepoint:syscalls:sys_enter_open_tree,
tracepoint:syscalls:sys_enter_move_mount, tracepoint:syscalls:sys_enter_fsopen,
tracepoint:syscalls:sys_enter_fsmount, tracepoint:syscalls:sys_enter_mount_setattr,
tracepoint:syscalls:sys_enter_unshare, tracepoint:syscalls:sys_enter_setns
{ @start[tid] = nsecs; }

tracepoint:syscalls:sys_exit_mount, tracepoint:syscalls:sys_exit_umount,
tracepoint:syscalls:sys_exit_pivot_root, tracepoint:syscalls:sys_exit_open_tree,
tracepoint:syscalls:sys_exit_move_mount, tracepoint:syscalls:sys_exit_fsopen,
tracepoint:syscalls:sys_exit_fsmount, tracepoint:syscalls:sys_exit_mount_setattr,
tracepoint:syscalls:sys_exit_unshare, tracepoint:syscalls:sys_exit_setns
/@start[tid]/
{
	printf("%s %d %s mnt:[%u] ret=%d\n", probe, pid, comm, curtask->nsproxy->mnt_ns->ns.inum, args->ret);
	delete(@start[tid]);
}

tracepoint:sched:sched_process_fork
/curtask->nsproxy->mnt_ns->ns.inum != 0/
{ @forks = count(); }

tracepoint:sched:sched_process_exit
/pid == tid/
{ printf("exit %d %s mnt:[%u]\n", pid, comm, curtask->nsproxy->mnt_ns->ns.inum); }

tracepoint:raw_syscalls:sys_exit
/args->ret == -16/
{ printf("EBUSY %d %s nr=%d\n", pid, comm, args->id); }

BEGIN { printf("ready\n"); }
END { clear(@start); clear(@forks); }
`

// bpftraceTracer is a running bpftrace.
type bpftraceTracer struct {
	cmd  *exec.Cmd
	done chan error
}

// startBpftrace runs bpftrace with the script and returns once its BEGIN
// probe fired, which bpftrace does after attaching every probe.
func startBpftrace(ctx context.Context, logFile string) (tracer, error) {
	t, err := startBpftraceWithin(ctx, logFile, 60*time.Second)
	if err != nil {
		return nil, err
	}
	return t, nil
}

// startBpftraceWithin is startBpftrace waiting at most attach.
func startBpftraceWithin(ctx context.Context, logFile string, attach time.Duration) (*bpftraceTracer, error) {
	bin, err := exec.LookPath("bpftrace")
	if err != nil {
		return nil, fmt.Errorf("bpftrace not found (apt-get install bpftrace): %w", err)
	}
	cmd := exec.Command(bin, "-B", "line", "-e", bpftraceScript)
	errf, err := os.Create(logFile)
	if err != nil {
		return nil, fmt.Errorf("bpftrace log %s: %w", logFile, err)
	}
	defer errf.Close()
	cmd.Stderr = errf
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start bpftrace: %w", err)
	}
	t := &bpftraceTracer{cmd: cmd, done: make(chan error, 1)}
	ready := make(chan struct{})
	go func() {
		br := bufio.NewReader(out)
		for {
			line, err := br.ReadString('\n')
			if strings.TrimSpace(line) == "ready" {
				close(ready)
				break
			}
			if err != nil {
				break
			}
		}
		// The rest is what a user would read: drained, like a terminal.
		_, _ = io.Copy(io.Discard, br)
		t.done <- cmd.Wait()
	}()
	select {
	case <-ready:
		return t, nil
	case err := <-t.done:
		b, _ := os.ReadFile(logFile)
		return nil, fmt.Errorf("bpftrace exited before attaching: %v: %s", err, strings.TrimSpace(string(b)))
	case <-time.After(attach):
		_ = t.stop()
		return nil, fmt.Errorf("bpftrace did not attach within %v", attach)
	case <-ctx.Done():
		_ = t.stop()
		return nil, ctx.Err()
	}
}

func (t *bpftraceTracer) stop() error {
	_ = t.cmd.Process.Signal(os.Interrupt)
	select {
	case err := <-t.done:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return nil // bpftrace exits non-zero on SIGINT in some versions
		}
		return err
	case <-time.After(10 * time.Second):
		_ = t.cmd.Process.Kill()
		<-t.done
		return fmt.Errorf("bpftrace (pid %d) ignored SIGINT for 10s: killed", t.cmd.Process.Pid)
	}
}

package bench

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// StormWorkerCommand is the hidden subcommand the benchmark re-executes
// itself with to run the mount storm in a process of its own, born into a
// private mount namespace: the namespace has a member the daemon can read
// it through, as a container runtime's would, and it dies with the process.
const StormWorkerCommand = "_storm-worker"

// StormWorker is the worker's main: args are DIR THREADS [PREMOUNTS]. DIR
// gets a tmpfs (in the worker's namespace only), and PREMOUNTS binds of
// DIR/src/0 on DIR/pre/N that stay for the storm (a crowded namespace: a
// node's host has thousands of mounts); each thread binds DIR/src/N on
// DIR/dst/N and unmounts it, as fast as it can. The protocol on
// stdin/stdout: the worker prints "ready", waits for a line, storms until
// the next line or EOF, then prints "count MOUNTS UMOUNTS FAILED" and
// exits at EOF.
func StormWorker(args []string, stdin io.Reader, stdout io.Writer) error {
	if len(args) != 2 && len(args) != 3 {
		return fmt.Errorf("usage: %s DIR THREADS [PREMOUNTS]", StormWorkerCommand)
	}
	dir := args[0]
	threads, err := strconv.Atoi(args[1])
	if err != nil || threads < 1 {
		return fmt.Errorf("threads %q: want a positive number", args[1])
	}
	premounts := 0
	if len(args) == 3 {
		if premounts, err = strconv.Atoi(args[2]); err != nil || premounts < 0 {
			return fmt.Errorf("premounts %q: want a number of mounts", args[2])
		}
	}
	if err := unix.Mount("storm", dir, "tmpfs", 0, "size=16m"); err != nil {
		return fmt.Errorf("mount tmpfs on %s: %w", dir, err)
	}
	for i := range threads {
		if err := mkdirs(filepath.Join(dir, "src", strconv.Itoa(i)), filepath.Join(dir, "dst", strconv.Itoa(i))); err != nil {
			return err
		}
	}
	for i := range premounts {
		pre := filepath.Join(dir, "pre", strconv.Itoa(i))
		if err := mkdirs(pre); err != nil {
			return err
		}
		if err := unix.Mount(filepath.Join(dir, "src", "0"), pre, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("bind on %s: %w", pre, err)
		}
	}
	in := bufio.NewReader(stdin)
	fmt.Fprintln(stdout, "ready")
	if _, err := in.ReadString('\n'); err != nil {
		return fmt.Errorf("wait for go: %w", err)
	}
	var stop atomic.Bool
	var mounts, umounts, failed atomic.Int64
	var wg sync.WaitGroup
	for i := range threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			src := filepath.Join(dir, "src", strconv.Itoa(i))
			dst := filepath.Join(dir, "dst", strconv.Itoa(i))
			var m, u, f int64
			for !stop.Load() {
				m++
				if err := unix.Mount(src, dst, "", unix.MS_BIND, ""); err != nil {
					f++
					continue
				}
				u++
				if err := unix.Unmount(dst, 0); err != nil {
					f++
				}
			}
			mounts.Add(m)
			umounts.Add(u)
			failed.Add(f)
		}()
	}
	_, _ = in.ReadString('\n') // a line or EOF: stop
	stop.Store(true)
	wg.Wait()
	fmt.Fprintf(stdout, "count %d %d %d\n", mounts.Load(), umounts.Load(), failed.Load())
	// Hold the namespace until told (EOF): while the daemon drains, its
	// inode must not be reused by someone else's namespace, whose events
	// the daemon's --mntns filter would then let through.
	_, _ = io.Copy(io.Discard, in)
	return nil
}

// selfExe is the benchmark's own binary, for re-executing as a worker.
func selfExe() (string, error) {
	p, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("find the benchmark's own binary: %w", err)
	}
	return p, nil
}

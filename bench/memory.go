package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// MemoryResult is the daemon's memory with many mounts tracked, with
// Kubernetes naming off (RSS, HWM) and on (Naming*).
type MemoryResult struct {
	RSS, HWM             int64
	Tracked              float64 // mntleak_namespaces_tracked
	Watched              float64 // mntleak_namespaces_watched (the kernel's mount notes)
	Entries              int     // mount entries in the benchmark's namespaces
	NamingRSS, NamingHWM int64
	NamingTracked        float64
	NamingWatched        float64
}

// Memory mounts MountsPerNS tmpfs in a node namespace, copies it into
// Namespaces holders, starts the daemon (its snapshot reads every table)
// and reads its resident memory; then again with Kubernetes naming on
// (--kubeconfig for a fake API server, --node-name: pod names asked of
// it, Events posted to it).
func (r *Runner) Memory(ctx context.Context) (*MemoryResult, error) {
	res := &MemoryResult{}
	n, err := startNode("private")
	if err != nil {
		return res, err
	}
	defer n.close()
	dirs := make([]string, r.cfg.MountsPerNS)
	for i := range dirs {
		dirs[i] = filepath.Join(r.dir, "mem", strconv.Itoa(i))
	}
	if err := mkdirs(dirs...); err != nil {
		return res, err
	}
	if err := n.do(func() error {
		for _, d := range dirs {
			if err := unix.Mount("mem", d, "tmpfs", 0, "size=1m"); err != nil {
				return fmt.Errorf("mount tmpfs on %s in the node: %w", d, err)
			}
		}
		return nil
	}); err != nil {
		return res, err
	}
	g := &group{}
	defer g.kill()
	for range r.cfg.Namespaces {
		if err := n.do(func() error { _, err := g.sleeper(crowdLifetime, true); return err }); err != nil {
			return res, err
		}
	}
	if b, err := os.ReadFile("/proc/" + strconv.Itoa(g.cmds[0].Process.Pid) + "/mountinfo"); err == nil {
		res.Entries = strings.Count(string(b), "\n") * r.cfg.Namespaces
	}
	mem, seen, err := r.daemonMemory(ctx, g, "daemon-memory.log")
	if err != nil {
		return res, err
	}
	res.RSS, res.HWM, res.Tracked, res.Watched = mem.RSS, mem.HWM, seen.tracked, seen.watched
	r.logf("  memory: RSS %.1f MiB, peak %.1f MiB, %v namespaces tracked, %v watched, %d mount entries",
		float64(res.RSS)/(1<<20), float64(res.HWM)/(1<<20), res.Tracked, res.Watched, res.Entries)
	api, err := startFakeAPIServer(r.dir)
	if err != nil {
		return res, err
	}
	defer api.close()
	mem, seen, err = r.daemonMemory(ctx, g, "daemon-memory-naming.log",
		"--kubeconfig", api.Kubeconfig, "--node-name", "bench-node")
	if err != nil {
		return res, err
	}
	res.NamingRSS, res.NamingHWM, res.NamingTracked, res.NamingWatched = mem.RSS, mem.HWM, seen.tracked, seen.watched
	r.logf("  memory with Kubernetes naming on: RSS %.1f MiB, peak %.1f MiB, %v namespaces tracked, %v watched",
		float64(res.NamingRSS)/(1<<20), float64(res.NamingHWM)/(1<<20), res.NamingTracked, res.NamingWatched)
	return res, nil
}

// daemonMemory starts the daemon with args, waits until it tracks the
// holders' namespaces and the kernel's notes keep them (each watched
// namespace knows its mounts: what a node shows a few seconds after the
// start, when the marks the start spreads over its first events are
// made), and 2 s more, and reads its memory. A daemon whose notes are off
// is read after watchWait.
func (r *Runner) daemonMemory(ctx context.Context, g *group, logName string, args ...string) (memory, counted, error) {
	var seen counted
	d, err := StartDaemon(ctx, DaemonOptions{Binary: r.cfg.Mntleak, Args: args, LogFile: r.logPath(logName)})
	if err != nil {
		return memory{}, seen, err
	}
	defer d.Stop()
	// The gauges are set on events, at most once a second, and the marks
	// made on them: make some.
	want := float64(r.cfg.Namespaces)
	deadline := time.Now().Add(watchWait)
	for time.Now().Before(deadline) {
		_, _ = g.sleeper(0, false)
		time.Sleep(100 * time.Millisecond)
		m, err := d.Scrape()
		if err != nil {
			return memory{}, seen, err
		}
		seen = counted{tracked: m["mntleak_namespaces_tracked"], watched: m["mntleak_namespaces_watched"]}
		if seen.tracked >= want && seen.watched >= want {
			break
		}
	}
	time.Sleep(2 * time.Second)
	mem, err := memoryOf(d.PID())
	if err != nil {
		return mem, seen, err
	}
	parts, err := memoryPartsOf(d.PID())
	if err != nil {
		return mem, seen, err
	}
	r.logf("  %s: RSS %.1f MiB: %s", logName, float64(mem.RSS)/(1<<20), parts)
	return mem, seen, nil
}

// watchWait bounds daemonMemory's wait for the namespaces to be tracked
// and watched.
const watchWait = 30 * time.Second

// counted is what the daemon's gauges said of the namespaces.
type counted struct{ tracked, watched float64 }

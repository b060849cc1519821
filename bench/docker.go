package bench

import (
	"archive/tar"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// DockerResult is container churn with and without the daemon.
type DockerResult struct {
	WallNone, WallMntleak []float64 // seconds per round
	CPU                   []float64 // daemon CPU share per round under it
	Findings              int       // findings naming the benchmark's Docker
	OtherFindings         int       // findings about anything else on the machine
	FindingLines          []string
}

// engine is a Docker Engine of the benchmark's own, in a node namespace
// whose / is shared as systemd makes it.
type engine struct {
	dir, sock string
	node      *node
	dockerd   *exec.Cmd
	exited    chan error
}

const benchImage = "mntleak-bench/busybox"

func (r *Runner) startEngine(ctx context.Context) (*engine, error) {
	for _, c := range []string{"dockerd", "docker", "busybox"} {
		if _, err := exec.LookPath(c); err != nil {
			return nil, fmt.Errorf("%s not found (apt-get install docker.io busybox-static): %w", c, err)
		}
	}
	e := &engine{dir: filepath.Join(r.dir, "docker"), exited: make(chan error, 1)}
	e.sock = filepath.Join(e.dir, "docker.sock")
	if err := mkdirs(e.dir); err != nil {
		return nil, err
	}
	n, err := startNode("shared")
	if err != nil {
		return nil, err
	}
	e.node = n
	logf, err := os.Create(r.logPath("dockerd.log"))
	if err != nil {
		n.close()
		return nil, err
	}
	defer logf.Close()
	e.dockerd = exec.Command("dockerd", "--data-root", filepath.Join(e.dir, "data"), "--exec-root", filepath.Join(e.dir, "exec"),
		"-H", "unix://"+e.sock, "--pidfile", filepath.Join(e.dir, "dockerd.pid"), "--iptables=false", "--bridge=none",
		"--ip-forward=false", "--ip-masq=false", "--storage-driver", "overlay2", "--log-level", "warn")
	e.dockerd.Stdout, e.dockerd.Stderr = logf, logf
	if err := n.do(e.dockerd.Start); err != nil {
		n.close()
		return nil, fmt.Errorf("start dockerd: %w", err)
	}
	go func() { e.exited <- e.dockerd.Wait() }()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if err := e.docker(ctx, nil, "version"); err == nil {
			break
		}
		select {
		case err := <-e.exited:
			e.exited <- err
			e.stop()
			return nil, fmt.Errorf("dockerd exited: %v (see %s)", err, r.logPath("dockerd.log"))
		case <-time.After(250 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			e.stop()
			return nil, fmt.Errorf("dockerd not answering on %s after 60s", e.sock)
		}
	}
	if err := e.importImage(ctx); err != nil {
		e.stop()
		return nil, err
	}
	return e, nil
}

// docker runs the docker client against the engine.
func (e *engine) docker(ctx context.Context, stdin io.Reader, args ...string) error {
	cmd := exec.CommandContext(ctx, "docker", append([]string{"-H", "unix://" + e.sock}, args...)...)
	cmd.Stdin = stdin
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("docker %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// importImage makes a busybox-static image with docker import: no registry.
func (e *engine) importImage(ctx context.Context) error {
	bb, err := exec.LookPath("busybox")
	if err != nil {
		return err
	}
	bin, err := os.ReadFile(bb)
	if err != nil {
		return err
	}
	pr, pw := io.Pipe()
	go func() {
		tw := tar.NewWriter(pw)
		err := tw.WriteHeader(&tar.Header{Name: "bin/busybox", Mode: 0o755, Size: int64(len(bin))})
		if err == nil {
			_, err = tw.Write(bin)
		}
		for _, a := range []string{"sh", "sleep", "true"} {
			if err == nil {
				err = tw.WriteHeader(&tar.Header{Name: "bin/" + a, Typeflag: tar.TypeSymlink, Linkname: "busybox", Mode: 0o777})
			}
		}
		for _, d := range []string{"etc/", "tmp/", "proc/", "sys/", "dev/"} {
			if err == nil {
				err = tw.WriteHeader(&tar.Header{Name: d, Typeflag: tar.TypeDir, Mode: 0o755})
			}
		}
		if err == nil {
			err = tw.Close()
		}
		pw.CloseWithError(err)
	}()
	return e.docker(ctx, pr, "import", "--change", "ENV PATH=/bin", "-", benchImage)
}

// churn runs containers: each started, and removed two starts later, as a
// runtime under load does; it returns the wall time.
func (e *engine) churn(ctx context.Context, round, n int) (time.Duration, error) {
	name := func(i int) string { return "bench-" + strconv.Itoa(round) + "-" + strconv.Itoa(i) }
	t0 := time.Now()
	for i := range n {
		if err := e.docker(ctx, nil, "run", "-d", "--network", "none", "--name", name(i),
			"-v", filepath.Join(e.dir, "shared")+":/shared", benchImage, "sleep", "60"); err != nil {
			return 0, err
		}
		if i >= 2 {
			if err := e.docker(ctx, nil, "rm", "-f", name(i-2)); err != nil {
				return 0, err
			}
		}
	}
	for i := max(0, n-2); i < n; i++ {
		if err := e.docker(ctx, nil, "rm", "-f", name(i)); err != nil {
			return 0, err
		}
	}
	return time.Since(t0), nil
}

// stop removes every container, stops dockerd, and kills what is left of
// this engine (containerd, shims: their command lines name its directory).
func (e *engine) stop() {
	if e.dockerd != nil && e.dockerd.Process != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		if out, err := exec.CommandContext(ctx, "docker", "-H", "unix://"+e.sock, "ps", "-aq").Output(); err == nil {
			if ids := strings.Fields(string(out)); len(ids) > 0 {
				_ = e.docker(ctx, nil, append([]string{"rm", "-f"}, ids...)...)
			}
		}
		cancel()
		_ = e.dockerd.Process.Signal(syscall.SIGTERM)
		select {
		case <-e.exited:
		case <-time.After(20 * time.Second):
			_ = e.dockerd.Process.Kill()
			<-e.exited
		}
	}
	killNaming(e.dir)
	e.node.close()
}

// killNaming kills the processes whose command line names dir: the
// engine's containerd and shims, started by the benchmark's dockerd.
func killNaming(dir string) {
	ents, _ := os.ReadDir("/proc")
	self := os.Getpid()
	for _, ent := range ents {
		pid, err := strconv.Atoi(ent.Name())
		if err != nil || pid == self {
			continue
		}
		b, err := os.ReadFile("/proc/" + ent.Name() + "/cmdline")
		if err == nil && strings.Contains(string(b), dir) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// ContainerChurn runs rounds of container churn with no tracer and under
// the daemon, interleaved, and counts the daemon's findings about them.
func (r *Runner) ContainerChurn(ctx context.Context) (*DockerResult, error) {
	e, err := r.startEngine(ctx)
	if err != nil {
		return nil, err
	}
	defer e.stop()
	res := &DockerResult{}
	for round := range r.cfg.DockerRounds {
		for _, v := range rotate([]Variant{NoTracer, Mntleak}, round) {
			if v == NoTracer {
				wall, err := e.churn(ctx, round, r.cfg.Containers)
				if err != nil {
					return res, err
				}
				res.WallNone = append(res.WallNone, wall.Seconds())
				r.logf("  container churn round %d %-9s %s", round, v, wall.Round(time.Millisecond))
				continue
			}
			if err := r.churnTraced(ctx, e, round, res); err != nil {
				return res, err
			}
		}
	}
	return res, nil
}

func (r *Runner) churnTraced(ctx context.Context, e *engine, round int, res *DockerResult) error {
	d, err := StartDaemon(ctx, DaemonOptions{Binary: r.cfg.Mntleak, LogFile: r.logPath(fmt.Sprintf("daemon-docker-%d.log", round))})
	if err != nil {
		return err
	}
	defer d.Stop()
	meter, err := startCPU(d.PID())
	if err != nil {
		return err
	}
	// A service with a mount namespace of its own sits on the node during
	// the churn, as every PrivateTmp=yes unit does (systemd makes its /
	// slave): the copies that follow the unmounts, or that the kernel
	// detaches with the runtime's rmdir, must give no finding.
	var svc *exec.Cmd
	if err := e.node.do(func() error {
		svc = exec.Command("unshare", "-m", "--propagation", "slave", "sleep", "3600")
		return svc.Start()
	}); err != nil {
		return fmt.Errorf("start a private-namespace service on the node: %w", err)
	}
	defer func() {
		_ = svc.Process.Kill()
		_ = svc.Wait()
	}()
	wall, err := e.churn(ctx, round, r.cfg.Containers)
	if err != nil {
		return err
	}
	// The last removals' events and their settling reach the daemon.
	time.Sleep(time.Second)
	share, _, err := meter.share()
	if err != nil {
		return err
	}
	res.WallMntleak = append(res.WallMntleak, wall.Seconds())
	res.CPU = append(res.CPU, share)
	// Stopped before counting: leaks still waiting for their teardown to
	// settle are confirmed (or dropped) when the daemon stops.
	if err := d.Stop(); err != nil {
		return err
	}
	for _, f := range d.Findings() {
		if strings.Contains(f.Line, e.dir) {
			res.Findings++
			res.FindingLines = append(res.FindingLines, f.Line)
		} else {
			res.OtherFindings++
		}
	}
	r.logf("  container churn round %d mntleak   %s, daemon CPU %s, findings %d (others %d)",
		round, wall.Round(time.Millisecond), pct(share), res.Findings, res.OtherFindings)
	return nil
}

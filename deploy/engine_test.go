package deploy

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mntleak/mntleak/e2e/testkit/privtest"
)

// engine is a Docker Engine of the test's own: dockerd with its data root,
// exec root and socket in dir, in a mount namespace of its own whose / is
// rshared as systemd makes it (so rslave volumes have a master); its
// mounts go with it. At cleanup its containers are removed, then dockerd
// is stopped (by pid) and the shims it left are killed (by pid: their
// command lines name dir).
type engine struct {
	dir, host string
	cmd       *exec.Cmd
}

func startEngine(t *testing.T, dir string) *engine {
	t.Helper()
	e := &engine{dir: dir, host: "unix://" + filepath.Join(dir, "docker.sock")}
	logf, err := os.Create(filepath.Join(dir, "dockerd.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	e.cmd = exec.Command("unshare", "-m", "--propagation", "shared", "dockerd", "--data-root", filepath.Join(dir, "data"),
		"--exec-root", filepath.Join(dir, "exec"), "-H", e.host, "--pidfile", filepath.Join(dir, "dockerd.pid"),
		"--iptables=false", "--bridge=none", "--ip-forward=false", "--ip-masq=false", "--storage-driver", "overlay2", "--log-level", "warn")
	e.cmd.Stdout, e.cmd.Stderr = logf, logf
	if err := e.cmd.Start(); err != nil {
		t.Fatalf("start dockerd: %v", err)
	}
	exited := make(chan struct{})
	go func() { _ = e.cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		if ids, err := e.try("ps", "-aq"); err == nil && strings.TrimSpace(ids) != "" {
			_, _ = e.try(append([]string{"rm", "-f"}, strings.Fields(ids)...)...)
		}
		_ = e.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			_ = e.cmd.Process.Kill()
			<-exited
		}
		killNaming(dir)
	})
	if !privtest.Poll(60*time.Second, func() bool {
		_, err := e.try("version")
		return err == nil || e.cmd.ProcessState != nil
	}) {
		b, _ := os.ReadFile(filepath.Join(dir, "dockerd.log"))
		t.Fatalf("dockerd not answering on %s:\n%s", e.host, b)
	}
	return e
}

// try runs the docker client against the engine.
func (e *engine) try(args ...string) (string, error) {
	cmd := exec.Command("docker", append([]string{"-H", e.host}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		return stdout.String(), fmt.Errorf("docker %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// docker runs the docker client and fails the test if it fails.
func (e *engine) docker(t *testing.T, args ...string) string {
	t.Helper()
	out, err := e.try(args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// startContainerd starts a containerd of the test's own (root, state and
// socket in dir; the CRI plugin off), in a mount namespace of its own, and
// stops it (by pid) at cleanup. It returns its socket.
func startContainerd(t *testing.T, dir string) string {
	t.Helper()
	sock := filepath.Join(dir, "containerd.sock")
	conf := filepath.Join(dir, "config.toml")
	config := "version = 2\nroot = \"" + filepath.Join(dir, "root") + "\"\nstate = \"" + filepath.Join(dir, "state") + "\"\n" +
		"disabled_plugins = [\"io.containerd.grpc.v1.cri\"]\n[grpc]\n  address = \"" + sock + "\"\n"
	if err := os.WriteFile(conf, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	logf, err := os.Create(filepath.Join(dir, "containerd.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command("unshare", "-m", "--propagation", "private", "containerd", "--config", conf)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatalf("start containerd: %v", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		killNaming(dir)
	})
	if !privtest.Poll(30*time.Second, func() bool {
		return exec.Command("ctr", "--address", sock, "version").Run() == nil
	}) {
		b, _ := os.ReadFile(filepath.Join(dir, "containerd.log"))
		t.Fatalf("containerd not answering on %s:\n%s", sock, b)
	}
	return sock
}

// killNaming kills (by pid) the processes whose command line names dir:
// the shims and daemons a test's engine started, if any outlived it.
func killNaming(dir string) {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil || !bytes.Contains(b, []byte(dir)) {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p))); err == nil && pid != os.Getpid() {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

package tracer_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap/zaptest"

	"github.com/mntleak/mntleak/e2e/testkit/privtest"
	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/tracer"
)

// TestKernelBTF: New reads the kernel BTF from the configured path. A
// missing file or one that is not BTF gives one line naming
// CONFIG_DEBUG_INFO_BTF; a copy of the real one works.
func TestKernelBTF(t *testing.T) {
	privtest.Require(t)
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path, wantErr string
	}{
		{"missing", filepath.Join(dir, "vmlinux"), "kernel BTF not found at " + filepath.Join(dir, "vmlinux") + ": mntleak needs a kernel built with CONFIG_DEBUG_INFO_BTF=y"},
		{"not BTF", empty, "kernel BTF at " + empty + " does not parse (needs CONFIG_DEBUG_INFO_BTF=y)"},
		{"copy of the kernel's", copyFile(t, tracer.DefaultBTFPath, filepath.Join(dir, "vmlinux.copy")), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tracer.WithBTFPath(tracer.Config{Sink: func(*event.Event) {}}, tt.path)
			tr, err := tracer.New(cfg, zaptest.NewLogger(t))
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if err := tr.Close(); err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil {
				tr.Close()
				t.Fatal("New succeeded")
			}
			if !strings.HasPrefix(err.Error(), tt.wantErr) || strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q, want one line starting %q", err, tt.wantErr)
			}
		})
	}
}

func copyFile(t *testing.T, from, to string) string {
	t.Helper()
	src, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.Create(to)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	return to
}

// TestMissingCapabilities runs this test binary's New helper (main_test.go)
// as an unprivileged user and as root without the BPF capabilities: it
// exits non-zero with one line naming what is missing.
func TestMissingCapabilities(t *testing.T) {
	privtest.Require(t)
	privtest.RequireCommands(t, "setpriv")
	bin := helperBinary(t)
	const daemonCaps = "run mntleak as root or with CAP_BPF, CAP_PERFMON, CAP_SYS_ADMIN, CAP_SYS_PTRACE, CAP_DAC_READ_SEARCH and CAP_SYS_CHROOT"
	tests := []struct {
		name    string
		setpriv []string
		want    []string
	}{
		{"nobody", []string{"--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all"},
			[]string{"mntleak trace: missing capabilities CAP_BPF and CAP_PERFMON (or CAP_SYS_ADMIN) to load BPF programs", daemonCaps, "(uid 65534, CapEff 0000000000000000)"}},
		{"root without bpf, perfmon, sys_admin", []string{"--bounding-set=-bpf,-perfmon,-sys_admin", "--inh-caps=-all"},
			[]string{"mntleak trace: missing capabilities CAP_BPF and CAP_PERFMON (or CAP_SYS_ADMIN)", daemonCaps, "(uid 0, CapEff "}},
		{"root with bpf only", []string{"--bounding-set=-perfmon,-sys_admin", "--inh-caps=-all"},
			[]string{"mntleak trace: missing capabilities CAP_PERFMON (or CAP_SYS_ADMIN)", daemonCaps}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			cmd := exec.Command("setpriv", append(tt.setpriv, "--", bin, "-test.run=^$")...)
			cmd.Env = append(os.Environ(), envHelper+"=new")
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() == 0 {
				t.Fatalf("helper: %v, want a non-zero exit\nstderr: %s", err, stderr.String())
			}
			out := stderr.String()
			if strings.Count(out, "\n") != 1 || !strings.HasSuffix(out, "\n") {
				t.Errorf("stderr is not one line: %q", out)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("stderr %q lacks %q", out, w)
				}
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout: %q", stdout.String())
			}
		})
	}
}

// helperBinary copies the test binary where any user can run it (the
// go test build directory is private to root); it is removed at cleanup.
func helperBinary(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "mntleak-helper-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := copyFile(t, self, filepath.Join(dir, "tracer.test"))
	if err := os.Chmod(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}

package procfs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRealPath resolves links inside a process's root, not mntleak's: a
// fake /proc whose process 123 has a root of its own.
func TestRealPath(t *testing.T) {
	dir := t.TempDir()
	rootfs := filepath.Join(dir, "rootfs")
	for _, d := range []string{"run/docker/netns", "var", "srv/data"} {
		if err := os.MkdirAll(filepath.Join(rootfs, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	links := map[string]string{
		"var/run":   "../run",    // relative, as Debian has it
		"srv/alias": "/srv/data", // absolute: inside the process's root
		"loop/a":    "b",
		"loop/b":    "a",
	}
	if err := os.MkdirAll(filepath.Join(rootfs, "loop"), 0o755); err != nil {
		t.Fatal(err)
	}
	for l, target := range links {
		if err := os.Symlink(target, filepath.Join(rootfs, l)); err != nil {
			t.Fatal(err)
		}
	}
	proc := filepath.Join(dir, "proc", "123")
	if err := os.MkdirAll(filepath.Join(proc, "ns"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("mnt:[4026532317]", filepath.Join(proc, "ns", "mnt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(rootfs, filepath.Join(proc, "root")); err != nil {
		t.Fatal(err)
	}
	h := Host{Root: filepath.Join(dir, "proc")}
	tests := []struct {
		path, want, wantErr string
	}{
		{"/var/run/docker/netns/8f34ed63aca8", "/run/docker/netns/8f34ed63aca8", ""},
		{"/run/docker/netns", "/run/docker/netns", ""},
		{"/srv/alias/x/../y", "/srv/data/y", ""},
		{"/var/run/../var/run/docker", "/run/docker", ""},
		{"/no/such/dir", "/no/such/dir", ""},
		{"/loop/a/x", "", "too many symbolic links"},
		{"relative/path", "", "not absolute"},
	}
	for _, tt := range tests {
		got, ns, err := h.RealPath(123, tt.path)
		switch {
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("RealPath(%s) = %q, %v; want an error with %q", tt.path, got, err, tt.wantErr)
		case tt.wantErr == "" && (err != nil || got != tt.want || ns != 4026532317):
			t.Errorf("RealPath(%s) = %q, %d, %v; want %q in 4026532317", tt.path, got, ns, err, tt.want)
		}
	}
	if _, _, err := h.RealPath(999, "/var/run"); err == nil {
		t.Error("RealPath of a process that does not exist succeeded")
	}
}

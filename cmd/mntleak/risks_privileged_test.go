package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mntleak/mntleak/audit"
	"github.com/mntleak/mntleak/e2e/testkit/privtest"
)

// ensureDir makes dir (and its missing parents) if it is not there, and
// removes at cleanup what it made, deepest first, only while empty (a
// runtime that started using it meanwhile keeps it).
func ensureDir(t *testing.T, dir string) {
	t.Helper()
	var made []string
	for d := dir; d != "/"; d = filepath.Dir(d) {
		if _, err := os.Stat(d); err == nil {
			break
		}
		made = append(made, d)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, d := range made {
			_ = os.Remove(d)
		}
	})
}

// TestDangerousBinds: a container-like namespace binds each of the
// node's dangerous directories recursively: private, audit flags it
// (private-hostpath, naming the namespace's process); rslave, or a bind
// of an ordinary directory, it does not. One namespace holds every bind,
// on real mounts.
func TestDangerousBinds(t *testing.T) {
	privtest.Require(t)
	privtest.RequireCommands(t, "unshare", "mount")
	bin := privtest.Binary(t)
	const csi = "/var/lib/kubelet/plugins/csi.mntleak.test"
	for _, d := range []string{"/var/lib/kubelet", "/var/lib/docker", "/var/lib/containerd", csi} {
		ensureDir(t, d)
	}
	dir := t.TempDir()
	plain := privtest.Mkdir(t, filepath.Join(dir, "data"))
	tests := []struct {
		name, source, propagation string
		flagged                   bool
	}{
		{"/", "/", "rprivate", true},
		{"/var", "/var", "rprivate", true},
		{"/run", "/run", "rprivate", true},
		{"/dev", "/dev", "rprivate", true},
		{"kubelet root", "/var/lib/kubelet", "rprivate", true},
		{"docker root", "/var/lib/docker", "rprivate", true},
		{"containerd root", "/var/lib/containerd", "rprivate", true},
		{"CSI plugin dir", csi, "rprivate", true},
		{"docker root rslave", "/var/lib/docker", "rslave", false},
		{"/run rslave", "/run", "rslave", false},
		{"an ordinary directory", plain, "rprivate", false},
		{"/var/lib", "/var/lib", "rprivate", false},
	}
	var script []string
	for i, tt := range tests {
		dst := filepath.Join(dir, "c", fmt.Sprint(i))
		script = append(script, fmt.Sprintf("mkdir -p %s && mount --rbind %s %s && mount --make-%s %s", dst, tt.source, dst, tt.propagation, dst))
	}
	// Shared, so that an rslave bind has a master (a slave of a private
	// mount would be private).
	h := privtest.StartHolder(t, "shared", strings.Join(script, " && "))
	_, items := auditOf(t, bin, filepath.Join(dir, "c"))
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dst := filepath.Join(dir, "c", fmt.Sprint(i))
			var got []string
			for _, it := range items {
				if it.Kind == "risk" && it.What == "private-hostpath" && it.Where == dst {
					got = append(got, it.Detail)
					if !hasItem([]audit.Item{it}, "risk", "private-hostpath", h.PID) {
						t.Errorf("the item does not name the namespace's process %d: %+v", h.PID, it)
					}
				}
			}
			if tt.flagged && (len(got) != 1 || !strings.Contains(got[0], " "+tt.source+" at "+dst)) {
				t.Errorf("%s bound %s at %s: risks %q, want one naming %s", tt.source, tt.propagation, dst, got, tt.source)
			}
			if !tt.flagged && len(got) != 0 {
				t.Errorf("%s bound %s at %s flagged: %q", tt.source, tt.propagation, dst, got)
			}
		})
	}
}

package tracer

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/mntleak/mntleak/e2e/testkit/privtest"
)

// TestFentryProbeLooksInTheKernelBTF: the fentry line says the kernel
// has no vfs_statfs exactly when bpftool's dump of the kernel's own BTF
// (an oracle apart from cilium/ebpf) has no FUNC of that name, and
// haveKernelFunc agrees with the dump for it and for a syscall function.
func TestFentryProbeLooksInTheKernelBTF(t *testing.T) {
	privtest.Require(t)
	privtest.RequireCommands(t, "bpftool")
	out, err := exec.Command("bpftool", "btf", "dump", "file", "/sys/kernel/btf/vmlinux").Output()
	if err != nil {
		t.Fatalf("bpftool btf dump: %v", err)
	}
	dump := string(out)
	for _, fn := range []string{fentryProbeFunc, syscallFunc("mount")} {
		want := strings.Contains(dump, "FUNC '"+fn+"' ")
		if got, err := haveKernelFunc(nil, fn); err != nil || got != want {
			t.Errorf("haveKernelFunc(%s) = %v, %v; bpftool's dump says %v", fn, got, err, want)
		}
	}
	got, none := probeFentry(), "no (no "+fentryProbeFunc+" in the kernel BTF)"
	if inBTF := strings.Contains(dump, "FUNC '"+fentryProbeFunc+"' "); (got == none) == inBTF {
		t.Errorf("fentry probe %q with %s in the kernel BTF: %v", got, fentryProbeFunc, inBTF)
	}
	t.Logf("fentry: %s", got)
}

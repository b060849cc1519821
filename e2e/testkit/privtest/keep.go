package privtest

import (
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// KeepNamespace makes a mount namespace no process runs in, kept by a bind
// of its nsfs file at file (which must exist, on a mount that is not
// shared), with private propagation, running cmd in it first (none: true).
// It returns the namespace's inode. The bind goes at cleanup, and the
// namespace with it.
func KeepNamespace(t testing.TB, file string, cmd ...string) uint32 {
	t.Helper()
	return keepNamespace(t, nil, file, file, cmd)
}

// KeepNamespace is the package's KeepNamespace, made from the node's mount
// namespace (file is a path there).
func (n Node) KeepNamespace(t testing.TB, file string, cmd ...string) uint32 {
	t.Helper()
	pid := strconv.Itoa(n.PID)
	return keepNamespace(t, []string{"nsenter", "-t", pid, "-m", "--"}, file, "/proc/"+pid+"/root"+file, cmd)
}

func keepNamespace(t testing.TB, prefix []string, file, fromHere string, cmd []string) uint32 {
	t.Helper()
	if len(cmd) == 0 {
		cmd = []string{"true"}
	}
	// The kernel binds a mount namespace's nsfs file only into a namespace
	// with a smaller id, and hands ids out in per-CPU batches: a namespace
	// made on another CPU than the one that made the caller's (a test's
	// node) may get a smaller id, and unshare(1)'s bind fails with EINVAL
	// (measured: every time with the node made on CPU 1 and this on CPU 0).
	// A namespace made on the caller's CPU always gets a larger one, so
	// the CPUs are tried in turn, each pinned with taskset.
	RequireCommands(t, "taskset")
	cpus := allowedCPUs(t)
	var tried []string
	for i := 0; ; i++ {
		cpu := strconv.Itoa(cpus[i%len(cpus)])
		argv := append(append(append([]string(nil), prefix...), "taskset", "-c", cpu, "unshare", "--mount="+file, "--propagation", "private"), cmd...)
		out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
		if err == nil {
			break
		}
		tried = append(tried, "CPU "+cpu+": "+strings.TrimSpace(string(out)))
		if i == 2*len(cpus)-1 {
			t.Fatalf("%v: %v; tried %s", argv, err, strings.Join(tried, "; "))
		}
	}
	umount := append(append([]string(nil), prefix...), "umount", file)
	t.Cleanup(func() {
		// A test may have unmounted it already (a fix it applied).
		if out, err := exec.Command(umount[0], umount[1:]...).CombinedOutput(); err != nil && !strings.Contains(string(out), "not mounted") {
			t.Errorf("%v: %v: %s", umount, err, out)
		}
	})
	var st unix.Stat_t
	if err := unix.Stat(fromHere, &st); err != nil {
		t.Fatalf("stat %s: %v", fromHere, err)
	}
	return uint32(st.Ino)
}

// allowedCPUs lists the CPUs the test may run on.
func allowedCPUs(t testing.TB) []int {
	t.Helper()
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		t.Fatalf("sched_getaffinity: %v", err)
	}
	var cpus []int
	for cpu := 0; cpu < len(set)*64 && len(cpus) < set.Count(); cpu++ {
		if set.IsSet(cpu) {
			cpus = append(cpus, cpu)
		}
	}
	return cpus
}

package tracer

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/features"
	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/internal/logkey"
)

// Capability numbers from linux/capability.h.
const (
	capSysAdmin = 21
	capPerfmon  = 38
	capBPF      = 39
)

// tracefs locations, in the order cilium/ebpf looks them up.
var tracefsDirs = []string{"/sys/kernel/tracing", "/sys/kernel/debug/tracing"}

// preflight turns the usual reasons a load fails into one clear line each,
// before the verifier or the attach code produce a less obvious error.
func preflight(log *zap.Logger) error {
	if err := checkCapabilities("/proc/self/status"); err != nil {
		return err
	}
	if _, err := btf.LoadKernelSpec(); err != nil {
		return fmt.Errorf("kernel BTF is not available (/sys/kernel/btf/vmlinux; needs CONFIG_DEBUG_INFO_BTF=y): %w", err)
	}
	if err := features.HaveMapType(ebpf.RingBuf); err != nil {
		return fmt.Errorf("kernel has no BPF ring buffer (needs Linux 5.8 or later): %w", err)
	}
	return ensureTracefs(log)
}

// checkCapabilities reads the effective capability set. Loading tracing
// programs needs CAP_BPF and CAP_PERFMON, or CAP_SYS_ADMIN on older kernels.
func checkCapabilities(statusPath string) error {
	f, err := os.Open(statusPath)
	if err != nil {
		return fmt.Errorf("read capabilities from %s: %w", statusPath, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		val, ok := strings.CutPrefix(sc.Text(), "CapEff:")
		if !ok {
			continue
		}
		caps, err := strconv.ParseUint(strings.TrimSpace(val), 16, 64)
		if err != nil {
			return fmt.Errorf("parse CapEff in %s: %w", statusPath, err)
		}
		has := func(c uint) bool { return caps&(1<<c) != 0 }
		if has(capSysAdmin) || (has(capBPF) && has(capPerfmon)) {
			return nil
		}
		return fmt.Errorf("missing capabilities: mntleak needs CAP_BPF and CAP_PERFMON (or CAP_SYS_ADMIN); run it as root (uid %d has CapEff %s)", os.Geteuid(), strings.TrimSpace(val))
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read capabilities from %s: %w", statusPath, err)
	}
	return errors.New("read capabilities: no CapEff line in " + statusPath)
}

// ensureTracefs makes sure tracefs is mounted: syscall tracepoints are
// looked up by id in it. Minimal hosts and some container setups lack it;
// mounting it at its standard place is what systemd would have done.
func ensureTracefs(log *zap.Logger) error {
	for _, dir := range tracefsDirs {
		var st unix.Statfs_t
		if unix.Statfs(dir, &st) == nil && (st.Type == unix.TRACEFS_MAGIC || st.Type == unix.DEBUGFS_MAGIC) {
			if _, err := os.Stat(dir + "/events"); err == nil {
				return nil
			}
		}
	}
	dir := tracefsDirs[0]
	if err := unix.Mount("tracefs", dir, "tracefs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("tracefs is not mounted and mounting it on %s failed (mount -t tracefs tracefs %s): %w", dir, dir, err)
	}
	log.Info("mounted tracefs for syscall tracepoints", zap.String(logkey.Tracefs, dir))
	return nil
}

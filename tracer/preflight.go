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

	"github.com/mntleak/mntleak/internal/logkey"
)

// Capability numbers from linux/capability.h.
const (
	capDacReadSearch = 2
	capSysChroot     = 18
	capSysPtrace     = 19
	capSysAdmin      = 21
	capPerfmon       = 38
	capBPF           = 39
)

// DefaultBTFPath is where the kernel exposes its BTF.
const DefaultBTFPath = "/sys/kernel/btf/vmlinux"

// daemonCaps is the whole set mntleak runs with (deploy/), for messages.
const daemonCaps = "CAP_BPF, CAP_PERFMON, CAP_SYS_ADMIN, CAP_SYS_PTRACE, CAP_DAC_READ_SEARCH and CAP_SYS_CHROOT"

// tracefs locations, for DetectFeatures: mntleak no longer needs tracefs,
// but version still says where it is.
var tracefsDirs = []string{"/sys/kernel/tracing", "/sys/kernel/debug/tracing"}

// kernel is what preflight found out.
type kernel struct {
	buffer Buffer // resolved: ringbuf or perf
	walk   PathWalk
	hooks  Hooks // resolved: tracepoint or trampoline
	// hooksWhy says why hooks was chosen.
	hooksWhy string
	// btf is the kernel BTF, parsed once for every check and load of New:
	// cilium/ebpf's LoadKernelSpec parses /sys/kernel/btf/vmlinux again at
	// each call (20-45 ms of CPU here), and New looked syscalls up in it
	// once per handler.
	btf *btf.Spec
}

// preflight turns the usual reasons a load fails into one clear line each,
// before the verifier or the attach code produce a less obvious error.
func preflight(cfg Config, log *zap.Logger) (kernel, error) {
	var k kernel
	if err := checkCapabilities("/proc/self/status", log); err != nil {
		return k, err
	}
	var err error
	if k.btf, err = kernelBTF(cfg.btfPath); err != nil {
		return k, err
	}
	if k.buffer, err = chooseBuffer(cfg.Buffer); err != nil {
		return k, err
	}
	if k.hooks, k.hooksWhy, err = chooseHooks(cfg.Hooks, func() error { return probeTrampolineIn(k.btf) }); err != nil {
		return k, err
	}
	k.walk, err = probePathWalk()
	switch {
	case cfg.boundedWalk:
		k.walk = WalkBounded
	case err != nil:
		log.Warn("could not probe for bpf_loop: paths are walked with a bounded loop", zap.Error(err))
	}
	// No tracefs: tp_btf and raw tracepoints are attached by name, and no
	// syscalls:* tracepoint is used (see attach.go).
	return k, nil
}

// kernelBTF checks that the kernel BTF CO-RE needs is there and parses.
func kernelBTF(path string) (*btf.Spec, error) {
	if path == "" {
		path = DefaultBTFPath
	}
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("kernel BTF not found at %s: mntleak needs a kernel built with CONFIG_DEBUG_INFO_BTF=y: %w", path, err)
	}
	var (
		spec *btf.Spec
		err  error
	)
	if path == DefaultBTFPath {
		spec, err = btf.LoadKernelSpec()
	} else {
		spec, err = btf.LoadSpec(path)
	}
	if err != nil {
		return nil, fmt.Errorf("kernel BTF at %s does not parse (needs CONFIG_DEBUG_INFO_BTF=y): %w", path, err)
	}
	return spec, nil
}

// chooseBuffer resolves auto and checks that the kernel has what is asked.
func chooseBuffer(want Buffer) (Buffer, error) {
	if want == BufferPerf {
		if err := features.HaveMapType(ebpf.PerfEventArray); err != nil {
			return want, fmt.Errorf("probe BPF perf event array: %w", err)
		}
		return want, nil
	}
	err := features.HaveMapType(ebpf.RingBuf)
	switch {
	case err == nil:
		return BufferRingbuf, nil
	case want == BufferAuto && errors.Is(err, ebpf.ErrNotSupported):
		return chooseBuffer(BufferPerf)
	case errors.Is(err, ebpf.ErrNotSupported):
		return want, fmt.Errorf("kernel has no BPF ring buffer (needs Linux 5.8 or later; buffer auto falls back to a perf event array): %w", err)
	default:
		return want, fmt.Errorf("probe BPF ring buffer: %w", err)
	}
}

// checkCapabilities reads the effective capability set. Loading tracing
// programs needs CAP_BPF and CAP_PERFMON, or CAP_SYS_ADMIN on older
// kernels: without them the error names what is missing. CAP_SYS_PTRACE
// and CAP_DAC_READ_SEARCH only matter for reading other processes' /proc
// entries (holders, command lines), so their absence is a warning.
// CAP_SYS_CHROOT (with CAP_SYS_ADMIN) lets a thread enter a mount
// namespace no process runs in, kept by a bind of its nsfs file, to read
// its table: without it, one warning says such namespaces go unread.
func checkCapabilities(statusPath string, log *zap.Logger) error {
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
		val = strings.TrimSpace(val)
		caps, err := strconv.ParseUint(val, 16, 64)
		if err != nil {
			return fmt.Errorf("parse CapEff in %s: %w", statusPath, err)
		}
		return judgeCapabilities(caps, val, log)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read capabilities from %s: %w", statusPath, err)
	}
	return errors.New("read capabilities: no CapEff line in " + statusPath)
}

func judgeCapabilities(caps uint64, capEff string, log *zap.Logger) error {
	has := func(c uint) bool { return caps&(1<<c) != 0 }
	if !has(capSysAdmin) && !(has(capBPF) && has(capPerfmon)) {
		var lack []string
		if !has(capBPF) {
			lack = append(lack, "CAP_BPF")
		}
		if !has(capPerfmon) {
			lack = append(lack, "CAP_PERFMON")
		}
		return fmt.Errorf("missing capabilities %s (or CAP_SYS_ADMIN) to load BPF programs: run mntleak as root or with %s (uid %d, CapEff %s)",
			strings.Join(lack, " and "), daemonCaps, os.Geteuid(), capEff)
	}
	var lack []string
	if !has(capSysPtrace) {
		lack = append(lack, "CAP_SYS_PTRACE")
	}
	if !has(capDacReadSearch) {
		lack = append(lack, "CAP_DAC_READ_SEARCH")
	}
	if len(lack) > 0 {
		log.Warn("missing capabilities: other processes' /proc entries may be unreadable, so findings may lack holders and command lines",
			zap.Strings(logkey.Capabilities, lack), zap.String(logkey.CapEff, capEff))
	}
	if !has(capSysChroot) || !has(capSysAdmin) {
		lack = nil
		if !has(capSysAdmin) {
			lack = append(lack, "CAP_SYS_ADMIN")
		}
		if !has(capSysChroot) {
			lack = append(lack, "CAP_SYS_CHROOT")
		}
		log.Warn("missing capabilities: mount namespaces no process runs in (kept by a bind of their nsfs file) cannot be read, so a copy held there is not found",
			zap.Strings(logkey.Capabilities, lack), zap.String(logkey.CapEff, capEff))
	}
	return nil
}

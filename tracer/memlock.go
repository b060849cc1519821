package tracer

import (
	"fmt"

	"github.com/cilium/ebpf/rlimit"
	"golang.org/x/sys/unix"
)

// Memlock says how BPF memory is accounted on this kernel and what
// RemoveMemlock did about it.
type Memlock string

// What RemoveMemlock found.
const (
	// MemlockCgroup: the kernel charges BPF memory to the memory cgroup
	// (5.11 and later); RLIMIT_MEMLOCK does not apply.
	MemlockCgroup Memlock = "not needed (BPF memory is charged to the memory cgroup)"
	// MemlockRaised: an older kernel (RHEL 8, 5.4) counts BPF memory
	// against RLIMIT_MEMLOCK, which was raised to unlimited.
	MemlockRaised Memlock = "raised to unlimited (the kernel counts BPF memory against RLIMIT_MEMLOCK)"
)

// RemoveMemlock lifts RLIMIT_MEMLOCK for the process when the kernel still
// counts BPF memory against it; on kernels that charge the memory cgroup
// it changes nothing. It runs before any map is made: without it the
// ring buffer (2 MiB by default) and the maps do not load on such kernels
// under a limit as low as the old 64 KiB default. The error names the
// capability it takes.
func RemoveMemlock() (Memlock, error) {
	var before unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_MEMLOCK, &before); err != nil {
		return "", fmt.Errorf("read RLIMIT_MEMLOCK: %w", err)
	}
	if err := rlimit.RemoveMemlock(); err != nil {
		return "", fmt.Errorf("raise RLIMIT_MEMLOCK, which this kernel counts BPF memory against (needs CAP_SYS_RESOURCE, or a higher LimitMEMLOCK=): %w", err)
	}
	var after unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_MEMLOCK, &after); err != nil {
		return "", fmt.Errorf("read RLIMIT_MEMLOCK: %w", err)
	}
	if after.Cur != before.Cur {
		return MemlockRaised, nil
	}
	return MemlockCgroup, nil
}

package bench

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// tracefsDir is where bpftrace looks for tracefs first.
const tracefsDir = "/sys/kernel/tracing"

// ensureTracefs mounts tracefs at tracefsDir when it is not there (a fresh
// machine mounts it nowhere) and returns the unmount of what it mounted,
// or nil when it was mounted already.
func ensureTracefs() (func(), error) {
	if _, err := os.Stat(tracefsDir + "/events"); err == nil {
		return nil, nil
	}
	if err := unix.Mount("tracefs", tracefsDir, "tracefs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return nil, fmt.Errorf("mount tracefs at %s (bpftrace needs it; or run with -no-bpftrace): %w", tracefsDir, err)
	}
	return func() { _ = unix.Unmount(tracefsDir, 0) }, nil
}

package variants

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"

	"github.com/mntleak/mntleak/e2e/testkit/privtest"
)

// cloneEnv names the script the test binary runs as a clone(CLONE_NEWNS)
// child when started as the helper: os/exec makes the child with clone,
// so the namespace comes from clone, not unshare.
const cloneEnv = "MNTLEAK_VARIANT_CLONE"

// mountEnv names the directory the test binary mounts a tmpfs on when
// started as the mounter helper: a process that makes a mount itself and
// stays (a CSI node plugin), so the mount event's pid is a live process.
const mountEnv = "MNTLEAK_VARIANT_MOUNT"

func TestMain(m *testing.M) {
	if target := os.Getenv(mountEnv); target != "" {
		if err := syscall.Mount("csi-vol", target, "tmpfs", 0, ""); err != nil {
			fmt.Fprintln(os.Stderr, "mount", target+":", err)
			os.Exit(1)
		}
		fmt.Println("ready")
		select {} // until killed
	}
	if script := os.Getenv(cloneEnv); script != "" {
		cmd := exec.Command("sh", "-c", script)
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNS}
		if err := cmd.Run(); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(privtest.Main(m))
}

package variants

import (
	"os"
	"os/exec"
	"syscall"
	"testing"

	"github.com/mntleak/mntleak/internal/privtest"
)

// cloneEnv names the script the test binary runs as a clone(CLONE_NEWNS)
// child when started as the helper: os/exec makes the child with clone,
// so the namespace comes from clone, not unshare.
const cloneEnv = "MNTLEAK_VARIANT_CLONE"

func TestMain(m *testing.M) {
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

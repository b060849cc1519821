package procfs

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/event"
)

// partial is err unless it only says some processes were unreadable (a
// pin search's answer is then the others' pins): even root cannot read
// every process (this machine's PID 1 is one).
func partial(err error) error {
	var u *UnreadableError
	if errors.As(err, &u) {
		return nil
	}
	return err
}

// envPinsOf makes the test binary, re-executed, print what Host.Pins
// answers for the device of the directory it names, and exit.
const envPinsOf = "MNTLEAK_TEST_PINS_OF"

func TestMain(m *testing.M) {
	if file := os.Getenv(envNSMountinfo); file != "" {
		nsMountinfoChild(file)
	}
	if dir := os.Getenv(envPinsOf); dir != "" {
		var st unix.Stat_t
		if err := unix.Stat(dir, &st); err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		pins, err := Host{}.Pins([]event.Dev{event.MakeDev(unix.Major(st.Dev), unix.Minor(st.Dev))})
		var u *UnreadableError
		switch {
		case errors.As(err, &u):
			fmt.Println("unreadable", u.Processes, "pins", len(pins))
		case err != nil:
			fmt.Println("error", err)
		default:
			fmt.Println("unreadable 0 pins", len(pins))
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestPinsUnreadable: run as an unprivileged user, a pin search cannot
// read root's processes and says how many, with the pins it could find
// (its own cwd); it is never an empty answer that looks like "nothing".
func TestPinsUnreadable(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run a child as another user")
	}
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Skip("no setpriv")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} { // t.TempDir makes both 0700
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all", self, "-test.run=^$")
	cmd.Env = append(os.Environ(), envPinsOf+"="+dir)
	cmd.Dir = dir // the child's own cwd pins dir's filesystem
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	f := strings.Fields(string(out))
	if len(f) != 4 || f[0] != "unreadable" {
		t.Fatalf("child said %q", out)
	}
	n, _ := strconv.Atoi(f[1])
	pins, _ := strconv.Atoi(f[3])
	// Root's processes: at least this test's own.
	if n < 1 {
		t.Errorf("unprivileged pin search: %d processes unreadable, want at least this root test", n)
	}
	if pins < 1 {
		t.Errorf("unprivileged pin search found %d pins, want at least its own cwd", pins)
	}
}

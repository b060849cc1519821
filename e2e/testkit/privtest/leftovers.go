package privtest

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// Leftovers lists what a test run may leave behind on the machine: mounts
// whose mount point names mntleak, loop devices backed by a test's image,
// the test binaries' and scenarios' directories, Go tests' temporary
// directories (a run killed mid-test leaves them). make test compares it
// before and after the whole run (e2e/testkit/leftovers).
func Leftovers() []string {
	var out []string
	if f, err := os.Open("/proc/self/mountinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if fields := strings.Fields(sc.Text()); len(fields) > 4 && strings.Contains(fields[4], "mntleak") {
				out = append(out, "mount "+fields[4])
			}
		}
		f.Close()
	}
	if b, err := exec.Command("losetup", "-l", "-n", "-O", "NAME,BACK-FILE").Output(); err == nil {
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			if strings.Contains(line, "/disk.img") || strings.Contains(line, "mntleak") {
				out = append(out, "loop device "+strings.Join(strings.Fields(line), " backed by "))
			}
		}
	}
	for _, pattern := range []string{"/tmp/mntleak-*", "/var/lib/mntleak-*", "/tmp/Test*"} {
		matches, _ := filepath.Glob(pattern)
		for _, m := range matches {
			out = append(out, "path "+m)
		}
	}
	slices.Sort(out)
	return out
}

// NewLeftovers is what after has that before had not: what the tests left,
// not what another run had left already.
func NewLeftovers(before, after []string) []string {
	var out []string
	for _, a := range after {
		if !slices.Contains(before, a) {
			out = append(out, a)
		}
	}
	return out
}

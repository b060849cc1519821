package privtest

import (
	"bufio"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Cgroup makes a cgroup of the test's own in a hierarchy mounted on this
// machine (a cgroup v1 one with the pids controller, else any cgroup or
// cgroup2 mount) and returns its directory. At cleanup every process
// still in it is moved back to the hierarchy's root and it is removed.
func Cgroup(t *testing.T) string {
	t.Helper()
	root, err := cgroupRoot()
	if err != nil {
		t.Skipf("no cgroup hierarchy to make a cgroup in: %v", err)
	}
	dir, err := os.MkdirTemp(root, "mntleak-test-")
	if err != nil {
		t.Fatalf("make a cgroup under %s: %v", root, err)
	}
	t.Cleanup(func() { removeCgroup(t, dir, root) })
	return dir
}

// ChildCgroup makes a cgroup named name in the cgroup at parent (one of
// Cgroup's) and returns its directory: a path that names a container, a
// unit or a pod, as a runtime's does. At cleanup every process still in
// it is moved to parent and it is removed.
func ChildCgroup(t *testing.T, parent, name string) string {
	t.Helper()
	dir := filepath.Join(parent, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatalf("make a cgroup under %s: %v", parent, err)
	}
	t.Cleanup(func() { removeCgroup(t, dir, parent) })
	return dir
}

// removeCgroup moves every process still in the cgroup at dir to the one
// at to, and removes dir.
func removeCgroup(t *testing.T, dir, to string) {
	b, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	for _, pid := range strings.Fields(string(b)) {
		if err := os.WriteFile(filepath.Join(to, "cgroup.procs"), []byte(pid), 0o644); err != nil {
			t.Errorf("move process %s back to %s: %v", pid, to, err)
		}
	}
	if err := os.Remove(dir); err != nil {
		t.Errorf("remove cgroup %s: %v", dir, err)
	}
}

// MoveToCgroup moves process pid into the cgroup at dir.
func MoveToCgroup(t *testing.T, dir string, pid int) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644); err != nil {
		t.Fatalf("move process %d into %s: %v", pid, dir, err)
	}
}

// cgroupRoot is the mount point of the hierarchy Cgroup makes cgroups in.
func cgroupRoot() (string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", err
	}
	defer f.Close()
	var any string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		i := slices.Index(fields, "-")
		if i < 0 || i+3 >= len(fields) || len(fields) < 5 {
			continue
		}
		fstype, super := fields[i+1], fields[i+3]
		switch {
		case fstype == "cgroup" && strings.Contains(","+super+",", ",pids,"):
			return fields[4], nil
		case (fstype == "cgroup" || fstype == "cgroup2") && any == "":
			any = fields[4]
		}
	}
	if any == "" {
		return "", errors.New("no cgroup or cgroup2 mount in /proc/self/mountinfo")
	}
	return any, sc.Err()
}

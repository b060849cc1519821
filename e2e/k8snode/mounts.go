package k8snode

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/moby/sys/mountinfo"

	"github.com/mntleak/mntleak/procfs"
)

// What the kernel shows of the scenarios' mounts: the scenarios' tests
// assert on these, not on what the kubelet says.

// NSMount is a mount as one mount namespace shows it.
type NSMount struct {
	MntNS string // the namespace, "mnt:[inode]"
	PID   int    // a process in it, whose mountinfo showed the mount
	*procfs.Mount
}

func (m NSMount) String() string {
	return fmt.Sprintf("%s (pid %d): %s %s on %s (%d:%d)", m.MntNS, m.PID, m.FSType, m.Source, m.Mountpoint, m.Major, m.Minor)
}

// MountsUnder lists the mounts at or below dir in pid's mount namespace.
func MountsUnder(pid int, dir string) ([]*procfs.Mount, error) {
	ms, err := pidMounts(pid)
	if err != nil {
		return nil, err
	}
	var out []*procfs.Mount
	for _, m := range ms {
		if m.Mountpoint == dir || strings.HasPrefix(m.Mountpoint, dir+"/") {
			out = append(out, m)
		}
	}
	return out, nil
}

// MountsNaming lists, in every mount namespace of the machine, the mounts
// whose mount point contains s (a pod's uid: its volumes and any copy of
// them, wherever a namespace has them). Processes that exit meanwhile are
// skipped.
func MountsNaming(s string) ([]NSMount, error) {
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("read /proc: %w", err)
	}
	seen := map[string]bool{}
	var out []NSMount
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		ns, err := os.Readlink("/proc/" + p.Name() + "/ns/mnt")
		if err != nil || seen[ns] {
			continue // gone, or a kernel thread
		}
		ms, err := pidMounts(pid)
		if err != nil {
			if _, gone := os.Readlink("/proc/" + p.Name() + "/ns/mnt"); gone != nil || errors.Is(err, os.ErrNotExist) {
				continue // it exited meanwhile
			}
			return nil, err
		}
		seen[ns] = true
		for _, m := range ms {
			if strings.Contains(m.Mountpoint, s) {
				out = append(out, NSMount{MntNS: ns, PID: pid, Mount: m})
			}
		}
	}
	return out, nil
}

// pidMounts reads /proc/PID/mountinfo.
func pidMounts(pid int) ([]*procfs.Mount, error) {
	file := "/proc/" + strconv.Itoa(pid) + "/mountinfo"
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", file, err)
	}
	defer f.Close()
	// Read by the library, not by mntleak's own parser: what the tests
	// assert on is the kernel's word.
	ms, err := mountinfo.GetMountsFromReader(f, nil)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", file, err)
	}
	return procfs.MountsOf(ms), nil
}

// MountNS is the mount namespace of pid, "mnt:[inode]".
func MountNS(pid int) (string, error) {
	ns, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/ns/mnt")
	if err != nil {
		return "", fmt.Errorf("mount namespace of pid %d: %w", pid, err)
	}
	return ns, nil
}

// FDMountID is the mount id of pid's open file fd (/proc/PID/fdinfo/FD,
// "mnt_id:"), the mount the file was opened through even once no mount
// table lists it.
func FDMountID(pid, fd int) (int, error) {
	file := fmt.Sprintf("/proc/%d/fdinfo/%d", pid, fd)
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", file, err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "mnt_id:"); ok {
			id, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				return 0, fmt.Errorf("%s: mnt_id %q: %w", file, v, err)
			}
			return id, nil
		}
	}
	return 0, fmt.Errorf("%s: no mnt_id", file)
}

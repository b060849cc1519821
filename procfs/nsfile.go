package procfs

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"time"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
)

// nsfsMagic is the superblock magic of nsfs (NSFS_MAGIC).
const nsfsMagic = 0x6e736673

// NSMountinfo implements Proc. mntleak never joins another namespace
// itself (a thread in it would hold it, and a Go process cannot setns into
// a mount namespace): a short-lived nsenter child does, and prints its
// own mountinfo.
func (h Host) NSMountinfo(file string) (uint32, []*mountinfo.Info, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(file, &st); err != nil {
		return 0, nil, fmt.Errorf("statfs %s: %w", file, err)
	}
	if st.Type != nsfsMagic {
		return 0, nil, fmt.Errorf("%s is not a namespace file", file)
	}
	var s unix.Stat_t
	if err := unix.Stat(file, &s); err != nil {
		return 0, nil, fmt.Errorf("stat %s: %w", file, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "nsenter", "--mount="+file, "--", "cat", "/proc/self/mountinfo")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return 0, nil, fmt.Errorf("read the mount table of %s: %w: %s", file, err, bytes.TrimSpace(stderr.Bytes()))
	}
	mounts, err := mountinfo.GetMountsFromReader(bytes.NewReader(out), nil)
	if err != nil {
		return 0, nil, fmt.Errorf("mount table of %s: %w", file, err)
	}
	return uint32(s.Ino), mounts, nil
}

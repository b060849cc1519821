package bench

import (
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/internal/nsthread"
)

// node is a mount namespace of the benchmark's own, held by one locked OS
// thread: processes started through it are born in it (a fork copies the
// forking thread's namespace), and it goes with the thread when closed.
// It starts as a copy of the host's without the host's scratch mounts
// (other tests' loop devices and binds, detached here at once), so the
// namespaces copied from it hold nothing of anyone else's.
type node struct {
	ns    uint32
	calls chan func()
	done  chan struct{}
}

// systemMounts are kept in a node: what dockerd and the shell tools use.
func systemMount(mp string) bool {
	switch mp {
	case "/", "/dev", "/dev/shm", "/dev/pts", "/dev/mqueue", "/dev/hugepages", "/proc", "/run", "/run/lock", "/sys":
		return true
	}
	return strings.HasPrefix(mp, "/sys/") || strings.HasPrefix(mp, "/proc/")
}

// startNode makes a node whose / propagates as propagation ("shared" as
// systemd makes it, for Docker; "private" otherwise).
func startNode(propagation string) (*node, error) {
	n := &node{calls: make(chan func()), done: make(chan struct{})}
	errc := make(chan error, 1)
	// The thread, and the namespace, end with this goroutine.
	go nsthread.Run(func() error {
		defer close(n.done)
		if err := n.setup(propagation); err != nil {
			errc <- err
			return nil
		}
		errc <- nil
		for fn := range n.calls {
			fn()
		}
		return nil
	})
	if err := <-errc; err != nil {
		return nil, err
	}
	return n, nil
}

func (n *node) setup(propagation string) error {
	if err := unix.Unshare(unix.CLONE_NEWNS | unix.CLONE_FS); err != nil {
		return fmt.Errorf("unshare the node namespace: %w", err)
	}
	flag := uintptr(unix.MS_PRIVATE)
	if propagation == "shared" {
		flag = unix.MS_SHARED
	}
	// Private first, so that detaching below reaches no peer in the host.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make the node's / private: %w", err)
	}
	f, err := os.Open(fmt.Sprintf("/proc/self/task/%d/mountinfo", unix.Gettid()))
	if err != nil {
		return err
	}
	mounts, err := mountinfo.GetMountsFromReader(f, nil)
	f.Close()
	if err != nil {
		return fmt.Errorf("node mountinfo: %w", err)
	}
	sort.Slice(mounts, func(i, j int) bool { return len(mounts[i].Mountpoint) > len(mounts[j].Mountpoint) })
	for _, m := range mounts {
		if !systemMount(m.Mountpoint) {
			_ = unix.Unmount(m.Mountpoint, unix.MNT_DETACH) // may be gone with a parent already
		}
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|flag, ""); err != nil {
		return fmt.Errorf("make the node's / %s: %w", propagation, err)
	}
	var st unix.Stat_t
	if err := unix.Stat(fmt.Sprintf("/proc/self/task/%d/ns/mnt", unix.Gettid()), &st); err != nil {
		return fmt.Errorf("node namespace: %w", err)
	}
	n.ns = uint32(st.Ino)
	return nil
}

// do runs fn on the node's thread, in its namespace.
func (n *node) do(fn func() error) error {
	errc := make(chan error, 1)
	n.calls <- func() { errc <- fn() }
	return <-errc
}

// close ends the thread; the namespace goes once no process is left in it.
func (n *node) close() {
	close(n.calls)
	<-n.done
}

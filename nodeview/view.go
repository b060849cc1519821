package nodeview

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Kind is how node paths are reached.
type Kind string

// The views.
const (
	// Own: mntleak's own root and mount namespace are the node's (or the
	// node's root with a namespace of its own): paths are looked up as given.
	Own Kind = "own"
	// NodeRoot: mntleak runs in a container with hostPID: paths are looked
	// up under /proc/1/root, in the node's mount namespace.
	NodeRoot Kind = "node-root"
	// Blind: no hostPID (or PID 1's root cannot be read): only the
	// container's own files can be seen.
	Blind Kind = "blind"
)

// View is where node paths are looked up.
type View struct {
	Kind Kind
	// MntNS is the mount namespace paths are looked up in: mntleak's own,
	// or the node's init's in NodeRoot.
	MntNS uint32
	// Self is mntleak's own mount namespace.
	Self uint32
	// Root is the directory paths are looked up under ("/" or /proc/1/root).
	Root string
	// Reason says why the view is Blind, when it has a PID namespace of
	// the host's ("" without hostPID: procfs.Visibility says that).
	Reason string
}

// AsGiven is the view that looks paths up as given, in mntleak's own
// namespace (MntNS and Self unknown: 0).
func AsGiven() View { return View{Kind: Own, Root: "/"} }

// Detect finds the view for a process whose /proc is procRoot ("/proc")
// and that is (hostPID) or is not in the host's PID namespace: its own
// when its root is the node's init's (or kthreadd's, when init's cannot be
// read), else the node's through that root.
func Detect(procRoot string, hostPID bool) (View, error) {
	self, err := nsOf(procRoot + "/self/ns/mnt")
	if err != nil {
		return View{}, err
	}
	v := View{Kind: Own, MntNS: self, Self: self, Root: "/"}
	if !hostPID {
		v.Kind = Blind // Visibility says why: no hostPID
		return v, nil
	}
	var own unix.Stat_t
	if err := unix.Stat("/", &own); err != nil {
		return View{}, fmt.Errorf("stat /: %w", err)
	}
	// The node's init's root; where it cannot be read (an init protected
	// even from root), kthreadd's: kernel threads keep the node's root
	// and the initial mount namespace.
	var reasons []string
	for _, pid := range []string{"1", "2"} {
		root := procRoot + "/" + pid + "/root"
		var node unix.Stat_t
		if err := unix.Stat(root+"/", &node); err != nil {
			reasons = append(reasons, root+": "+err.Error())
			continue
		}
		if own.Dev == node.Dev && own.Ino == node.Ino {
			return v, nil // the node's root: its own namespace, the node's files
		}
		ns, err := nsOf(procRoot + "/" + pid + "/ns/mnt")
		if err != nil {
			reasons = append(reasons, err.Error())
			continue
		}
		v.Kind, v.MntNS, v.Root = NodeRoot, ns, root
		return v, nil
	}
	v.Kind, v.Reason = Blind, "the node's root cannot be read ("+strings.Join(reasons, "; ")+"; CAP_SYS_PTRACE needed)"
	return v, nil
}

// Line says, in one line, which view was used.
func (v View) Line() string {
	switch v.Kind {
	case NodeRoot:
		return "view: the node's mount namespace " + nsName(v.MntNS) + " through " + v.Root + " (mntleak runs in a container: " + nsName(v.Self) + ", a root of its own)"
	case Blind:
		if v.Reason == "" {
			return "view: mntleak's own mount namespace " + nsName(v.Self) + " only"
		}
		return "view: mntleak's own mount namespace " + nsName(v.Self) + " only: " + v.Reason
	}
	return "view: mntleak's own mount namespace " + nsName(v.Self) + " on the node's root"
}

func nsName(ino uint32) string { return "mnt:[" + strconv.FormatUint(uint64(ino), 10) + "]" }

// nsOf is the inode of a namespace link.
func nsOf(link string) (uint32, error) {
	var st unix.Stat_t
	if err := unix.Stat(link, &st); err != nil {
		return 0, fmt.Errorf("stat %s: %w", link, err)
	}
	return uint32(st.Ino), nil
}

// open opens path (absolute) in the view: under Root with openat2
// RESOLVE_IN_ROOT (symbolic links and ".." resolved as in the node's tree,
// no magic links), or as given in the own view.
func (v View) open(path string, flags int) (*os.File, error) {
	if v.Kind != NodeRoot {
		fd, err := unix.Open(path, flags|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil, &os.PathError{Op: "open", Path: path, Err: err}
		}
		return os.NewFile(uintptr(fd), path), nil
	}
	root, err := unix.Open(v.Root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: v.Root, Err: err}
	}
	defer unix.Close(root)
	fd, err := unix.Openat2(root, path, &unix.OpenHow{
		Flags:   uint64(flags | unix.O_CLOEXEC),
		Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: v.Root + path, Err: err}
	}
	return os.NewFile(uintptr(fd), v.Root+path), nil
}

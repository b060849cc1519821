package podmounts

import (
	"errors"
	"fmt"
	"os"
	"path"
	"slices"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/correlate"
	"github.com/mntleak/mntleak/nodeview"
	"github.com/mntleak/mntleak/procfs"
)

// Gather reads the live node for Find: every mount namespace's table (one
// process of each), the pod's processes (by the pod UID their cgroup
// carries) and their network namespaces, and the volume directories
// under <root>/pods/UID/ as the view sees the node's files. runtimeIDs
// are the containers the runtime lists for the pod (nil without one).
// Problems are the things that could not be read, each naming its object.
func Gather(host procfs.Host, view nodeview.View, root, uid string, runtimeIDs []string) (Input, []string, error) {
	in := Input{KubeletRoot: root, UID: uid, NodeNS: view.MntNS, Tables: map[uint32][]*procfs.Mount{}}
	procs, err := host.Processes()
	if err != nil {
		return in, nil, fmt.Errorf("list processes: %w", err)
	}
	var problems []string
	ids := slices.Clone(runtimeIDs)
	for _, p := range procs {
		if _, done := in.Tables[p.MntNS]; !done {
			if ns, mounts, err := host.Mountinfo(p.PID); err == nil {
				in.Tables[ns] = mounts
			}
		}
		if correlate.PodUID(p.Cgroup) != uid {
			continue
		}
		if id := correlate.ContainerID(p.Cgroup); id != "" && !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
		link, err := os.Readlink("/proc/" + strconv.Itoa(p.PID) + "/ns/net")
		if err == nil && !slices.Contains(in.NetNS, link) {
			in.NetNS = append(in.NetNS, link)
		}
	}
	if _, ok := in.Tables[view.MntNS]; !ok {
		problems = append(problems, "the node's mount table mnt:["+strconv.FormatUint(uint64(view.MntNS), 10)+"] could not be read")
	}
	in.ContainerIDs = ids
	dirs, err := volumeDirs(view, path.Join(root, "pods", uid))
	if err != nil {
		problems = append(problems, err.Error())
	}
	in.VolumeDirs = dirs
	return in, problems, nil
}

// volumeDirs lists podDir's volumes/PLUGIN/NAME and
// volume-subpaths/NAME/CONTAINER/N, as the view sees them; none when the
// pod's directory is gone (a pod torn down).
func volumeDirs(view nodeview.View, podDir string) ([]string, error) {
	var out []string
	for _, sub := range []struct {
		dir   string
		depth int
	}{{"volumes", 2}, {"volume-subpaths", 3}} {
		found, err := walk(view, path.Join(podDir, sub.dir), sub.depth)
		if err != nil {
			return out, err
		}
		out = append(out, found...)
	}
	return out, nil
}

// walk lists the paths depth levels below dir (none when dir does not
// exist).
func walk(view nodeview.View, dir string, depth int) ([]string, error) {
	names, err := view.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, unix.ENOTDIR) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", dir, err)
	}
	var out []string
	for _, n := range names {
		p := path.Join(dir, n)
		if depth == 1 {
			out = append(out, p)
			continue
		}
		below, err := walk(view, p, depth-1)
		if err != nil {
			return out, err
		}
		out = append(out, below...)
	}
	return out, nil
}

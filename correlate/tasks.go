package correlate

import (
	"cmp"
	"slices"

	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/procfs"
)

// The tracer's task map (Options.Tasks) in place of a listing of /proc:
// where the map is complete, the processes in a namespace are the tasks it
// has there, read alone (procfs.ProcessReader).

// liveTasks is the tracer's tasks where they may stand in for a process
// list: the daemon's correlator, reading /proc itself (not a replay, not
// the Recorder: a recording holds full lists, and a replay asks what it
// answered), with a task list that is complete.
func (c *Correlator) liveTasks() ([]event.Task, bool) {
	if _, ok := c.proc.(procfs.ProcessLister); !ok || c.opts.Tasks == nil {
		return nil, false
	}
	tasks, complete, err := c.opts.Tasks()
	if err != nil || !complete {
		return nil, false
	}
	return tasks, true
}

// placeByTasks settles the namespaces of retry (none of the processes the
// lineage knows in them is left: runc's child made the container's and
// exited, and its init was born inside unseen) by the tracer's tasks
// instead of a process list, each as a list would: the processes the
// tasks have there now are read and become its members, and its table is
// read through them; one born under tracing that has no task left has no
// process left, and is retired. It returns those it could not settle
// (born before tracing: its processes need not be in the map; or its
// tasks gone, moved or unreadable by the time they were read): a process
// list must.
func (c *Correlator) placeByTasks(retry []*Namespace) []*Namespace {
	reader, ok := c.proc.(procfs.ProcessReader)
	if !ok {
		return retry
	}
	tasks, ok := c.liveTasks()
	if !ok {
		return retry
	}
	// The processes of the tasks in each namespace of retry, once each
	// (a process's threads are tasks too): the map holds every task born
	// since tracing began, most of them in namespaces not asked about.
	in := map[uint32][]int{}
	for _, n := range retry {
		in[n.Ino] = nil
	}
	type key struct {
		ns  uint32
		pid int
	}
	seen := map[key]bool{}
	for _, t := range tasks {
		if pids, ok := in[t.MntNS]; ok && !seen[key{t.MntNS, t.PID}] {
			seen[key{t.MntNS, t.PID}] = true
			in[t.MntNS] = append(pids, t.PID)
		}
	}
	var rest []*Namespace
	for _, n := range retry {
		pids := in[n.Ino]
		if len(pids) == 0 {
			if !n.traced || n.pinned {
				rest = append(rest, n)
				continue
			}
			c.lineage.retire(n, n.deathTime(c.now))
			if n.LastTable == nil {
				n.LastTable = c.ledger.Forget(n.Ino)
			}
			continue
		}
		slices.SortFunc(pids, cmp.Compare[int])
		procs, err := reader.ReadProcesses(pids)
		if err != nil || !c.placeIn(n, procs) {
			rest = append(rest, n)
		}
	}
	return rest
}

// placeIn makes procs (read for the tasks in n) n's members and reads its
// table through them, unless the kernel's birth id says the inode is
// another namespace's now (n died unseen; a process list would retire it
// the same way: retireReplaced), or none of them is in n by now. It
// reports whether n's table was read.
func (c *Correlator) placeIn(n *Namespace, procs []procfs.Process) bool {
	var here, mains []procfs.Process
	for _, p := range procs {
		if p.MntNS == n.Ino {
			mains = append(mains, p)
		}
		if p.MntNS == n.Ino || slices.ContainsFunc(p.Threads, func(th procfs.Thread) bool { return th.MntNS == n.Ino }) {
			here = append(here, p)
		}
	}
	if len(here) == 0 {
		return false
	}
	c.retireReplaced(mains)
	if c.lineage.Get(n.Ino) != n {
		return false
	}
	c.lineage.place(n, here, c.now)
	return c.readTable(n) == nil
}

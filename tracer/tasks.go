package tracer

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"

	"github.com/mntleak/mntleak/event"
)

// taskBatch is how many of task_mntns_map's entries one lookup reads.
const taskBatch = 4096

// tasksComplete is the share of task_mntns_map's bound up to which its
// entries are taken to be every task born under tracing: the map is an LRU
// one, and nearer its bound it may have evicted some.
const tasksComplete = 0.9

// Tasks lists every live thread born since the programs were attached, or
// that moved between mount namespaces, with its process and its mount
// namespace now (task_mntns_map, kept by the programs at every fork,
// unshare, setns and exit), in a few batched reads of the map instead of a
// listing of /proc. complete is false when the map holds so many, or ever
// held so many since tracing began, that it may have evicted some (its
// LRU bound): the caller then lists /proc.
func (t *Tracer) Tasks() (tasks []event.Task, complete bool, err error) {
	m := t.objs.mount.TaskMntnsMap
	keys := make([]uint32, taskBatch)
	vals := make([]nsprocTaskNs, taskBatch)
	var cursor ebpf.MapBatchCursor
	for {
		n, err := m.BatchLookup(&cursor, keys, vals, nil)
		for i := range n {
			tasks = append(tasks, event.Task{TID: int(keys[i]), PID: int(vals[i].Tgid), MntNS: vals[i].Mntns})
		}
		if errors.Is(err, ebpf.ErrKeyNotExist) {
			break
		}
		if err != nil {
			return nil, false, fmt.Errorf("read map task_mntns_map: %w", err)
		}
	}
	return tasks, float64(len(tasks)) < tasksComplete*float64(m.MaxEntries()) && !t.tasksEverFull(), nil
}

// tasksEverFull reports whether the programs' count of task_mntns_map's
// entries ever reached tasksComplete of its bound since they were
// attached (tasks_full, nsproc.bpf.c): it may have evicted a task then,
// and a task it no longer has may live on. Where the flag cannot be read
// (a kernel before 5.5 maps no BPF array), it may have.
func (t *Tracer) tasksEverFull() bool {
	var full uint32
	if err := t.objs.nsproc.TasksFull.Get(&full); err != nil {
		return true
	}
	return full != 0
}

// CgroupChanges is how many times, since the programs were attached, a
// task moved into another cgroup or a cgroup was renamed (the cgroup
// tracepoints): while it stands still, no process's /proc/PID/cgroup
// has changed, but a new process's. ok is false where the count cannot
// be read without a syscall (a kernel before 5.5 maps no BPF array).
func (t *Tracer) CgroupChanges() (n uint64, ok bool) {
	if err := t.objs.nsproc.CgroupChanges.Get(&n); err != nil {
		return 0, false
	}
	return n, true
}

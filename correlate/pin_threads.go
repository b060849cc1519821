package correlate

import (
	"strings"

	"github.com/mntleak/mntleak/finding"
	"github.com/mntleak/mntleak/procfs"
)

// threadsByPID lists, by pid, the threads in namespaces of their own of
// the processes that pin something.
func threadsByPID(pins []procfs.Pin) map[int][]procfs.Thread {
	var out map[int][]procfs.Thread
	for _, p := range pins {
		if len(p.Threads) > 0 {
			if out == nil {
				out = map[int][]procfs.Thread{}
			}
			out[p.PID] = p.Threads
		}
	}
	return out
}

// throughThread is the namespace a pin's path is in. A process's own pin
// (an open file, a mapping: the whole process's, no thread's) is in its
// main thread's namespace, unless no holding there has the path and a
// holding in the namespace of one of its threads (the first by tid) does:
// a thread that joined a holder namespace (setns) opens files through
// that namespace's copy, the file stays open in the process's table, and
// /proc shows its path as the copy has it. Without this the pin was
// looked for in the main thread's namespace, which holds nothing there,
// and the finding did not name it.
func throughThread(r finding.PinRef, threads map[int][]procfs.Thread, matches []match) uint32 {
	if r.TID != 0 || len(threads[r.PID]) == 0 || holdsPath(matches, r.MntNS, r.Path) {
		return r.MntNS
	}
	for _, th := range threads[r.PID] {
		if holdsPath(matches, th.MntNS, r.Path) {
			return th.MntNS
		}
	}
	return r.MntNS
}

// holdsPath reports whether a holding in ns has the object mounted at a
// place path lies under.
func holdsPath(matches []match, ns uint32, path string) bool {
	for _, m := range matches {
		if m.ns.Ino == ns && m.where != "" && Under(strings.TrimSuffix(path, " (deleted)"), m.where) {
			return true
		}
	}
	return false
}

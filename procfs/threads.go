package procfs

import (
	"os"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/internal/nsthread"
)

// oneThread reports whether the process at dir has a single thread, told
// by one statx of its task directory: the kernel counts the process's
// threads into that directory's link count (2 + threads, proc_task_getattr).
// Most processes of a node have one thread, and that one is the process's
// own: no other thread can be in another mount namespace, and the task
// directory need not be listed nor any thread's link read. Any other
// answer (several threads, a count the kernel did not add, an error) is
// not one thread: the caller reads the threads.
func oneThread(dir string) bool {
	var stx unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, dir+"/task", 0, unix.STATX_NLINK, &stx); err != nil {
		return false
	}
	return stx.Mask&unix.STATX_NLINK != 0 && stx.Nlink == 3
}

// threadsElsewhereOf is threadsElsewhere for a process whose thread count
// is not known yet: nothing read but the count for a process of one thread.
func threadsElsewhereOf(dir string, main uint32, s *scratch) []Thread {
	if oneThread(dir) {
		return nil
	}
	return threadsElsewhere(dir, main, s)
}

// threadsElsewhere lists the threads of the process at dir that are in
// another mount namespace than main (its main thread's), but mntleak's
// own passing reader threads (nsthread.ThreadName); a thread gone
// meanwhile is skipped. Read only for a process of several threads.
func threadsElsewhere(dir string, main uint32, s *scratch) []Thread {
	f, err := os.Open(dir + "/task")
	if err != nil {
		return nil
	}
	names, err := f.Readdirnames(-1)
	f.Close()
	if err != nil {
		return nil
	}
	sort.Strings(names)
	var out []Thread
	for _, name := range names {
		tid, err := strconv.Atoi(name)
		if err != nil {
			continue
		}
		link, err := s.readlink(dir + "/task/" + name + "/ns/mnt")
		if err != nil {
			continue
		}
		ns, err := ParseNSLink(link)
		if err != nil || ns == main {
			continue
		}
		if comm, err := s.read(dir + "/task/" + name + "/comm"); err != nil || strings.TrimSpace(string(comm)) == nsthread.ThreadName {
			continue
		}
		out = append(out, Thread{TID: tid, MntNS: ns})
	}
	return out
}

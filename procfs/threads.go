package procfs

import (
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/mntleak/mntleak/internal/nsthread"
)

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

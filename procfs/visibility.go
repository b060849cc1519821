package procfs

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// initPIDNS is the inode of the initial PID namespace (PROC_PID_INIT_INO):
// the host's, which hostPID containers share.
const initPIDNS = 0xEFFFFFFC

// Visibility is how much of the node the caller can see through /proc:
// `mntleak why` and `mntleak audit` must not say "nothing holds it" when
// they could not look.
type Visibility struct {
	Processes           int      // processes listed
	UnreadableProcesses int      // whose mount namespace or mount table could not be read
	Unreadable          []string // those processes, as comm[pid]
	Namespaces          int      // mount namespaces seen
	UnreadableNS        int      // mount namespaces none of whose tables could be read
	MissingCaps         []string // capabilities /proc of other users' processes needs
	HostPIDNS           bool     // the caller is in the initial PID namespace (hostPID)
}

// Complete reports whether everything could be seen.
func (v Visibility) Complete() bool {
	return v.UnreadableProcesses == 0 && v.UnreadableNS == 0 && v.HostPIDNS
}

// Blind reports whether the caller cannot see the node at all: it lacks
// the capabilities /proc of other users' processes needs, or it is in a
// PID namespace of its own. A root caller with them that still meets an
// unreadable process (one the kernel protects even from root, such as a
// sandbox's own init) is not blind: the rest is seen, and the count said.
func (v Visibility) Blind() bool {
	return !v.HostPIDNS || (len(v.MissingCaps) > 0 && (v.UnreadableProcesses > 0 || v.UnreadableNS > 0))
}

// Text says what could not be seen, in one line ("" when complete).
func (v Visibility) Text() string {
	if v.Complete() {
		return ""
	}
	var parts []string
	if !v.HostPIDNS {
		parts = append(parts, "this process is not in the host's PID namespace (a container without hostPID): node processes and paths cannot be seen")
	}
	if v.UnreadableProcesses > 0 {
		s := strconv.Itoa(v.UnreadableProcesses) + " of " + strconv.Itoa(v.Processes) + " processes could not be read"
		if names := v.unreadableNames(); names != "" {
			s += ": " + names
			if !v.Blind() {
				s += ", which the kernel protects even from root"
			}
		}
		parts = append(parts, s)
	}
	if v.UnreadableNS > 0 {
		parts = append(parts, strconv.Itoa(v.UnreadableNS)+" of "+strconv.Itoa(v.Namespaces)+" mount namespaces could not be read")
	}
	if !v.Blind() {
		// Root with every capability it needs: what it could not read,
		// the kernel refuses everyone; said once, in a whole sentence.
		return "note: " + strings.Join(parts, "; ") + "; everything else was read"
	}
	s := "incomplete view: " + strings.Join(parts, "; ")
	if len(v.MissingCaps) > 0 {
		s += " (missing " + strings.Join(v.MissingCaps, ", ") + ": run as root)"
	}
	return s
}

// unreadableNames lists the first three unreadable processes, and how
// many more there are.
func (v Visibility) unreadableNames() string {
	const shown = 3
	if len(v.Unreadable) <= shown {
		return strings.Join(v.Unreadable, ", ")
	}
	return strings.Join(v.Unreadable[:shown], ", ") + " and " + strconv.Itoa(len(v.Unreadable)-shown) + " more"
}

// Linux capability numbers /proc reads of other processes need.
const (
	capDacReadSearch = 2
	capSysPtrace     = 19
)

// Access is what the caller may see of /proc before it reads any of it:
// whether it is in the host's PID namespace, and which capabilities that
// /proc of other users' processes needs it lacks. Counted fills in the
// rest from what was then read.
func (h Host) Access() Visibility {
	return Visibility{HostPIDNS: h.inInitPIDNS(), MissingCaps: missingCaps(h.root() + "/self/status")}
}

// Counted is v with what a snapshot read: the processes of its process
// list (the kernel's threads and the unreadable among them, named
// comm[pid]), the mount namespaces its processes are in (a kernel
// thread's, such as devtmpfs's own, holds nothing a user asks about and
// is not read), and among those the ones read says could not be read. It reads nothing of /proc
// but the unreadable processes' comm: why and audit count what the
// snapshot they answer from saw, not a second pass over every process.
func (h Host) Counted(v Visibility, l ProcessList, read func(ns uint32) bool) Visibility {
	v.Processes = len(l.Procs) + len(l.Kernel) + len(l.Unreadable)
	v.UnreadableProcesses = len(l.Unreadable)
	v.Unreadable = nil
	for _, pid := range l.Unreadable {
		v.Unreadable = append(v.Unreadable, h.commOf(pid))
	}
	seen := map[uint32]bool{}
	v.Namespaces, v.UnreadableNS = 0, 0
	for _, p := range l.Procs {
		if seen[p.MntNS] {
			continue
		}
		seen[p.MntNS] = true
		v.Namespaces++
		if !read(p.MntNS) {
			v.UnreadableNS++
		}
	}
	return v
}

// commOf names a process as comm[pid] (its comm is readable by anyone),
// or pid N when even that is refused or it is gone.
func (h Host) commOf(pid int) string {
	b, err := os.ReadFile(h.root() + "/" + strconv.Itoa(pid) + "/comm")
	if err != nil {
		return "pid " + strconv.Itoa(pid)
	}
	return strings.TrimSpace(string(b)) + "[" + strconv.Itoa(pid) + "]"
}

func (h Host) inInitPIDNS() bool {
	link, err := os.Readlink(h.root() + "/self/ns/pid")
	if err != nil {
		return false
	}
	ns, err := ParseNSLink(link)
	return err == nil && ns == initPIDNS
}

// missingCaps names the capabilities among CAP_SYS_PTRACE and
// CAP_DAC_READ_SEARCH that the caller's effective set lacks.
func missingCaps(status string) []string {
	f, err := os.Open(status)
	if err != nil {
		return nil
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		v, ok := strings.CutPrefix(sc.Text(), "CapEff:")
		if !ok {
			continue
		}
		caps, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
		if err != nil {
			return nil
		}
		var lack []string
		if caps&(1<<capSysPtrace) == 0 {
			lack = append(lack, "CAP_SYS_PTRACE")
		}
		if caps&(1<<capDacReadSearch) == 0 {
			lack = append(lack, "CAP_DAC_READ_SEARCH")
		}
		return lack
	}
	return nil
}

package qemu

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// labKernel is one kernel of the lab (lab.sh's LAB_KERNEL) and what its
// guest must show: the release uname gives, the lines `mntleak version`
// prints (what the kernel offers and what mntleak chose), and the
// kernel's own answers where the lab's kernels differ (kernel-probe.sh).
type labKernel struct {
	name    string
	release string   // uname -r's prefix
	version []string // lines mntleak version prints
	probe   []string // lines guest/kernel-probe.sh prints, all of them
}

// allKernels are the lab's kernels, Debian's cloud kernels of bullseye,
// bookworm and trixie (docs/lab.md: what differs between them).
var allKernels = []labKernel{
	{name: "5.10", release: "5.10.",
		version: []string{"btf:         true", "ring buffer: yes", "buffer:      ringbuf (what --buffer=auto uses)", "path walk:   bounded loop (the kernel has no bpf_loop)",
			"memlock:     raised to unlimited (the kernel counts BPF memory against RLIMIT_MEMLOCK)",
			"syscalls:    9 of 10 present (missing: mount_setattr)", "disabled:    mount_setattr events (optional syscalls missing)",
			"kprobes:     yes (not used)", "fentry:      yes (not used)"},
		probe: []string{"rmdir-detaches-foreign: yes", "open_tree: yes (EFAULT)", "fsopen: yes (EFAULT)",
			"mount_setattr: no (ENOSYS)", "statmount: no (ENOSYS)", "listmount: no (ENOSYS)", "ns-get-mntns-id: no (ENOTTY)"}},
	{name: "6.1", release: "6.1.",
		version: []string{"btf:         true", "ring buffer: yes", "buffer:      ringbuf (what --buffer=auto uses)", "path walk:   bpf_loop",
			"syscalls:    10 of 10 present", "kprobes:     yes (not used)", "fentry:      yes (not used)",
			"hooks:       trampoline (the kernel attaches fexit programs to its syscall functions) (what --hooks=auto uses)"},
		probe: []string{"rmdir-detaches-foreign: yes", "open_tree: yes (EFAULT)", "fsopen: yes (EFAULT)",
			"mount_setattr: yes (EINVAL)", "statmount: no (ENOSYS)", "listmount: no (ENOSYS)", "ns-get-mntns-id: no (ENOTTY)"}},
	{name: "6.12", release: "6.12.",
		version: []string{"btf:         true", "ring buffer: yes", "buffer:      ringbuf (what --buffer=auto uses)", "path walk:   bpf_loop",
			"syscalls:    10 of 10 present", "kprobes:     yes (not used)",
			// Debian's 6.12 cloud kernel has no vfs_statfs in its BTF, but
			// attaches fexit programs to its syscall functions.
			"fentry:      no (no vfs_statfs in the kernel BTF) (not used)",
			"hooks:       trampoline (the kernel attaches fexit programs to its syscall functions) (what --hooks=auto uses)"},
		probe: []string{"rmdir-detaches-foreign: yes", "open_tree: yes (EFAULT)", "fsopen: yes (EFAULT)",
			"mount_setattr: yes (EINVAL)", "statmount: yes (EFAULT)", "listmount: yes (EFAULT)", "ns-get-mntns-id: yes"}},
}

// labKernels are the x86 kernels this run boots: LAB_KERNELS (a comma
// list of 5.10, 6.1, 6.12 and arm64, or "all"), else what make test
// boots: 6.1 and one other, 5.10 on even days of the year (UTC) and 6.12
// on odd ones, so CI covers both every two days within its time.
func labKernels(t *testing.T) []labKernel {
	t.Helper()
	var out []labKernel
	for _, name := range labSelection(t) {
		if k, ok := kernelNamed(name); ok {
			out = append(out, k)
		}
	}
	return out
}

// labSelection is the names LAB_KERNELS selects, checked.
func labSelection(t *testing.T) []string {
	t.Helper()
	sel := os.Getenv("LAB_KERNELS")
	switch sel {
	case "all":
		return []string{"5.10", "6.1", "6.12", "arm64"}
	case "":
		other := "5.10"
		if time.Now().UTC().YearDay()%2 == 1 {
			other = "6.12"
		}
		t.Logf("LAB_KERNELS unset: 6.1 and, today, %s (make lab runs all)", other)
		return []string{"6.1", other}
	}
	names := strings.Split(sel, ",")
	for _, name := range names {
		if _, ok := kernelNamed(name); !ok && name != "arm64" {
			t.Fatalf("LAB_KERNELS: no kernel %q in the lab (5.10, 6.1, 6.12, arm64)", name)
		}
	}
	return names
}

// labSelected tells whether LAB_KERNELS selects name.
func labSelected(t *testing.T, name string) bool {
	t.Helper()
	for _, n := range labSelection(t) {
		if n == name {
			return true
		}
	}
	return false
}

func kernelNamed(name string) (labKernel, bool) {
	for _, k := range allKernels {
		if k.name == name {
			return k, true
		}
	}
	return labKernel{}, false
}

// check asserts the guest's release, what mntleak version printed, and
// the kernel probe's answers, every line of them.
func (k labKernel) check(t *testing.T, release, version, probe string) {
	t.Helper()
	if !strings.HasPrefix(release, k.release) {
		t.Errorf("guest kernel %s, want %s*", release, k.release)
	}
	lines := strings.Split(version, "\n")
	for _, w := range k.version {
		if !hasLine(lines, w) {
			t.Errorf("mntleak version lacks %q", w)
		}
	}
	if got, want := strings.Split(probe, "\n"), k.probe; strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("kernel probe:\n%s\nwant:\n%s", probe, strings.Join(want, "\n"))
	}
}

func hasLine(lines []string, w string) bool {
	for _, l := range lines {
		if l == w {
			return true
		}
	}
	return false
}

// scenarioBuffer is the buffer the scenario's daemon must use: perf when
// its script's lab-daemon-args line forces it, else the ring buffer
// (every kernel of the lab has one).
func scenarioBuffer(t *testing.T, scenario string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("guest", "scenarios", scenario+".sh"))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if args, ok := strings.CutPrefix(l, "# lab-daemon-args: "); ok && strings.Contains(" "+args+" ", " --buffer=perf ") {
			return "perf"
		}
	}
	return "ringbuf"
}

// checkBuffer asserts the daemon the scenario ran under attached its
// programs with the buffer wanted (its "BPF programs attached" line).
func checkBuffer(t *testing.T, attached, want string) {
	t.Helper()
	var line struct {
		Buffer string `json:"buffer"`
	}
	if err := json.Unmarshal([]byte(attached), &line); err != nil {
		t.Fatalf("the daemon's attach line %q: %v", attached, err)
	}
	if line.Buffer != want {
		t.Errorf("the daemon attached with buffer %q, want %q: %s", line.Buffer, want, attached)
	}
}

// autoHooks is the path `mntleak version` says auto takes: its hooks line
// starts with it.
func autoHooks(t *testing.T, version string) string {
	t.Helper()
	for _, l := range strings.Split(version, "\n") {
		if rest, ok := strings.CutPrefix(l, "hooks:"); ok {
			if f := strings.Fields(rest); len(f) > 0 {
				return f[0]
			}
		}
	}
	t.Fatalf("mntleak version has no hooks line:\n%s", version)
	return ""
}

// checkHooks checks the path in the daemon's attach line.
func checkHooks(t *testing.T, attached, want string) {
	t.Helper()
	var line struct {
		Hooks string `json:"hooks"`
	}
	if err := json.Unmarshal([]byte(attached), &line); err != nil {
		t.Fatalf("the daemon's attach line %q: %v", attached, err)
	}
	if line.Hooks != want {
		t.Errorf("the daemon attached on %q hooks, want %q: %s", line.Hooks, want, attached)
	}
}

// sameFindings compares one scenario's findings on the two paths: the
// same kinds, causes, calls and headlines, in the same order, with the
// numbers (pids, namespace inodes, mount ids, times: the two passes are
// two runs) masked.
func sameFindings(t *testing.T, scenario string, trampoline, tracepoint []*journalEntry) {
	t.Helper()
	shape := func(es []*journalEntry) []string {
		var out []string
		for _, e := range es {
			out = append(out, e.Cause+": "+digits.ReplaceAllString(e.Message, "#"))
		}
		return out
	}
	a, b := shape(trampoline), shape(tracepoint)
	if strings.Join(a, "\n") != strings.Join(b, "\n") {
		t.Errorf("%s: the paths found differently:\ntrampoline:\n%s\ntracepoint:\n%s", scenario, strings.Join(a, "\n"), strings.Join(b, "\n"))
	} else {
		t.Logf("%s: the same %d findings on both paths", scenario, len(a))
	}
}

var digits = regexp.MustCompile(`[0-9]+`)

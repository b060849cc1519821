package tracer

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// classifyGroups reads classify in bpf/failure.bpf.c: the syscall names
// of its case labels, by the arg_kind they return.
func classifyGroups(t *testing.T) map[string][]string {
	t.Helper()
	src, err := os.ReadFile("../bpf/failure.bpf.c")
	if err != nil {
		t.Fatal(err)
	}
	body := string(src)
	start := strings.Index(body, "classify(long nr)")
	end := strings.Index(body, "return ARG_NONE;")
	if start < 0 || end < start {
		t.Fatal("bpf/failure.bpf.c: no classify")
	}
	groups := map[string][]string{}
	var cur []string
	re := regexp.MustCompile(`case NR_(\w+):|return (ARG_\w+);`)
	for _, m := range re.FindAllStringSubmatch(body[start:end], -1) {
		if m[1] != "" {
			cur = append(cur, m[1])
			continue
		}
		groups[m[2]] = append(groups[m[2]], cur...)
		cur = nil
	}
	return groups
}

// TestFailureSyscallsMatchClassify: the trampoline path hooks the
// catch-all on exactly the syscalls it classifies (a path, a dirfd and
// path, an fd) and the objectless ones, which classify must not own; and the syscalls it leaves to their own programs are
// exactly the handlers' (the tracepoint path's dispatcher slots).
func TestFailureSyscallsMatchClassify(t *testing.T) {
	g := classifyGroups(t)
	var want []string
	for _, k := range []string{"ARG_PATH0", "ARG_DIRFD0_PATH1", "ARG_FD0"} {
		want = append(want, g[k]...)
	}
	want = append(want, objectlessFailureSyscalls...)
	got := slices.Clone(failureSyscalls)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("failureSyscalls %v\nclassify         %v", got, want)
	}
	for _, n := range objectlessFailureSyscalls {
		for _, k := range []string{"ARG_PATH0", "ARG_DIRFD0_PATH1", "ARG_FD0", "ARG_OWNED"} {
			if slices.Contains(g[k], n) {
				t.Errorf("objectless %s is classified %s", n, k)
			}
		}
	}
	owned := slices.Clone(g["ARG_OWNED"])
	var handled []string
	for _, h := range (&objects{}).handlers() {
		if h.syscall != "" {
			handled = append(handled, h.syscall)
		}
	}
	// umount2's kernel function is sys_umount.
	for i, n := range owned {
		if n == "umount2" {
			owned[i] = "umount"
		}
	}
	slices.Sort(owned)
	slices.Sort(handled)
	if !slices.Equal(owned, handled) {
		t.Errorf("classify's ARG_OWNED %v, handlers %v", owned, handled)
	}
}

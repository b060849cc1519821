package tracer

import (
	"bytes"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/cilium/ebpf/btf"
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

// kernelBTFWith is a kernel BTF holding one function per name, twice for
// the names in twice.
func kernelBTFWith(t *testing.T, names []string, twice ...string) *btf.Spec {
	t.Helper()
	proto := &btf.FuncProto{Return: &btf.Int{Name: "long", Size: 8, Encoding: btf.Signed}}
	var types []btf.Type
	for _, n := range names {
		types = append(types, &btf.Func{Name: syscallFunc(n), Type: proto, Linkage: btf.GlobalFunc})
		if slices.Contains(twice, n) {
			types = append(types, &btf.Func{Name: syscallFunc(n), Type: proto, Linkage: btf.StaticFunc})
		}
	}
	b, err := btf.NewBuilder(types, nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := b.Marshal(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := btf.LoadSpecFromReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// TestPresentFailureSyscalls: the catch-all hooks the syscalls the kernel
// has; one whose name two functions share in the kernel BTF (Debian's 6.1
// has two of acct, flock, finit_module and delete_module), which an fexit
// program cannot name, is left out and reported, not an error.
func TestPresentFailureSyscalls(t *testing.T) {
	spec := kernelBTFWith(t, []string{"rmdir", "acct", "unlinkat"}, "acct")
	present, ambiguous, err := presentFailureSyscalls(spec)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(present, []string{"rmdir", "unlinkat"}) || !slices.Equal(ambiguous, []string{"acct"}) {
		t.Errorf("present %v, ambiguous %v; want [rmdir unlinkat], [acct]", present, ambiguous)
	}
	if _, _, err := presentFailureSyscalls(kernelBTFWith(t, []string{"mount"})); err == nil {
		t.Error("no failure syscall in the BTF: no error")
	}
}

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

// TestEBUSYSyscallsAreClassified: every syscall the trampoline path
// hooks the catch-all on is one the catch-all classifies (a path, a dirfd
// and path, an fd), or an objectless one, which classify must not own;
// and the syscalls classify leaves to their own programs are exactly the
// handlers' (the tracepoint path's dispatcher slots).
func TestEBUSYSyscallsAreClassified(t *testing.T) {
	g := classifyGroups(t)
	var classified []string
	for _, k := range []string{"ARG_PATH0", "ARG_DIRFD0_PATH1", "ARG_FD0"} {
		classified = append(classified, g[k]...)
	}
	for _, n := range ebusySyscalls {
		if !slices.Contains(classified, n) && !slices.Contains(objectlessFailureSyscalls, n) {
			t.Errorf("the catch-all is hooked on %s, which classify does not read and which is not objectless", n)
		}
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
// has two of delete_module, and of acct, flock and finit_module, which it
// does not hook), which an fexit program cannot name, is left out and
// reported, not an error.
func TestPresentFailureSyscalls(t *testing.T) {
	spec := kernelBTFWith(t, []string{"rmdir", "delete_module", "unlinkat"}, "delete_module")
	present, ambiguous, err := presentFailureSyscalls(spec)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(present, []string{"rmdir", "unlinkat"}) || !slices.Equal(ambiguous, []string{"delete_module"}) {
		t.Errorf("present %v, ambiguous %v; want [rmdir unlinkat], [delete_module]", present, ambiguous)
	}
	if _, _, err := presentFailureSyscalls(kernelBTFWith(t, []string{"mount"})); err == nil {
		t.Error("no failure syscall in the BTF: no error")
	}
}

package tracer

import (
	"bufio"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/mntleak/mntleak/event"
)

// archBlock returns the NR_ macros of bpf/syscall_nr.h for target.
func archBlock(t *testing.T, target string) map[string]int32 {
	t.Helper()
	f, err := os.Open("../bpf/syscall_nr.h")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]int32{}
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "#if ") || strings.HasPrefix(line, "#elif "):
			in = strings.Contains(line, "defined("+target+")")
		case strings.HasPrefix(line, "#else") || strings.HasPrefix(line, "#endif"):
			in = false
		case in && strings.HasPrefix(line, "#define NR_"):
			f := strings.Fields(line)
			nr, err := strconv.Atoi(f[2])
			if err != nil {
				t.Fatalf("syscall_nr.h: %q: %v", line, err)
			}
			out[strings.TrimPrefix(f[1], "NR_")] = int32(nr)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestSyscallTablesAgree: the numbers the BPF programs are built with
// (bpf/syscall_nr.h, for this arch), the names events get (package event)
// and the slots the tracer puts each handler in (golang.org/x/sys/unix) are
// one table.
func TestSyscallTablesAgree(t *testing.T) {
	target := map[string]string{"amd64": "__TARGET_ARCH_x86", "arm64": "__TARGET_ARCH_arm64"}[runtime.GOARCH]
	if target == "" {
		t.Fatalf("no BPF objects for %s", runtime.GOARCH)
	}
	nr := archBlock(t, target)
	if len(nr) < 250 {
		t.Fatalf("syscall_nr.h has %d syscalls for %s", len(nr), target)
	}
	for name, n := range nr {
		if got := event.SyscallName(n); got != name {
			t.Errorf("NR_%s is %d in syscall_nr.h, but event names %d %q", name, n, n, got)
		}
	}
	for _, h := range (&objects{}).handlers() {
		if h.slot == slotFailure {
			continue
		}
		name := h.event
		if name == "umount" {
			name = "umount2"
		}
		if n, ok := nr[name]; !ok || uint32(n) != h.slot {
			t.Errorf("handler %s in slot %d, syscall_nr.h has NR_%s = %d (%v)", h.event, h.slot, name, n, ok)
		}
		if h.slot >= slotFailure {
			t.Errorf("handler %s slot %d collides with the catch-all %d", h.event, h.slot, slotFailure)
		}
	}
	// The two arches differ where they must: arm64 has no rmdir(2).
	if arm := archBlock(t, "__TARGET_ARCH_arm64"); arm["mount"] != 40 || arm["rmdir"] != 0 {
		t.Errorf("arm64 table: mount %d (want 40), rmdir %d (want none)", arm["mount"], arm["rmdir"])
	}
}

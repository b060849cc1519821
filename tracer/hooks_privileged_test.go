package tracer

import (
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/cilium/ebpf/link"
	"go.uber.org/zap/zaptest"

	"github.com/mntleak/mntleak/e2e/testkit/privtest"
	"github.com/mntleak/mntleak/event"
)

// TestOnlySysExitHooked: the tracer attaches exactly three programs, each
// a raw tracepoint link (tp_btf is one too): one on sys_exit, the only
// per-syscall hook, and the two sched ones. Nothing goes to sys_enter, and
// no perf event is opened for a syscalls:* tracepoint (each would register
// the kernel's perf probe on every syscall's entry or exit): with the ring
// buffer the process gains no perf event fd at all. Every syscall handler
// is in the dispatcher's prog array instead. (The tracepoint path, forced:
// TestTrampolineHooks is the other one.)
func TestOnlySysExitHooked(t *testing.T) {
	privtest.Require(t)
	perfBefore := perfEventFDs(t)
	tr, err := New(Config{Sink: func(*event.Event) {}, Buffer: BufferRingbuf, Hooks: HooksTracepoint}, zaptest.NewLogger(t))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { tr.Close() })

	var names []string
	for _, l := range tr.links {
		info, err := l.Info()
		if err != nil {
			t.Fatalf("link info: %v", err)
		}
		rt := info.RawTracepoint()
		if info.Type != link.RawTracepointType || rt == nil {
			t.Errorf("link %d is a %v link, want a raw tracepoint", info.ID, info.Type)
			continue
		}
		names = append(names, rt.Name)
	}
	sort.Strings(names)
	if got, want := strings.Join(names, " "), "cgroup_attach_task cgroup_rename cgroup_transfer_tasks sched_process_exit sched_process_fork sys_exit"; got != want {
		t.Errorf("attached to %q, want %q", got, want)
	}
	if after := perfEventFDs(t); after != perfBefore {
		t.Errorf("%d perf event fds after New, %d before", after, perfBefore)
	}

	// Every handler is in its slot, the failure catch-all included.
	for _, h := range tr.objs.handlers() {
		var id uint32
		if err := tr.objs.mount.Handlers.Lookup(h.slot, &id); err != nil {
			t.Errorf("%s handler: slot %d: %v", h.event, h.slot, err)
		}
	}
}

// perfEventFDs counts this process's perf event file descriptors.
func perfEventFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		if dst, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && dst == "anon_inode:[perf_event]" {
			n++
		}
	}
	return n
}

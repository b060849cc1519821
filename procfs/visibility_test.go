package procfs

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestCountedFromTheList: why and audit count what they could not see from
// the process list and the tables their snapshot read, not from a second
// pass over /proc: every listed process (the kernel's threads and the
// unreadable among them), an unreadable one named comm[pid], the
// namespaces of the processes (not a kernel thread's own, which no one
// reads), and among them the ones whose table was not read.
func TestCountedFromTheList(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "41"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "41", "comm"), []byte("sandbox-init\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	l := ProcessList{
		Procs:      []Process{{PID: 1, MntNS: 10}, {PID: 7, MntNS: 10}, {PID: 8, MntNS: 20}, {PID: 9, MntNS: 30}},
		Kernel:     []Process{{PID: 2, MntNS: 10}, {PID: 30, MntNS: 99}},
		Unreadable: []int{41, 42},
	}
	access := Visibility{HostPIDNS: true, MissingCaps: []string{"CAP_SYS_PTRACE"}}
	got := Host{Root: root}.Counted(access, l, func(ns uint32) bool { return ns != 20 })
	want := Visibility{Processes: 8, UnreadableProcesses: 2, Unreadable: []string{"sandbox-init[41]", "pid 42"},
		Namespaces: 3, UnreadableNS: 1, MissingCaps: []string{"CAP_SYS_PTRACE"}, HostPIDNS: true}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Counted:\n got %+v\nwant %+v", got, want)
	}
	all := Host{Root: root}.Counted(access, ProcessList{Procs: l.Procs}, func(uint32) bool { return true })
	if !all.Complete() || all.Processes != 4 || all.Namespaces != 3 {
		t.Errorf("every table read, no process unreadable: %+v, want complete, 4 processes in 3 namespaces", all)
	}
}

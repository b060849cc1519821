package correlate_test

import (
	"fmt"
	"io/fs"
	"strings"
	"testing"

	"github.com/mntleak/mntleak/correlate"
	"github.com/mntleak/mntleak/finding"
	"github.com/mntleak/mntleak/procfs"
)

// vanishing is a /proc whose dead processes are still in the process list
// (they exited after it was read) but whose files are gone: mountinfo and
// command fail when asked for.
type vanishing struct {
	*fakeProc
	dead map[int]bool
}

func (v *vanishing) Mountinfo(pid int) (uint32, []*procfs.Mount, error) {
	if v.dead[pid] {
		return 0, nil, gone(pid, "mountinfo")
	}
	return v.fakeProc.Mountinfo(pid)
}

func (v *vanishing) Command(pid int) (procfs.Command, error) {
	if v.dead[pid] {
		return procfs.Command{}, gone(pid, "cmdline")
	}
	return v.fakeProc.Command(pid)
}

// TestHolderExitsMidCorrelation: the holder is listed, then exits before
// its mount table or command is read. The finding still comes, from the
// table read before, and says what it could not read.
func TestHolderExitsMidCorrelation(t *testing.T) {
	tests := []struct {
		name    string
		vanish  []int
		missing string // in the finding's Missing, "" for none
	}{
		{"the only member of the holder namespace", []int{300}, "mount table of mnt:[20]"},
		{"one of two members: the other is read", []int{300}, ""},
		{"nobody", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t, []procfs.Process{proc(1, "systemd", hostNS, "/init.scope")}, map[uint32]string{hostNS: hostTable})
			v := &vanishing{fakeProc: w.proc, dead: map[int]bool{}}
			w.c = correlate.New(v, correlate.Options{LeakSettle: -1}, func(f *finding.Finding) { w.findings = append(w.findings, f) })
			if err := w.c.Start(); err != nil {
				t.Fatal(err)
			}
			w.proc.tables[20] = "70 69 254:0 / / rw master:1 - ext4 /dev/vda rw\n72 70 7:0 / /srv/vol rw - ext4 /dev/loop0 rw\n"
			w.send(unshareEv(300, "(ntpd)", hostNS, 20))
			w.proc.procs = append(w.proc.procs, proc(300, "ntpd", 20, "/system.slice/ntpd.service"))
			if strings.Contains(tt.name, "two members") {
				w.proc.procs = append(w.proc.procs, proc(310, "ntpd-worker", 20, "/system.slice/ntpd.service"))
				w.send(exitEv(311, "true", hostNS)) // a refresh that sees the second member
				w.send(failEv(312, "probe", hostNS, 84, "/nonexistent", 16))
			}
			w.send(exitEv(301, "true", 20)) // settles: ns 20's table is read
			for _, pid := range tt.vanish {
				v.dead[pid] = true
			}
			w.proc.tables[hostNS] = hostWithoutVol
			w.send(umountEv(400, "kubelet", hostNS, "/srv/vol", 0))
			f := w.only()
			if f.Kind != finding.KindLeak || len(f.Holders) == 0 || f.Holders[0].MntNS != 20 {
				t.Fatalf("want a leak held in mnt:[20]: %s", f.Line())
			}
			got := strings.Join(f.Missing, "; ")
			if tt.missing == "" && got != "" || !strings.Contains(got, tt.missing) {
				t.Errorf("missing = %q, want %q: %s", got, tt.missing, f.Line())
			}
		})
	}
}

// gone is the error reading a file of an exited process gives.
func gone(pid int, file string) error {
	return fmt.Errorf("open /proc/%d/%s: %w", pid, file, fs.ErrNotExist)
}

// counting is a /proc that counts process-list reads.
type counting struct {
	*fakeProc
	lists int
}

func (c *counting) Processes() ([]procfs.Process, error) {
	c.lists++
	return c.fakeProc.Processes()
}

// TestScanInterval: failures in a burst share one process list (exit
// events keep the members current), but a holder namespace none of whose
// known processes is left forces a new list, which names its survivor.
func TestScanInterval(t *testing.T) {
	w := newWorld(t, []procfs.Process{proc(1, "systemd", hostNS, "/init.scope")}, map[uint32]string{hostNS: hostTable})
	cp := &counting{fakeProc: w.proc}
	w.c = correlate.New(cp, correlate.Options{LeakSettle: -1}, func(f *finding.Finding) { w.findings = append(w.findings, f) })
	if err := w.c.Start(); err != nil {
		t.Fatal(err)
	}
	w.send(unshareEv(300, "(ntpd)", hostNS, 20))
	w.proc.procs = append(w.proc.procs, proc(300, "ntpd", 20, "/system.slice/ntpd.service"))
	w.proc.tables[20] = "70 69 254:0 / / rw master:1 - ext4 /dev/vda rw\n72 70 7:0 / /srv/vol rw - ext4 /dev/loop0 rw\n"
	w.send(exitEv(301, "true", 20)) // settles: ns 20's table is read
	start := cp.lists
	// 200ms apart, within one scan interval; five different calls, so
	// that none is folded into another as a retry.
	for i, nr := range []int32{257, 2, 85, 21, 4} {
		w.send(failEv(900+i, "mkfs.ext4", hostNS, nr, "/dev/loop0", 16))
	}
	if got := cp.lists - start; got > 1 {
		t.Errorf("%d process lists for a burst of 5 failures, want at most 1", got)
	}
	if len(w.findings) == 0 {
		t.Fatal("no finding")
	}
	// ntpd exits (an exit event), a child it forked (never seen) keeps the
	// namespace: the next failure must read the list to name it.
	w.proc.procs = []procfs.Process{proc(1, "systemd", hostNS, "/init.scope"), proc(310, "ntpd-child", 20, "/system.slice/ntpd.service")}
	w.send(exitEv(300, "ntpd", 20))
	before := cp.lists
	w.findings = nil
	w.send(failEv(950, "blockdev", hostNS, 16, "/dev/loop0", 16))
	if cp.lists == before {
		t.Error("no new process list although the holder's known processes are all gone")
	}
	f := w.only()
	named := false
	for _, h := range f.Holders {
		named = named || h.MntNS == 20 && len(h.Processes) > 0 && h.Processes[0].PID == 310
	}
	if !named {
		t.Errorf("the finding does not name the survivor ntpd-child[310] in mnt:[20]: %s", f.Line())
	}
}

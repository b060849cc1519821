package correlate_test

import (
	"fmt"
	"io/fs"
	"strings"
	"testing"

	"github.com/moby/sys/mountinfo"

	"github.com/mntleak/mntleak/correlate"
	"github.com/mntleak/mntleak/procfs"
)

// vanishing is a /proc whose listed processes exit right after the list is
// read: their mountinfo, command and pins are gone when asked for.
type vanishing struct {
	*fakeProc
	gone map[int]bool // pids to make vanish after the next Processes
	dead map[int]bool
}

func (v *vanishing) Processes() ([]procfs.Process, error) {
	procs, err := v.fakeProc.Processes()
	for pid := range v.gone {
		v.dead[pid] = true
	}
	return procs, err
}

func (v *vanishing) Mountinfo(pid int) (uint32, []*mountinfo.Info, error) {
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
			v := &vanishing{fakeProc: w.proc, gone: map[int]bool{}, dead: map[int]bool{}}
			w.c = correlate.New(v, correlate.Options{}, func(f *correlate.Finding) { w.findings = append(w.findings, f) })
			if err := w.c.Start(); err != nil {
				t.Fatal(err)
			}
			w.send(unshareEv(300, "(ntpd)", hostNS, 20))
			w.proc.procs = append(w.proc.procs, proc(300, "ntpd", 20, "/system.slice/ntpd.service"))
			if strings.Contains(tt.name, "two members") {
				w.proc.procs = append(w.proc.procs, proc(310, "ntpd-worker", 20, "/system.slice/ntpd.service"))
				w.send(exitEv(311, "true", hostNS)) // a refresh that sees the second member
				w.send(failEv(312, "probe", hostNS, 84, "/nonexistent", 16))
			}
			w.proc.tables[20] = "70 69 254:0 / / rw master:1 - ext4 /dev/vda rw\n72 70 7:0 / /srv/vol rw - ext4 /dev/loop0 rw\n"
			w.send(exitEv(301, "true", 20)) // settles: ns 20's table is read
			for _, pid := range tt.vanish {
				v.gone[pid] = true
			}
			w.proc.tables[hostNS] = hostWithoutVol
			w.send(umountEv(400, "kubelet", hostNS, "/srv/vol", 0))
			f := w.only()
			if f.Kind != correlate.KindLeak || len(f.Holders) == 0 || f.Holders[0].MntNS != 20 {
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

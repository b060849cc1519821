package procfs

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/mntleak/mntleak/event"
)

func TestParseStat(t *testing.T) {
	tests := []struct {
		name, stat string
		want       Process
		wantErr    bool
	}{
		{"plain", "42 (sleep) S 7 42 42 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 12345 0 0", Process{Comm: "sleep", PPID: 7, StartTime: 12345}, false},
		{"comm with spaces and parens", "43 (my (odd) proc) S 1 43 43 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 99 0 0", Process{Comm: "my (odd) proc", PPID: 1, StartTime: 99}, false},
		{"kernel thread", "2 (kthreadd) S 0 0 0 0 -1 2129984 0 0 0 0 0 0 0 0 20 0 1 0 5 0 0", Process{}, true},
		{"truncated", "44 (x) S 1 2 3", Process{}, true},
		{"no comm", "garbage", Process{}, true},
	}
	for _, tt := range tests {
		var p Process
		_, err := parseStat([]byte(tt.stat), &p)
		if (err != nil) != tt.wantErr {
			t.Errorf("%s: err %v", tt.name, err)
			continue
		}
		if !tt.wantErr && (p.Comm != tt.want.Comm || p.PPID != tt.want.PPID || p.StartTime != tt.want.StartTime) {
			t.Errorf("%s: got %+v", tt.name, p)
		}
	}
}

func TestParseNSLink(t *testing.T) {
	if n, err := ParseNSLink("mnt:[4026531840]"); err != nil || n != 4026531840 {
		t.Errorf("got %d %v", n, err)
	}
	for _, bad := range []string{"", "mnt:", "mnt:[x]", "mnt:[99999999999]"} {
		if _, err := ParseNSLink(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestPickCgroup(t *testing.T) {
	id := strings.Repeat("ab", 32)
	tests := map[string]string{
		"0::/system.slice/ntpd.service\n":                               "/system.slice/ntpd.service",
		"12:name=systemd:/user.slice\n4:cpu:/docker/" + id + "\n0::/\n": "/docker/" + id,
		"9:name=systemd:/system.slice/docker.service\n1:cpu:/\n":        "/system.slice/docker.service",
		"0::/\n": "/",
	}
	for in, want := range tests {
		if got := pickCgroup(in); got != want {
			t.Errorf("pickCgroup(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestHostSelf reads the live /proc for this very process: no root needed.
func TestHostSelf(t *testing.T) {
	h := Host{}
	procs, err := h.Processes()
	if err != nil {
		t.Fatal(err)
	}
	var self *Process
	for i := range procs {
		if procs[i].PID == os.Getpid() {
			self = &procs[i]
		}
	}
	if self == nil || self.MntNS == 0 || self.StartTime == 0 || self.Comm == "" {
		t.Fatalf("own process %+v not listed properly", self)
	}
	ns, mounts, err := h.Mountinfo(os.Getpid())
	if err != nil || ns != self.MntNS || len(mounts) == 0 {
		t.Fatalf("Mountinfo: ns %d (want %d), %d mounts, %v", ns, self.MntNS, len(mounts), err)
	}
	if _, _, err := h.Mountinfo(1 << 30); err == nil {
		t.Error("Mountinfo of a pid that does not exist succeeded")
	}
	if _, err := h.BlockDevice("/etc/hostname"); err == nil {
		t.Error("a regular file is a block device")
	}
	if host, err := h.HostNS(); err != nil || host == 0 {
		t.Errorf("HostNS: %d %v", host, err)
	}
	if cg, ns, err := h.Cgroup(os.Getpid()); err != nil || cg != self.Cgroup || cg == "" || ns != self.MntNS {
		t.Errorf("Cgroup: %q mnt:[%d] %v, want the process list's %q mnt:[%d]", cg, ns, err, self.Cgroup, self.MntNS)
	}
	if _, _, err := h.Cgroup(1 << 30); err == nil || !strings.Contains(err.Error(), "/1073741824/cgroup") {
		t.Errorf("Cgroup of a pid that does not exist: %v, want an error naming its file", err)
	}
	// This test's cwd is on some device: Pins must find us there.
	var st struct{ dev event.Dev }
	cwd, _ := os.Getwd()
	for _, m := range mounts {
		if strings.HasPrefix(cwd, m.Mountpoint) {
			st.dev = event.MakeDev(uint32(m.Major), uint32(m.Minor))
		}
	}
	pins, err := h.Pins([]event.Dev{st.dev})
	if partial(err) != nil {
		t.Fatal(err)
	}
	found := false
	for _, p := range pins {
		found = found || (p.PID == os.Getpid() && p.Kind == PinCwd)
	}
	if !found {
		t.Errorf("no cwd pin for this process on %s among %d pins", st.dev, len(pins))
	}
}

// TestRecordReplay: what a Recorder writes, a Replay answers, in order,
// per question; an unrecorded question is an error.
func TestRecordReplay(t *testing.T) {
	var recs []*Record
	rec := Recorder{Proc: Host{}, Write: func(r *Record) { recs = append(recs, r) }}
	procs, _ := rec.Processes()
	ns, mounts, _ := rec.Mountinfo(os.Getpid())
	_, blkErr := rec.BlockDevice("/etc/hostname")
	host, _ := rec.HostNS()
	pins, _ := rec.Pins([]event.Dev{event.MakeDev(7, 99)})

	r := NewReplay()
	for _, x := range recs {
		r.Add(x)
	}
	if got, _ := r.Processes(); !reflect.DeepEqual(got, procs) {
		t.Error("processes differ")
	}
	if gotNS, got, _ := r.Mountinfo(os.Getpid()); gotNS != ns || !reflect.DeepEqual(got, mounts) {
		t.Error("mountinfo differs")
	}
	if _, err := r.BlockDevice("/etc/hostname"); err == nil || err.Error() != blkErr.Error() {
		t.Errorf("block device error %v, want %v", err, blkErr)
	}
	if got, _ := r.HostNS(); got != host {
		t.Error("host ns differs")
	}
	if got, _ := r.Pins([]event.Dev{event.MakeDev(7, 99)}); !reflect.DeepEqual(got, pins) {
		t.Error("pins differ")
	}
	// Asked more often than recorded: the freshest answer is repeated.
	if got, err := r.Processes(); err != nil || !reflect.DeepEqual(got, procs) {
		t.Errorf("a second process list: %v, want the last one again", err)
	}
	if _, _, err := r.Mountinfo(12345); err == nil {
		t.Error("an unrecorded mountinfo was answered")
	}
}

// TestReplaySteps: answers recorded at a later step replace the unused
// ones of earlier steps (a replay that asks less often never gets an old
// answer), and several answers of one step are given in order.
func TestReplaySteps(t *testing.T) {
	list := func(pids ...int) *Record {
		r := &Record{Op: OpProcesses}
		for _, p := range pids {
			r.Processes = append(r.Processes, Process{PID: p})
		}
		return r
	}
	pids := func(ps []Process) []int {
		var out []int
		for _, p := range ps {
			out = append(out, p.PID)
		}
		return out
	}
	r := NewReplay()
	r.AddStep([]*Record{list(1)})
	r.AddStep([]*Record{list(1, 2)}) // step 1's answer was never asked for
	if got, _ := r.Processes(); !reflect.DeepEqual(pids(got), []int{1, 2}) {
		t.Errorf("after two steps: %v, want the second step's [1 2]", pids(got))
	}
	r.AddStep([]*Record{list(3), list(3, 4)})
	for _, want := range [][]int{{3}, {3, 4}, {3, 4}} {
		if got, _ := r.Processes(); !reflect.DeepEqual(pids(got), want) {
			t.Errorf("got %v, want %v", pids(got), want)
		}
	}
}

// TestMapsOn: the hand-cut maps lines give what strings.Fields did, for
// wanted devices only, one entry per file, paths with spaces kept whole.
func TestMapsOn(t *testing.T) {
	maps := "55d0c0a00000-55d0c0a02000 r--p 00000000 fd:01 1234 /usr/bin/sleep\n" +
		"55d0c0a02000-55d0c0a06000 r-xp 00002000 fd:01 1234 /usr/bin/sleep\n" +
		"7f0000000000-7f0000001000 rw-p 00000000 00:00 0 \n" +
		"7f0000001000-7f0000002000 r--s 00000000 07:00 77 /mnt/vol/my file (deleted)\n" +
		"7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0                          [stack]\n" +
		"7f0000002000-7f0000003000 r--p 00000000 zz:00 5 /bad\n" +
		"truncated line"
	got := mapsOn([]byte(maps), map[event.Dev]bool{event.MakeDev(0xfd, 1): true, event.MakeDev(7, 0): true})
	want := []mapping{{event.MakeDev(0xfd, 1), "/usr/bin/sleep"}, {event.MakeDev(7, 0), "/mnt/vol/my file (deleted)"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("mapsOn = %+v, want %+v", got, want)
	}
	if got := mapsOn([]byte(maps), map[event.Dev]bool{event.MakeDev(1, 1): true}); len(got) != 0 {
		t.Errorf("unwanted device kept: %+v", got)
	}
}

// TestPinsIn: the namespace-limited search finds this process's cwd pin in
// its own namespace and nothing of it for another namespace.
func TestPinsIn(t *testing.T) {
	h := Host{}
	self, err := h.process(os.Getpid(), newScratch(), true)
	if err != nil {
		t.Fatal(err)
	}
	cwd, _ := os.Getwd()
	dev, _, ok := statDev(cwd)
	if !ok {
		t.Fatal("stat cwd")
	}
	has := func(pins []Pin) bool {
		for _, p := range pins {
			if p.PID == os.Getpid() && p.Kind == PinCwd && p.MntNS == self.MntNS {
				return true
			}
		}
		return false
	}
	pins, err := h.PinsIn([]event.Dev{dev}, []uint32{self.MntNS}, nil)
	if partial(err) != nil || !has(pins) {
		t.Errorf("PinsIn own namespace: %v, cwd pin found %v", err, has(pins))
	}
	if pins, _ := h.PinsIn([]event.Dev{dev}, []uint32{self.MntNS + 1}, nil); has(pins) {
		t.Error("PinsIn another namespace listed this process")
	}
	// Candidates: only those pids are looked at, each still checked.
	if pins, err := h.PinsIn([]event.Dev{dev}, []uint32{self.MntNS}, []int{os.Getpid()}); err != nil || !has(pins) {
		t.Errorf("PinsIn with this process as the candidate: %v, cwd pin found %v", err, has(pins))
	}
	if pins, _ := h.PinsIn([]event.Dev{dev}, []uint32{self.MntNS}, []int{1 << 30}); has(pins) {
		t.Error("PinsIn listed this process although it was no candidate")
	}
	if pins, _ := h.PinsIn([]event.Dev{dev}, []uint32{self.MntNS + 1}, []int{os.Getpid()}); has(pins) {
		t.Error("PinsIn listed a candidate that is in another namespace")
	}
}

// PIDs lists the numeric entries of the proc root and nothing else, in
// the order a search without candidates takes them (by name).
func TestPIDs(t *testing.T) {
	root := t.TempDir()
	for _, name := range []string{"1", "22", "100", "self", "thread-self", "3x", "0"} {
		if err := os.Mkdir(root+"/"+name, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	got, err := Host{Root: root}.PIDs()
	if err != nil || !reflect.DeepEqual(got, []int{1, 100, 22}) {
		t.Errorf("PIDs() = %v, %v; want [1 100 22]", got, err)
	}
	if _, err := (Host{Root: root + "/none"}).PIDs(); err == nil {
		t.Error("PIDs of a missing root: no error")
	}
}

package correlate

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/mntleak/mntleak/finding"
	"github.com/mntleak/mntleak/procfs"
)

// birthIDProc is a /proc with a process list (or its error), the birth
// id of each namespace (ids; none: the ioctl fails) and, through
// pidTables, each pid's namespace and table. listed counts the lists read.
type birthIDProc struct {
	pidTables
	procs    []procfs.Process
	procsErr error
	ids      map[uint32]uint64
	listed   *int
}

func (p birthIDProc) Processes() ([]procfs.Process, error) {
	if p.listed != nil {
		*p.listed++
	}
	return slices.Clone(p.procs), p.procsErr
}

func (p birthIDProc) MntNSID(pid int) (uint32, uint64, error) {
	ns, ok := p.ns[pid]
	if !ok {
		return 0, 0, errors.New("no such process")
	}
	if id, ok := p.ids[ns]; ok {
		return ns, id, nil
	}
	return ns, 0, errors.New("NS_GET_MNTNS_ID: inappropriate ioctl for device")
}

func (birthIDProc) HostNS() (uint32, error) { return 1, nil }

// A member is known by its pid and, where both are known, its start time.
func TestKnownMemberIsTheSamePidAndStartTime(t *testing.T) {
	n := &Namespace{Ino: 9, members: map[int]*Member{30: {PID: 30, StartTime: 5000}, 40: {PID: 40}}}
	for _, tt := range []struct {
		name string
		p    procfs.Process
		want bool
	}{
		{"the member", procfs.Process{PID: 30, StartTime: 5000}, true},
		{"its pid, another start time", procfs.Process{PID: 30, StartTime: 6000}, false},
		{"a member seen only in events", procfs.Process{PID: 40, StartTime: 7000}, true},
		{"another pid", procfs.Process{PID: 50, StartTime: 5000}, false},
	} {
		if got := hasKnownMember(n, []procfs.Process{tt.p}); got != tt.want {
			t.Errorf("%s: known %v, want %v", tt.name, got, tt.want)
		}
	}
}

// A holder's birth id is asked of at most three processes: the fourth
// is not asked even when it is the one in the namespace.
func TestBirthIDAskedOfThreeProcessesAtMost(t *testing.T) {
	c := New(birthIDProc{pidTables: pidTables{ns: map[int]uint32{1: 5, 2: 5, 3: 5, 4: 9}}, ids: map[uint32]uint64{5: 55, 9: 99}}, Options{}, nil)
	for _, tt := range []struct {
		pids []int
		want uint64
	}{
		{[]int{1, 4}, 99},
		{[]int{1, 2, 4}, 99},
		{[]int{1, 2, 3, 4}, 0},
	} {
		if got := c.liveBirthID(9, tt.pids); got != tt.want {
			t.Errorf("birth id of mnt:[9] through %v: %d, want %d", tt.pids, got, tt.want)
		}
	}
}

// A namespace that died within the year is marked replaced when the
// process list shows its inode with another birth id (its inode is
// another namespace's: it is never revived), not when the id is its own.
func TestDeadNamespaceReplacedByAnotherBirthID(t *testing.T) {
	for _, tt := range []struct {
		name string
		id   uint64 // the id mnt:[9] has now
		died time.Duration
		want bool
	}{
		{"another id, died an hour ago", 200, time.Hour, true},
		{"its own id", 100, time.Hour, false},
		{"another id, died two years ago", 200, 2 * 365 * 24 * time.Hour, false},
	} {
		ps := []procfs.Process{{PID: 4, StartTime: 1, MntNS: 9}}
		c := New(birthIDProc{pidTables: pidTables{ns: map[int]uint32{4: 9}}, ids: map[uint32]uint64{9: tt.id}}, Options{}, nil)
		c.now = t0
		old := c.lineage.Created(9, 1, OriginUnshare, Member{PID: 3}, nil)
		old.ID = 100
		c.lineage.retire(old, t0.Add(-tt.died))
		c.retireReplaced(ps)
		if old.replaced != tt.want {
			t.Errorf("%s: replaced %v, want %v", tt.name, old.replaced, tt.want)
		}
	}
}

// A failure or a leak check reads the process list again once the scan
// interval has passed since the last read, to the nanosecond; not before.
func TestProcessListReadAgainAtTheScanInterval(t *testing.T) {
	for _, tt := range []struct {
		since time.Duration
		reads int
	}{
		{time.Minute - time.Nanosecond, 0},
		{time.Minute, 1},
	} {
		var listed int
		c := New(birthIDProc{listed: &listed}, Options{ScanInterval: time.Minute}, nil)
		c.now, c.lastScan, c.scanned = t0, t0.Add(-tt.since), true
		if missing := c.refresh(func(*Namespace) bool { return false }); len(missing) != 0 {
			t.Errorf("%v after the last read: missing %q, want none", tt.since, missing)
		}
		if listed != tt.reads {
			t.Errorf("%v after the last read: %d reads of the process list, want %d", tt.since, listed, tt.reads)
		}
	}
}

// A process list that cannot be read is what a refresh says is missing:
// at the interval's read, and at the read for a namespace whose known
// processes are gone.
func TestUnreadableProcessListIsMissing(t *testing.T) {
	for _, tt := range []struct {
		name  string
		since time.Duration
	}{
		{"the interval's read", time.Hour},
		{"the read for a namespace whose processes are gone", time.Second},
	} {
		c := New(birthIDProc{procsErr: errors.New("permission denied")}, Options{ScanInterval: time.Minute}, func(*finding.Finding) {})
		c.now, c.lastScan, c.scanned = t0, t0.Add(-tt.since), true
		n := c.lineage.Created(9, 1, OriginUnshare, Member{PID: 3}, nil)
		n.members[3] = &Member{PID: 3}
		got := c.refresh(nil)
		if want := []string{"process list: permission denied"}; !slices.Equal(got, want) {
			t.Errorf("%s: missing %q, want %q", tt.name, got, want)
		}
	}
}

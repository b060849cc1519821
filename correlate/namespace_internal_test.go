package correlate

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/finding"
)

// Live lists the live namespaces by inode, lowest first.
func TestLiveIsByInode(t *testing.T) {
	l := NewLineage(time.Minute)
	for _, ino := range []uint32{30, 10, 20} {
		l.Created(ino, 0, OriginPredates, Member{}, nil)
	}
	var got []uint32
	for _, n := range l.Live() {
		got = append(got, n.Ino)
	}
	if fmt.Sprint(got) != "[10 20 30]" {
		t.Errorf("Live() = %v, want [10 20 30]", got)
	}
}

// Verify gives a member seen only in events (no start time) the start
// time /proc says it has, and Gone moves a member into the past.
func TestVerifyDatesAMemberAndGoneRetiresIt(t *testing.T) {
	l := NewLineage(time.Minute)
	n := l.Created(9, 0, OriginPredates, Member{}, nil)
	l.Join(9, 0, Member{PID: 77, Comm: "sleep"})
	l.Verify(n, Member{PID: 77}, "", 770, t0)
	if ms := n.Members(); len(ms) != 1 || ms[0].StartTime != 770 {
		t.Fatalf("members %+v after Verify, want pid 77 with start time 770", ms)
	}
	l.Gone(n, Member{PID: 77}, t0)
	if ms, past := n.Members(), n.Past(); len(ms) != 0 || len(past) != 1 || past[0].PID != 77 || !past[0].Left.Equal(t0) {
		t.Errorf("after Gone: members %+v, past %+v; want none, and pid 77 left at %s", ms, past, t0)
	}
	l.Gone(n, Member{PID: 78}, t0) // not a member: nothing to do
	if past := n.Past(); len(past) != 1 {
		t.Errorf("Gone of a pid that is no member changed the past: %+v", past)
	}
}

// hasEmpty: a live namespace with no member and no bind keeping it.
func TestHasEmptyNeedsNoMemberAndNoPin(t *testing.T) {
	l := NewLineage(time.Minute)
	n := l.Created(9, 0, OriginPredates, Member{}, nil)
	l.Join(9, 0, Member{PID: 77, Comm: "sleep"})
	if l.hasEmpty() {
		t.Errorf("a namespace with a member counted as empty")
	}
	n.leave(77, t0)
	n.pinned = true
	if l.hasEmpty() {
		t.Errorf("a pinned namespace with no member counted as empty")
	}
	n.pinned = false
	if !l.hasEmpty() {
		t.Errorf("a namespace with no member and no pin not counted as empty")
	}
}

// left matches a past member by pid when either start time is unknown,
// else by pid and start time.
func TestLeftByPIDAndStartTime(t *testing.T) {
	n := &Namespace{past: []Member{{PID: 70}, {PID: 80, StartTime: 800}}}
	for _, c := range []struct {
		pid   int
		start uint64
		want  bool
	}{
		{70, 700, true},  // its start time unknown
		{80, 0, true},    // the asked start time unknown
		{80, 800, true},  // the same process
		{80, 801, false}, // another process with its pid
		{90, 0, false},
	} {
		if got := n.left(c.pid, c.start); got != c.want {
			t.Errorf("left(%d, %d) = %v, want %v", c.pid, c.start, got, c.want)
		}
	}
}

// copiedFrom walks up the namespaces made during tracing from the caller
// to the first that mounted the object itself since it was made: a mount
// in another namespace does not stop the walk.
func TestCopiedFromStopsAtItsOwnMount(t *testing.T) {
	c := New(noCommands{}, Options{}, func(*finding.Finding) {})
	c.lineage.Created(10, 1, OriginUnshare, Member{PID: 60, Joined: t0}, nil)
	c.lineage.Created(20, 10, OriginUnshare, Member{PID: 70, Joined: t0.Add(time.Minute)}, nil)
	mountIn := func(ns uint32) *event.Event {
		return &event.Event{Kind: event.KindMount, MntNS: ns, Time: t0.Add(2 * time.Minute)}
	}
	for _, tt := range []struct {
		what    string
		mounted *event.Event
		want    string
	}{
		{"no mount seen", nil, "map[1:true 10:true]"},
		{"mounted in the host since", mountIn(1), "map[1:true 10:true]"},
		{"mounted in the parent since", mountIn(10), "map[10:true]"},
		{"mounted by the caller itself", mountIn(20), "map[]"},
	} {
		if got := fmt.Sprint(c.copiedFrom(20, tt.mounted)); got != tt.want {
			t.Errorf("%s: copied from %s, want %s", tt.what, got, tt.want)
		}
	}
}

// TestByAgeIsMembersOrder: byAge yields exactly Members' order (oldest by
// start time, then pid, then tid), its first without the sort, and stops
// where its caller stops; oldest(k) is the first k of that order but the
// ones it skips; on namespaces of main threads and thread members with
// start times that tie.
func TestByAgeIsMembersOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		n := &Namespace{members: map[int]*Member{}}
		for range r.IntN(12) {
			m := &Member{PID: 1 + r.IntN(40), StartTime: uint64(r.IntN(4))}
			if r.IntN(3) == 0 {
				m.TID = 100 + r.IntN(40)
			}
			n.members[m.key()] = m
		}
		want := n.Members()
		got := slices.Collect(n.byAge())
		if !slices.Equal(got, want) {
			t.Fatalf("round %d: byAge %v, want Members' %v", round, got, want)
		}
		pid := 1 + r.IntN(40)
		skip := func(m Member) bool { return m.PID == pid }
		for k := range 4 {
			kept := slices.DeleteFunc(slices.Clone(want), skip)
			kept = kept[:min(k, len(kept))]
			if got := n.oldest(k, skip); !slices.Equal(got, kept) {
				t.Fatalf("round %d: the %d oldest but pid %d: %v, want %v", round, k, pid, got, kept)
			}
		}
		for stop := range len(want) {
			var some []Member
			for m := range n.byAge() {
				if len(some) == stop {
					break
				}
				some = append(some, m)
			}
			if !slices.Equal(some, want[:stop]) {
				t.Fatalf("round %d: the first %d of byAge %v, want %v", round, stop, some, want[:stop])
			}
		}
	}
}

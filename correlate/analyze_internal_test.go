package correlate

import (
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/mntleak/mntleak/event"
)

// TestFailuresRememberedUpToTheirCap: the failures the correlator keeps
// for folding retries are kept up to 4096 whatever their age; past that,
// those older than the retry window are forgotten, and one exactly at the
// window's age is not (a retry then is still folded).
func TestFailuresRememberedUpToTheirCap(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 21, 0, 0, 0, time.UTC)
	// fill makes n distinct failures at t0 besides the one on /dev/loop0.
	fill := func(n int) (*Correlator, func(path string, at time.Time) bool) {
		c := New(nil, Options{}, nil)
		fail := func(path string, at time.Time) bool {
			return c.repeated(&event.Event{MntNS: 4026531840, Syscall: "openat", Errno: "EBUSY", Path: path, Time: at})
		}
		fail("/dev/loop0", t0)
		for i := range n {
			fail("/srv/other/"+strconv.Itoa(i), t0)
		}
		return c, fail
	}
	remembered := func(what string, c *Correlator, want int) {
		t.Helper()
		if got := len(c.incidents); got != want {
			t.Errorf("%s: %d failures remembered, want %d", what, got, want)
		}
	}

	c, fail := fill(4094)
	past := t0.Add(c.opts.RetryWindow + time.Nanosecond)
	fail("/srv/b", past)
	remembered("the 4096th failure, the others past the window", c, 4096)
	fail("/srv/c", past)
	remembered("the 4097th failure, the others past the window", c, 2)

	c, fail = fill(4095)
	end := t0.Add(c.opts.RetryWindow)
	fail("/srv/b", end)
	remembered("the 4097th failure, the others at the window's end", c, 4097)
	if !fail("/dev/loop0", end) {
		t.Errorf("a retry at the window's end, after 4096 others: a new incident, want it folded")
	}
}

// TestSortDevsAscending: the devices a pin search asks for are in
// ascending order, whatever order the map gave them in (a recorded
// search is answered by the same question).
func TestSortDevsAscending(t *testing.T) {
	a, b, c, d := event.MakeDev(0, 5), event.MakeDev(0, 77), event.MakeDev(7, 0), event.MakeDev(254, 0)
	for _, in := range [][]event.Dev{nil, {c}, {a, c}, {c, a}, {d, c, b, a}, {b, d, a, c}, {c, a, d, b}, {a, b, c, d}} {
		got := slices.Clone(in)
		sortDevs(got)
		want := slices.Sorted(slices.Values(in))
		if !slices.Equal(got, want) {
			t.Errorf("sortDevs(%v) = %v, want %v", in, got, want)
		}
	}
}

// TestCallNamesTheCgroupOfTheCallersYoungestMember: a failing call's
// container is read from the caller's members in the lineage when the
// event carries no cgroup: of the caller's main thread and a thread of it
// (a member of its own, later in Members' order), the thread's; another
// process's member and a member without a cgroup are not read.
func TestCallNamesTheCgroupOfTheCallersYoungestMember(t *testing.T) {
	c := New(nil, Options{}, nil)
	const ns = 4026532100
	c.lineage.Created(ns, 0, OriginPredates, Member{}, nil)
	n := c.lineage.Get(ns)
	const main, thread, other = "/docker/" + "aaaaaaaaaaaa0000000000000000000000000000000000000000000000000000", "/docker/" + "bbbbbbbbbbbb0000000000000000000000000000000000000000000000000000", "/docker/" + "cccccccccccc0000000000000000000000000000000000000000000000000000"
	for _, m := range []*Member{
		{PID: 50, StartTime: 7, Cgroup: main},
		{PID: 50, TID: 52, StartTime: 7, Cgroup: thread},
		{PID: 50, TID: 53, StartTime: 9},
		{PID: 60, StartTime: 99, Cgroup: other},
	} {
		n.members[m.key()] = m
	}
	call := c.callOf(&event.Event{PID: 50, MntNS: ns, Syscall: "umount2"})
	if got, want := call.Container, ContainerID(thread); got != want {
		t.Errorf("container %q, want the thread member's %q", got, want)
	}
}

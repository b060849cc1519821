package correlate_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/mntleak/mntleak/correlate"
	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/finding"
	"github.com/mntleak/mntleak/procfs"
	"golang.org/x/sys/unix"
)

// askedAt is when the tests of this file ask why.
var askedAt = time.Date(2026, 11, 21, 13, 0, 0, 0, time.UTC)

// whyOf starts a correlator on fp, with the daemon's history remembered
// (none: from /proc alone), and asks why about tg.
func whyOf(t *testing.T, fp *fakeProc, tg correlate.Target, history ...*event.Event) *finding.Finding {
	t.Helper()
	if fp.blocks == nil {
		fp.blocks = map[string]event.Dev{"/dev/loop0": event.MakeDev(7, 0)}
	}
	c := correlate.New(fp, correlate.Options{}, func(*finding.Finding) {})
	for _, ev := range history {
		c.Remember(ev)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	return c.Why(tg, askedAt)
}

// privateCopy is a namespace's table with a private copy of /srv/vol.
const privateCopy = "110 109 254:0 / / rw - ext4 /dev/vda rw\n111 110 7:0 / /srv/vol rw - ext4 /dev/loop0 rw\n"

// Asked about /srv/vol while the host still has it mounted (shared), and
// a slave copy in mnt:[80] is a process's working directory: an unmount
// here would propagate to that busy copy. Why is a question, not a failed
// call, and the host's own mount is the one it would unmount.
func TestWhyOnAMountedPathNamesTheBusyCopyAnUnmountWouldReach(t *testing.T) {
	sleeper := proc(77, "sleep", 80, "")
	fp := &fakeProc{host: hostNS,
		procs: []procfs.Process{proc(1, "systemd", hostNS, ""), sleeper},
		tables: map[uint32]string{hostNS: hostTable,
			80: "110 109 254:0 / / rw master:1 - ext4 /dev/vda rw\n111 110 7:0 / /srv/vol rw master:3 - ext4 /dev/loop0 rw\n"},
		pins: []procfs.Pin{pinOn(sleeper, procfs.PinCwd, "/srv/vol")}}
	f := whyOf(t, fp, correlate.Target{Path: "/srv/vol", Dev: event.MakeDev(7, 0)})
	if f == nil {
		t.Fatal("nothing holds /srv/vol, want the busy copy in mnt:[80]")
	}
	want := "an unmount of /srv/vol here propagates to the copy in mnt:[80] at /srv/vol, which is busy: sleep[77] (cwd /srv/vol)"
	if f.Cause != finding.CauseBusyCopy || f.Summary != want {
		t.Errorf("got %s: %q, want %s: %q", f.Cause, f.Summary, finding.CauseBusyCopy, want)
	}
}

// The asker (mntleak why itself, here a process of the holder namespace
// with its cwd in the copy) is never named: not as a member of mnt:[80],
// not as a pinner; the other member and the other pinner are.
func TestWhyLeavesTheAskerOut(t *testing.T) {
	asker, worker, reader := proc(30, "mntleak", 80, ""), proc(21, "worker", 80, ""), proc(40, "reader", 80, "")
	fp := &fakeProc{host: hostNS,
		procs:  []procfs.Process{proc(1, "systemd", hostNS, ""), worker, asker, reader},
		tables: map[uint32]string{hostNS: hostWithoutVol, 80: privateCopy},
		pins:   []procfs.Pin{pinOn(asker, procfs.PinCwd, "/srv/vol"), pinOn(reader, procfs.PinFD, "/srv/vol/file")}}
	f := whyOf(t, fp, correlate.Target{Path: "/dev/loop0", Dev: event.MakeDev(7, 0), Asker: 30})
	if f == nil || len(f.Holders) != 1 {
		t.Fatalf("got %v, want one holder, mnt:[80]", f)
	}
	h := f.Holders[0]
	var members, pinners []int
	for _, p := range h.Processes {
		members = append(members, p.PID)
	}
	for _, p := range h.Pins {
		pinners = append(pinners, p.PID)
	}
	if !slices.Equal(members, []int{21, 40}) || !slices.Equal(pinners, []int{40}) {
		t.Errorf("got members %v and pinners %v of mnt:[80], want [21 40] and [40] (not the asker, 30): %s", members, pinners, f.Line())
	}
}

// A device only the asker itself holds open is held by nothing.
func TestWhyOnADeviceOnlyTheAskerHoldsFindsNothing(t *testing.T) {
	asker := proc(30, "mntleak", hostNS, "")
	fp := &fakeProc{host: hostNS,
		procs:  []procfs.Process{proc(1, "systemd", hostNS, ""), asker},
		tables: map[uint32]string{hostNS: hostWithoutVol},
		pins:   []procfs.Pin{pinOn(asker, procfs.PinBlockFD, "/dev/loop0")}}
	if f := whyOf(t, fp, correlate.Target{Path: "/dev/loop0", Dev: event.MakeDev(7, 0), Asker: 30}); f != nil {
		t.Errorf("got %s, want nothing held (only the asker has /dev/loop0 open)", f.Line())
	}
	fp.pins = append(fp.pins, pinOn(proc(41, "dd", hostNS, ""), procfs.PinBlockFD, "/dev/loop0"))
	f := whyOf(t, fp, correlate.Target{Path: "/dev/loop0", Dev: event.MakeDev(7, 0), Asker: 30})
	if f == nil {
		t.Fatal("nothing holds /dev/loop0, want dd[41] named")
	}
	want := "HELD /dev/loop0 (7:0): kept busy in mnt:[4026531840], held by dd[41] blockdev-fd /dev/loop0; not a leak: " +
		"the device is open in the host by dd[41] (blockdev-fd /dev/loop0) (inferred: no recorded history) [cause: in-use]. " +
		"Fix: stop dd[41] or have it close the device, then retry"
	if f.Line() != want {
		t.Errorf("got %s, want %s (dd[41] named, not the asker)", f.Line(), want)
	}
}

// Processes whose open namespace files could not be listed are not said
// to be missing from a why when no namespace held open was found: the
// caller reports what it cannot see once, for the whole run.
func TestWhyDoesNotReportUnlistedNamespaceFilesWhenNoneWasFound(t *testing.T) {
	fp := &fakeProc{host: hostNS,
		procs:    []procfs.Process{proc(1, "systemd", hostNS, ""), proc(21, "worker", 80, "")},
		tables:   map[uint32]string{hostNS: hostWithoutVol, 80: privateCopy},
		nsfdsErr: &procfs.UnreadableError{Processes: 2}}
	f := whyOf(t, fp, correlate.Target{Path: "/dev/loop0", Dev: event.MakeDev(7, 0)})
	if f == nil {
		t.Fatal("nothing holds /dev/loop0, want mnt:[80]")
	}
	if len(f.Missing) != 0 {
		t.Errorf("got missing %q, want none", f.Missing)
	}
}

// Why on a bind of a deleted file: with the bind remembered, the finding
// is not inferred and cites the bind; from /proc alone it is inferred and
// cites the mount table alone.
func TestWhyOnAStaleBindCitesTheBindWhenItWasSeen(t *testing.T) {
	bind := mountEv(1, "systemd", hostNS, "/pods/x/volumes/cfg/extra.ini", "/srv/cfg", "", unix.MS_BIND, 0)
	bind.Time = askedAt.Add(-time.Hour)
	table := "mnt:[4026531840] mount 12 at /srv/cfg (ext4 /dev/vda, root /pods/x/volumes/cfg/extra.ini//deleted, shared:1): its source was deleted"
	for _, tc := range []struct {
		name     string
		history  []*event.Event
		inferred bool
		evidence []string
	}{
		{"from /proc alone", nil, true, []string{table}},
		{"the bind seen", []*event.Event{bind}, false, []string{table, "the stale bind: mount /pods/x/volumes/cfg/extra.ini → /srv/cfg MS_BIND by systemd[1]"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fp := &fakeProc{host: hostNS, procs: []procfs.Process{proc(1, "systemd", hostNS, "")},
				tables: map[uint32]string{hostNS: hostWithoutVol + "12 1 254:0 /pods/x/volumes/cfg/extra.ini//deleted /srv/cfg rw shared:1 - ext4 /dev/vda rw\n"}}
			f := whyOf(t, fp, correlate.Target{Path: "/srv/cfg"}, tc.history...)
			if f == nil || f.Cause != finding.CauseStaleBind {
				t.Fatalf("got %v, want a stale bind", f)
			}
			var got []string
			for _, e := range f.Evidence {
				got = append(got, e.What)
			}
			if f.Inferred != tc.inferred || !slices.Equal(got, tc.evidence) {
				t.Errorf("got inferred %v, evidence %q; want %v, %q", f.Inferred, got, tc.inferred, tc.evidence)
			}
		})
	}
}

// Why names the object by what the target gives: a device alone (no
// path) is every mount of it; a device and a root (nsfs: every namespace
// file is 0:4) the mounts of that root alone.
func TestWhyOnADeviceOrARootOfIt(t *testing.T) {
	netns := "110 109 254:0 / / rw - ext4 /dev/vda rw\n" +
		"111 110 0:4 net:[4026532569] /run/netns/cni-a rw - nsfs nsfs rw\n" +
		"112 110 0:4 net:[4026532570] /run/netns/cni-b rw - nsfs nsfs rw\n"
	for _, tc := range []struct {
		name   string
		table  string
		target correlate.Target
		where  string
	}{
		{"a device, no path", privateCopy, correlate.Target{Dev: event.MakeDev(7, 0)}, "/srv/vol"},
		{"a netns file by its root", netns, correlate.Target{Dev: event.MakeDev(0, 4), Root: "net:[4026532570]"}, "/run/netns/cni-b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fp := &fakeProc{host: hostNS,
				procs:  []procfs.Process{proc(1, "systemd", hostNS, ""), proc(21, "worker", 80, "")},
				tables: map[uint32]string{hostNS: hostWithoutVol, 80: tc.table}}
			f := whyOf(t, fp, tc.target)
			if f == nil {
				t.Fatalf("nothing holds %v, want mnt:[80] at %s", tc.target, tc.where)
			}
			var where []string
			for _, h := range f.Holders {
				where = append(where, fmt.Sprintf("mnt:[%d] at %s", h.MntNS, h.Where))
			}
			if want := []string{"mnt:[80] at " + tc.where}; !slices.Equal(where, want) {
				t.Errorf("got holders %q, want %q: %s", where, want, f.Line())
			}
		})
	}
}

// Why on a path alone finds the object from the caller's table: /srv/vol,
// still mounted in the host, is /dev/loop0's filesystem (7:0), and the
// host's own mount of it is what keeps it, before any copy.
func TestWhyOnAPathNamesTheFilesystemMountedThere(t *testing.T) {
	fp := &fakeProc{host: hostNS,
		procs:  []procfs.Process{proc(1, "systemd", hostNS, ""), proc(21, "worker", 80, "")},
		tables: map[uint32]string{hostNS: hostTable, 80: privateCopy}}
	f := whyOf(t, fp, correlate.Target{Path: "/srv/vol"})
	want := "HELD /srv/vol (7:0): mounted in the caller's own namespace mnt:[4026531840] at /srv/vol (shared:3); " +
		"still mounted in mnt:[80] at /srv/vol (private), held by worker[21] (namespace members; nothing pins the copy); " +
		"not a leak: it is mounted in the caller's own namespace at /srv/vol (inferred: no recorded history) [cause: in-use]. Fix: unmount /srv/vol first"
	if f == nil {
		t.Fatalf("nothing holds /srv/vol, want %s", want)
	}
	if f.Line() != want {
		t.Errorf("got %s, want %s", f.Line(), want)
	}
}

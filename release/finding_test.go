package release

import (
	"strings"
	"testing"
	"time"

	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/finding"
)

// TestCheckFinding: a finding from before this boot is refused, and so is
// one that differs from the daemon's kept copy in any of what a verdict
// rests on (the first difference named); the same finding, or none kept,
// passes (its copy is proven from live state all the same).
func TestCheckFinding(t *testing.T) {
	booted := time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)
	made := booted.Add(time.Hour)
	kept := func() *finding.Finding {
		return &finding.Finding{Kind: finding.KindLeak, Time: made, Cause: finding.CauseUnshare,
			Object:  finding.Object{Path: "/srv/vol", Dev: event.MakeDev(0, 38)},
			Holders: []finding.Holder{{MntNS: 9, MountID: 102, Where: "/srv/vol", Created: booted.Add(time.Minute)}},
			Release: "mntleak release --mntns 9 --mount-id 102"}
	}
	for _, tc := range []struct {
		name   string
		change func(*finding.Finding)
		noKept bool
		want   string // "" passes
	}{
		{name: "the same"},
		{name: "none kept", noKept: true, change: func(f *finding.Finding) { f.Cause = finding.CauseRprivateBind }},
		{name: "no time", noKept: true, change: func(f *finding.Finding) { f.Time = time.Time{} }},
		{name: "made at the boot", noKept: true, change: func(f *finding.Finding) { f.Time = booted }},
		{name: "a previous boot", noKept: true, change: func(f *finding.Finding) { f.Time = booted.Add(-time.Second) },
			want: "the finding is from a previous boot: it was made at 2026-11-25T23:59:59Z, the machine booted at 2026-11-26T00:00:00Z"},
		{name: "cause", change: func(f *finding.Finding) { f.Cause = finding.CauseRprivateBind }, want: "cause rprivate-bind, kept unshare"},
		{name: "object", change: func(f *finding.Finding) { f.Object.Dev = event.MakeDev(0, 39) }, want: "object /srv/vol 0:39, kept /srv/vol 0:38"},
		{name: "time", change: func(f *finding.Finding) { f.Time = made.Add(time.Second) }, want: "time "},
		{name: "holders", change: func(f *finding.Finding) { f.Holders = append(f.Holders, finding.Holder{MntNS: 10}) }, want: "2 holders, kept 1"},
		{name: "holder namespace", change: func(f *finding.Finding) { f.Holders[0].MntNS = 8 }, want: "holder mnt:[8] mount 102 at /srv/vol, kept mnt:[9] mount 102 at /srv/vol"},
		{name: "holder mount", change: func(f *finding.Finding) { f.Holders[0].MountID = 103 }, want: "holder mnt:[9] mount 103"},
		{name: "holder mount point", change: func(f *finding.Finding) { f.Holders[0].Where = "/srv/x" }, want: "mount 102 at /srv/x, kept"},
		{name: "holder created", change: func(f *finding.Finding) { f.Holders[0].Created = booted }, want: "holder mnt:[9]"},
		{name: "release command", change: func(f *finding.Finding) { f.Release += " --force" }, want: "release command mntleak release --mntns 9 --mount-id 102 --force, kept"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, k := kept(), kept()
			if tc.change != nil {
				tc.change(f)
			}
			if tc.noKept {
				k = nil
			}
			err := CheckFinding(f, k, booted)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("err %v, want it passed", err)
				}
				return
			}
			if !IsNotLeak(err) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want a refusal with %q", err, tc.want)
			}
			if !tc.noKept && !strings.Contains(err.Error(), "differs from the one the daemon kept under id "+f.ID()) {
				t.Errorf("err %v does not name the kept finding's id", err)
			}
		})
	}
}

// TestGeneration: the ledger's creation of mnt:[ino] before the finding
// was made names the birth id the finding's namespace had; another live id
// is a reused inode. A creation after the finding, a failed one, or one
// without a birth id does not count.
func TestGeneration(t *testing.T) {
	at := time.Date(2026, 11, 26, 1, 0, 0, 0, time.UTC)
	unshare := func(ino uint32, id uint64, when time.Time, ret int64) *event.Event {
		return &event.Event{Kind: event.KindUnshare, PID: 20, Comm: "unshare", Time: when, Ret: ret, MntNSAfter: ino, NewMntNSID: id}
	}
	fork := &event.Event{Kind: event.KindNewNSFork, PID: 30, Comm: "runc", Time: at.Add(-time.Minute), ChildMntNS: 9, NewMntNSID: 60}
	for _, tc := range []struct {
		name   string
		events []*event.Event
		when   time.Time
		live   uint64
		want   string
	}{
		{name: "the same namespace", events: []*event.Event{unshare(9, 50, at.Add(-time.Hour), 0)}, when: at, live: 50},
		{name: "reused", events: []*event.Event{unshare(9, 50, at.Add(-time.Hour), 0)}, when: at, live: 51,
			want: "its mnt:[9] was made by unshare[20] (unshare) at 2026-11-26T00:00:00Z with birth id 50 (the daemon's ledger), the live mnt:[9] was born with id 51"},
		{name: "the last creation before the finding", events: []*event.Event{unshare(9, 50, at.Add(-time.Hour), 0), fork}, when: at, live: 50,
			want: "made by runc[30] (newns_fork)"},
		{name: "a creation after the finding", events: []*event.Event{unshare(9, 50, at.Add(-time.Hour), 0), unshare(9, 52, at.Add(time.Second), 0)}, when: at, live: 50},
		{name: "no time: every creation", events: []*event.Event{unshare(9, 50, at.Add(-time.Hour), 0), unshare(9, 52, at.Add(time.Second), 0)}, live: 50,
			want: "with birth id 52"},
		{name: "a failed creation", events: []*event.Event{unshare(9, 50, at.Add(-time.Hour), 0), unshare(9, 53, at.Add(-time.Minute), -1)}, when: at, live: 50},
		{name: "no birth id recorded", events: []*event.Event{unshare(9, 0, at.Add(-time.Hour), 0)}, when: at, live: 51},
		{name: "another namespace", events: []*event.Event{unshare(8, 50, at.Add(-time.Hour), 0)}, when: at, live: 51},
		{name: "not in the ledger", when: at, live: 51},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Ledger{Events: tc.events}.Generation(9, tc.when, tc.live)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("err %v, want none", err)
				}
				return
			}
			if !IsNotLeak(err) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want a refusal with %q", err, tc.want)
			}
		})
	}
}

func TestBootTime(t *testing.T) {
	booted, err := BootTime()
	if err != nil || !booted.Before(time.Now()) || booted.Year() < 2000 {
		t.Fatalf("booted at %v, %v", booted, err)
	}
	for _, tc := range []struct{ stat, want string }{
		{"cpu 1 2 3\nbtime 1764115200\nprocesses 9\n", ""},
		{"cpu 1 2 3\nbtime x\n", `/proc/stat: btime "x"`},
		{"cpu 1 2 3\n", "/proc/stat: no btime"},
	} {
		got, err := bootTimeIn([]byte(tc.stat))
		switch {
		case tc.want == "" && (err != nil || got.Unix() != 1764115200):
			t.Errorf("%q: %v, %v; want 1764115200", tc.stat, got, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%q: err %v, want %q", tc.stat, err, tc.want)
		}
	}
}

// The origins are the host's namespace (pid 1's, else kthreadd's) and the
// caller's, unless the Checker names others.
func TestOriginFiles(t *testing.T) {
	if got := (Checker{}).originFiles(); len(got) != 2 || got[0] != "/proc/1/ns/mnt|/proc/2/ns/mnt" || got[1] != "/proc/self/ns/mnt" {
		t.Errorf("%q, want the host's and the caller's", got)
	}
	if got := (Checker{Origins: []string{"/x"}}).originFiles(); len(got) != 1 || got[0] != "/x" {
		t.Errorf("%q, want the Checker's", got)
	}
	if got := (Checker{}).lockDir(); got != LockDir {
		t.Errorf("lock dir %q, want %q", got, LockDir)
	}
}

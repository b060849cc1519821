package release

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mntleak/mntleak/event"
)

// TestApplyDecides: Apply's decisions at the moment of acting, each on
// the kernel's answers (a fake of its acts): every refusal and every
// failure names what changed and leaves the copy alone (no detach; none
// after a check that failed, no entering before the leak is proven
// again); the one act that succeeds enters the planned namespace,
// detaches exactly the planned unique mount, and checks it is gone.
func TestApplyDecides(t *testing.T) {
	for _, tc := range []struct {
		name    string
		change  func(*fakeKernel, *Step)
		want    string // in the error ("" for success)
		notLeak bool   // a refusal (*NotLeak), else another error
		acts    []string
	}{
		{name: "released", acts: []string{"enter", "top", "detach"}},
		{name: "a step never proven", change: func(_ *fakeKernel, s *Step) { s.NSID = 0 },
			want: "the step for mount 102 in mnt:[9] carries no identities", notLeak: true},
		{name: "a step with no unique id", change: func(_ *fakeKernel, s *Step) { s.Unique = 0 },
			want: "carries no identities", notLeak: true},
		{name: "the namespace file does not open", change: func(f *fakeKernel, _ *Step) { f.openErr = errFake }, want: "the act failed"},
		{name: "another namespace under the file", change: func(f *fakeKernel, _ *Step) { f.files["/proc/77/ns/mnt"] = [2]uint64{8, 50} },
			want: "changed since the plan: /proc/77/ns/mnt is mnt:[8] born with id 50 now, not mnt:[9] id 50", notLeak: true},
		{name: "the inode reused", change: func(f *fakeKernel, _ *Step) { f.files["/proc/77/ns/mnt"] = [2]uint64{9, 51} },
			want: "is mnt:[9] born with id 51 now, not mnt:[9] id 50", notLeak: true},
		{name: "the table cannot be read", change: func(f *fakeKernel, _ *Step) { f.readErr = errFake }, want: "the act failed"},
		{name: "the copy gone", change: func(f *fakeKernel, _ *Step) { f.tables[50] = f.tables[50][:1] },
			want: "mount 202 is no longer in mnt:[9] (id 50)", notLeak: true},
		{name: "the filesystem mounted on the host again", change: func(f *fakeKernel, _ *Step) {
			f.tables[4] = append(f.tables[4], Mount{ID: 300, OldID: 30, Parent: 100, Dev: event.MakeDev(0, 38), Point: "/srv/vol", Root: "/", FSType: "tmpfs"})
		}, want: "not a leak: tmpfs 0:38 is still mounted in mnt:[1] (id 4) at /srv/vol", notLeak: true},
		{name: "no proof the namespace received it", change: func(f *fakeKernel, _ *Step) { f.tables[50] = f.tables[50][:2] },
			want: "cannot prove mount 102 was copied into mnt:[9] (id 50)", notLeak: true},
		{name: "another mount id now", change: func(f *fakeKernel, _ *Step) { f.tables[50][1].OldID = 103 },
			want: "changed since the plan: unique mount 202 is mount 103 at /srv/vol on 0:38 now, not 102 at /srv/vol on 0:38", notLeak: true},
		{name: "another mount point now", change: func(f *fakeKernel, _ *Step) { f.tables[50][1].Point = "/srv/moved" },
			want: "is mount 102 at /srv/moved on 0:38 now, not 102 at /srv/vol", notLeak: true},
		{name: "another device now", change: func(f *fakeKernel, _ *Step) { f.tables[50][1].Dev = event.MakeDev(0, 39) },
			want: "on 0:39 now, not 102 at /srv/vol on 0:38", notLeak: true},
		{name: "no device planned", change: func(f *fakeKernel, s *Step) { s.Dev = 0 }, acts: []string{"enter", "top", "detach"}},
		{name: "the caller's /proc does not open", change: func(f *fakeKernel, _ *Step) { f.procErr = errFake }, want: "the act failed"},
		{name: "the namespace cannot be entered", change: func(f *fakeKernel, _ *Step) { f.enterErr = errFake }, want: "the act failed", acts: []string{"enter"}},
		{name: "the mount point does not open", change: func(f *fakeKernel, _ *Step) { f.topErr = errFake }, want: "the act failed", acts: []string{"enter", "top"}},
		{name: "no unique id from statx", change: func(f *fakeKernel, _ *Step) { f.noUnique = true },
			want: "statx gave no unique mount id", acts: []string{"enter", "top"}},
		{name: "another mount on top", change: func(f *fakeKernel, _ *Step) { f.top = 205 },
			want: "changed since the plan: the top mount at /srv/vol in mnt:[9] is unique mount 205, not 202", notLeak: true, acts: []string{"enter", "top"}},
		{name: "the unmount fails", change: func(f *fakeKernel, _ *Step) { f.detachErr = errFake }, want: "the act failed", acts: []string{"enter", "top", "detach"}},
		{name: "still there after the unmount", change: func(f *fakeKernel, _ *Step) { f.keep = true },
			want: "mount 102 at /srv/vol is still in mnt:[9] after the unmount", acts: []string{"enter", "top", "detach"}},
		{name: "the table unreadable after the unmount", change: func(f *fakeKernel, _ *Step) { f.readAfter = errFake },
			want: "the act failed", acts: []string{"enter", "top", "detach"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, s := leakWorld()
			if tc.change != nil {
				tc.change(f, &s)
			}
			dir := t.TempDir()
			err := Checker{Origins: []string{"/proc/1/ns/mnt", "/proc/self/ns/mnt"}, acts: f}.applyHere(s, dir)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("err %v, want the copy released", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("err %v, want %q", err, tc.want)
			case tc.want != "" && IsNotLeak(err) != tc.notLeak:
				t.Errorf("err %v: a refusal %v, want %v", err, IsNotLeak(err), tc.notLeak)
			}
			if !slices.Equal(f.acts, tc.acts) {
				t.Errorf("acts %q, want %q", f.acts, tc.acts)
			}
			if f.open != 0 {
				t.Errorf("%d fds left open", f.open)
			}
			if tc.want == "" && f.enteredNS != 9 {
				t.Errorf("entered mnt:[%d], want mnt:[9]", f.enteredNS)
			}
			// The record says the copy was detached once the unmount
			// succeeded, also when the check after it fails.
			detached := slices.Contains(f.acts, "detach") && f.detachErr == nil
			rec, done := released(dir, 50, 202)
			if detached && (!done || rec.Unique != 202 || rec.MountID != 102 || rec.Where != "/srv/vol" || rec.Dev != event.MakeDev(0, 38) || rec.Released.IsZero()) {
				t.Errorf("the record %+v (%v), want the release of unique mount 202 done", rec, done)
			}
			if !detached && done {
				t.Errorf("a record %+v of a release that did not detach", rec)
			}
		})
	}
}

// A copy another release took first: its record in the copy's lock is
// the answer, whatever the tables show now.
func TestApplyQuotesTheFirstRelease(t *testing.T) {
	f, s := leakWorld()
	dir := t.TempDir()
	c := Checker{Origins: []string{"/proc/1/ns/mnt"}, acts: f}
	if err := c.applyHere(s, dir); err != nil {
		t.Fatal(err)
	}
	f.acts = nil
	err := c.applyHere(s, dir)
	if !IsNotLeak(err) || !strings.Contains(err.Error(), "released by") || !strings.Contains(err.Error(), "mount 102") {
		t.Fatalf("err %v, want the first release's record", err)
	}
	if len(f.acts) != 0 {
		t.Errorf("acts %q after the copy was gone, want none", f.acts)
	}
}

// A lock directory that cannot be made: no act.
func TestApplyWithoutALock(t *testing.T) {
	f, s := leakWorld()
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	err := Checker{Origins: []string{"/proc/1/ns/mnt"}, acts: f}.applyHere(s, filepath.Join(file, "locks"))
	if err == nil || !strings.Contains(err.Error(), "lock dir") || len(f.acts) != 0 {
		t.Fatalf("err %v, acts %q: want the lock dir's error and no act", err, f.acts)
	}
}

package release

import (
	"strings"
	"testing"

	"github.com/mntleak/mntleak/event"
)

// TestIdentifyDecides: Identify binds a planned step to the live
// namespace's birth id and the mount's unique id and proves its copy a
// leak, on the kernel's answers (a fake of its acts); every identity the
// step carries already is compared with the live one, and a copy gone is
// answered with the record of the release that took it.
func TestIdentifyDecides(t *testing.T) {
	for _, tc := range []struct {
		name    string
		change  func(*fakeKernel, *Step)
		taken   uint64 // the unique id of a copy an earlier release took (its record in the locks), or 0
		want    string // in the error ("" for bound)
		notLeak bool
	}{
		{name: "bound"},
		{name: "bound again, the same identities", change: func(_ *fakeKernel, s *Step) { s.NSID, s.Unique = 50, 202 }},
		{name: "the namespace file does not open", change: func(f *fakeKernel, _ *Step) { f.openErr = errFake }, want: "the act failed"},
		{name: "another namespace under the file", change: func(f *fakeKernel, _ *Step) { f.files["/proc/77/ns/mnt"] = [2]uint64{8, 50} },
			want: "/proc/77/ns/mnt names mnt:[8] now, not mnt:[9]", notLeak: true},
		{name: "the inode reused", change: func(f *fakeKernel, s *Step) { s.NSID = 49 },
			want: "mnt:[9] was born with id 50 (read through /proc/77/ns/mnt), not the planned 49: the inode was reused", notLeak: true},
		{name: "the table cannot be read", change: func(f *fakeKernel, _ *Step) { f.readErr = errFake }, want: "the act failed"},
		{name: "the mount id reused", change: func(f *fakeKernel, s *Step) { s.Unique = 201 },
			want: "mount 102 at /srv/vol in mnt:[9] (id 50) is unique mount 202 now, not the planned 201: the mount id was reused", notLeak: true},
		{name: "the mount id reused, the planned copy released", change: func(f *fakeKernel, s *Step) { s.Unique = 201 }, taken: 201,
			want: "released by", notLeak: true},
		{name: "no such mount", change: func(f *fakeKernel, s *Step) { s.MountID = 101 },
			want: "mnt:[9] (id 50) has no mount 101 at /srv/vol", notLeak: true},
		{name: "no mount at that point", change: func(f *fakeKernel, s *Step) { s.Where = "/srv/other" },
			want: "has no mount 102 at /srv/other", notLeak: true},
		{name: "gone, released", change: func(f *fakeKernel, _ *Step) { f.tables[50] = f.tables[50][:1] }, taken: 202,
			want: "released by", notLeak: true},
		{name: "the planned copy gone", change: func(f *fakeKernel, s *Step) { s.Unique = 202; f.tables[50] = f.tables[50][:1] },
			want: "has no mount 102 at /srv/vol", notLeak: true},
		{name: "not a leak", change: func(f *fakeKernel, _ *Step) {
			f.tables[4] = append(f.tables[4], Mount{ID: 300, OldID: 30, Dev: event.MakeDev(0, 38), Point: "/elsewhere", Root: "/", FSType: "tmpfs"})
		}, want: "not a leak: tmpfs 0:38 is still mounted in mnt:[1] (id 4) at /elsewhere", notLeak: true},
		{name: "not a leak any more, released meanwhile", change: func(f *fakeKernel, _ *Step) {
			f.tables[4] = append(f.tables[4], Mount{ID: 300, OldID: 30, Dev: event.MakeDev(0, 38), Point: "/elsewhere", Root: "/", FSType: "tmpfs"})
		}, taken: 202, want: "released by", notLeak: true},
		{name: "another device", change: func(f *fakeKernel, s *Step) { s.Dev = event.MakeDev(7, 0) },
			want: "mount 102 at /srv/vol is device 0:38, not the object's 7:0", notLeak: true},
		{name: "no device named", change: func(f *fakeKernel, s *Step) { s.Dev = 0 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, s := leakWorld()
			s.NSID, s.Unique = 0, 0
			if tc.change != nil {
				tc.change(f, &s)
			}
			c := Checker{Origins: []string{"/proc/1/ns/mnt", "/proc/self/ns/mnt"}, acts: f, locks: t.TempDir()}
			if tc.taken != 0 {
				l, err := lockCopy(c.locks, 50, tc.taken)
				if err != nil {
					t.Fatal(err)
				}
				l.begin(Record{MntNS: 9, NSID: 50, MountID: 102, Unique: tc.taken, Where: "/srv/vol", Dev: event.MakeDev(0, 38)})
				l.done()
				l.unlock()
			}
			err := c.Identify(&s)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("err %v, want the step bound", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("err %v, want %q", err, tc.want)
			case tc.want != "" && IsNotLeak(err) != tc.notLeak:
				t.Errorf("err %v: a refusal %v, want %v", err, IsNotLeak(err), tc.notLeak)
			}
			if f.open != 0 {
				t.Errorf("%d fds left open", f.open)
			}
			if len(f.acts) != 0 {
				t.Errorf("acts %q: Identify only reads", f.acts)
			}
			if tc.want != "" {
				return
			}
			if s.NSID != 50 || s.Unique != 202 || !strings.Contains(s.Proof, "copied when mnt:[9] (id 50) was made") || len(s.Below) != 0 {
				t.Errorf("step %+v, want birth id 50, unique 202, the batch proof, nothing below", s)
			}
		})
	}
}

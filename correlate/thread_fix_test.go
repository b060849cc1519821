package correlate_test

import (
	"strings"
	"testing"
	"time"

	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/procfs"
)

// A thread that keeps a namespace of its own and has its cwd (or root) in
// its copy of /srv/vol: an unmount through that thread (nsenter -t TID -m
// umount /srv/vol) fails with EBUSY while the thread works in the copy, so
// the fix must not offer it as a way out. What works is named instead: the
// copy goes when the process stops or that thread leaves it. A thread
// that keeps the namespace with its cwd elsewhere is still told to unmount
// through it (TestThreadEntryFix/elsewhere).
func TestThreadEntryFix(t *testing.T) {
	const priv = 97
	for _, tt := range []struct {
		name     string
		pin      *procfs.Pin
		want     []string
		wantNone []string
	}{
		{name: "cwd", pin: &procfs.Pin{Kind: procfs.PinCwd, Dev: event.MakeDev(7, 0), Path: "/srv/vol", TID: 61},
			want: []string{"prog[60] thread 61 has its cwd in the copy (cwd /srv/vol): unmounting it through that thread " +
				"(nsenter -t 61 -m umount /srv/vol) fails with EBUSY until it leaves; the copy goes when prog[60] stops or that thread leaves /srv/vol"},
			wantNone: []string{"or unmount the copy through that thread"}},
		{name: "root", pin: &procfs.Pin{Kind: procfs.PinRoot, Dev: event.MakeDev(7, 0), Path: "/srv/vol", TID: 61},
			want: []string{"prog[60] thread 61 has its root in the copy (root /srv/vol): unmounting it through that thread " +
				"(nsenter -t 61 -m umount /srv/vol) fails with EBUSY until it leaves; the copy goes when prog[60] stops or that thread leaves /srv/vol"},
			wantNone: []string{"or unmount the copy through that thread"}},
		{name: "elsewhere",
			want:     []string{"or unmount the copy through that thread, the one in mnt:[97]: nsenter -t 61 -m umount /srv/vol (nsenter -t 60 would enter its main thread's namespace)"},
			wantNone: []string{"EBUSY"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := threadKeptWorld(t, priv)
			if tt.pin != nil {
				pin := *tt.pin
				pin.Process = w.proc.procs[1]
				w.proc.pins = []procfs.Pin{pin}
			}
			w.proc.tables[hostNS] = hostWithoutVol
			w.send(umountEv(40, "umount", hostNS, "/srv/vol", 0))
			w.now = w.now.Add(3 * time.Second)
			w.send(exitEv(90, "true", hostNS))
			f := w.only()
			for _, want := range tt.want {
				if !strings.Contains(f.Fix, want) {
					t.Errorf("fix lacks %q:\n%s", want, f.Fix)
				}
			}
			for _, not := range tt.wantNone {
				if strings.Contains(f.Fix, not) {
					t.Errorf("fix has %q:\n%s", not, f.Fix)
				}
			}
		})
	}
}

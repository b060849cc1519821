package correlate_test

import (
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/correlate"
	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/finding"
	"github.com/mntleak/mntleak/procfs"
)

// TestKeptNamespaceBesideALiveHolder: two namespaces keep copies of
// /dev/loop0 after the node unmounted it: mnt:[80], where keeper[20] runs,
// and mnt:[95], where no process runs, kept only by pinner[60]'s open
// nsfs file (another program's pinned namespace fd). mkfs.ext4 fails with
// EBUSY: the finding names both, since stopping keeper[20] alone leaves the
// device busy (the oracle found mnt:[95] under load and the finding did
// not name it). Controls: each alone is named alone.
func TestKeptNamespaceBesideALiveHolder(t *testing.T) {
	const live, kept = 80, 95
	const copyTable = "110 109 254:0 / / rw - ext4 /dev/vda rw\n111 110 7:0 / /srv/vol rw - ext4 /dev/loop0 rw\n"
	for _, tc := range []struct {
		name       string
		live, kept bool
	}{
		{"both", true, true},
		{"the live one alone (control)", true, false},
		{"the kept one alone (control)", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			procs := []procfs.Process{proc(1, "systemd", hostNS, ""), proc(60, "pinner", hostNS, "")}
			if tc.live {
				procs = append(procs, proc(20, "keeper", live, ""))
			}
			w := newWorld(t, procs, map[uint32]string{hostNS: hostTable, live: copyTable})
			if tc.kept {
				w.proc.tables[kept] = copyTable
				w.proc.nsfiles = map[string]uint32{"/proc/60/fd/3": kept}
				w.proc.nsfds = []procfs.NSFD{{Process: proc(60, "pinner", hostNS, ""), FD: 3, NS: kept}}
			}
			w.proc.tables[hostNS] = hostWithoutVol
			w.send(umountEv(40, "umount", hostNS, "/srv/vol", 0))
			w.findings = nil
			w.send(failEv(50, "mkfs.ext4", hostNS, 257, "/dev/loop0", int64(unix.EBUSY)))
			failure := w.only()
			why := w.c.Why(correlate.Target{Path: "/dev/loop0", Dev: event.MakeDev(7, 0)}, w.now.Add(time.Second))
			for _, f := range []*finding.Finding{failure, why} {
				if f == nil {
					t.Fatal("why: nothing holds /dev/loop0")
				}
				holdersAre(t, f, tc.live, tc.kept)
			}
		})
	}
}

// holdersAre checks that f names the live namespace mnt:[80] and the kept
// one mnt:[95] as holders, as wanted, and no other.
func holdersAre(t *testing.T, f *finding.Finding, live, kept bool) {
	t.Helper()
	var got []uint32
	for _, h := range f.Holders {
		got = append(got, h.MntNS)
	}
	var want []uint32
	if live {
		want = append(want, 80)
	}
	if kept {
		want = append(want, 95)
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("%s: holders %v, want %v:\n%s", f.Kind, got, want, f.Line())
	}
}

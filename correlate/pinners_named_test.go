package correlate_test

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mntleak/mntleak/correlate"
	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/finding"
	"github.com/mntleak/mntleak/procfs"
)

// TestFixNamesThreePinnersThenHowManyMore: the holder of a private copy has
// exited and processes of the node keep its detached copy by open files.
// The fix names them, up to three, then how many more there are: the
// engineer sees whom to stop and that the list goes on.
func TestFixNamesThreePinnersThenHowManyMore(t *testing.T) {
	for _, tc := range []struct {
		pinners int
		want    string
	}{
		{3, "nothing runs in mnt:[80] any more; reader[61] (fd /file), reader[62] (fd /file), reader[63] (fd /file) keep the copy busy"},
		{4, "nothing runs in mnt:[80] any more; reader[61] (fd /file), reader[62] (fd /file), reader[63] (fd /file), +1 more keep the copy busy"},
		{5, "nothing runs in mnt:[80] any more; reader[61] (fd /file), reader[62] (fd /file), reader[63] (fd /file), +2 more keep the copy busy"},
	} {
		t.Run(strconv.Itoa(tc.pinners), func(t *testing.T) {
			const priv = 80
			w := newWorldOpts(t, correlate.Options{LeakSettle: 2 * time.Second}, []procfs.Process{proc(1, "systemd", hostNS, "")},
				map[uint32]string{hostNS: hostTable})
			w.send(unshareEv(20, "holder", hostNS, priv))
			w.proc.procs = append(w.proc.procs, proc(20, "holder", priv, ""))
			w.proc.tables[priv] = "110 109 254:0 / / rw - ext4 /dev/vda rw\n111 110 7:0 / /srv/vol rw - ext4 /dev/loop0 rw\n"
			w.proc.tables[hostNS] = hostWithoutVol
			w.send(umountEv(40, "umount", hostNS, "/srv/vol", 0))
			fd := 3
			for i := range tc.pinners {
				reader := proc(61+i, "reader", hostNS, "")
				w.proc.procs = append(w.proc.procs, reader)
				w.proc.pins = append(w.proc.pins, procfs.Pin{Process: reader, Kind: procfs.PinFD, Dev: event.MakeDev(7, 0), Path: "/file", FD: &fd})
			}
			w.proc.procs = slices.DeleteFunc(w.proc.procs, func(p procfs.Process) bool { return p.PID == 20 })
			delete(w.proc.tables, priv)
			w.send(exitEv(20, "holder", priv))
			w.now = w.now.Add(3 * time.Second)
			w.send(exitEv(90, "true", hostNS))
			f := w.only()
			if f.Kind != finding.KindLeak || !strings.HasPrefix(f.Fix, tc.want+": stop them or have them close it") {
				t.Errorf("want a leak whose fix starts %q:\n%s", tc.want, f.Line())
			}
		})
	}
}

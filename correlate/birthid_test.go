package correlate_test

import (
	"testing"

	"github.com/mntleak/mntleak/finding"
	"github.com/mntleak/mntleak/procfs"
)

// TestHolderCarriesBirthID: a holder whose namespace's creation the
// lineage saw (with the id the kernel gave it, NS_GET_MNTNS_ID) names that
// id, so that release --finding can tell the inode was reused since; one
// whose id was never read (a namespace that predates tracing) names none.
func TestHolderCarriesBirthID(t *testing.T) {
	tests := []struct {
		name string
		id   uint64 // the birth id its creation event recorded (0: none)
	}{
		{"a namespace created under tracing, its id read", 4378},
		{"a namespace whose id was never read (control)", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t, []procfs.Process{proc(1, "systemd", hostNS, "")}, map[uint32]string{hostNS: hostTable})
			created := unshareEv(20, "keeper", hostNS, 80)
			created.NewMntNSID = tt.id
			w.send(created)
			w.proc.procs = append(w.proc.procs, proc(20, "keeper", 80, ""))
			w.proc.tables[80] = "110 109 254:0 / / rw - ext4 /dev/vda rw\n111 110 7:0 / /srv/vol rw - ext4 /dev/loop0 rw\n"
			w.proc.tables[hostNS] = hostWithoutVol
			w.send(umountEv(1000, "umount", hostNS, "/srv/vol", 0))
			f := w.only()
			if f.Kind != finding.KindLeak || len(f.Holders) != 1 || f.Holders[0].MntNS != 80 || f.Holders[0].MntNSID != tt.id {
				t.Errorf("holders %+v, want mnt:[80] born with id %d: %s", f.Holders, tt.id, f.Line())
			}
		})
	}
}

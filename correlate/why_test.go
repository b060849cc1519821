package correlate_test

import (
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/correlate"
	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/finding"
	"github.com/mntleak/mntleak/procfs"
)

// whyWorld: a monitoring container binds / privately at /host and holds a
// copy of /dev/loop0's mount, which the host no longer has.
func whyWorld(t *testing.T, remember bool) *correlate.Correlator {
	t.Helper()
	root := "/var/lib/docker/overlay2/" + cid + "/merged"
	history := []*event.Event{
		unshareEv(1500, "runc", hostNS, 70),
		mountEv(1500, "runc", 70, "/", root+"/host", "", unix.MS_BIND|unix.MS_REC, 0),
		mountEv(1500, "runc", 70, "", root+"/host", "", unix.MS_REC|unix.MS_PRIVATE, 0),
	}
	at := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	for i, ev := range history {
		ev.Time = at.Add(time.Duration(i) * time.Second)
	}
	proc := &fakeProc{host: hostNS, blocks: map[string]event.Dev{"/dev/loop0": event.MakeDev(7, 0)},
		procs: []procfs.Process{proc(1, "systemd", hostNS, ""), proc(1500, "node_exporter", 70, "/docker/"+cid)},
		tables: map[uint32]string{
			hostNS: hostWithoutVol,
			70:     "100 99 0:90 / / rw - overlay overlay rw\n101 100 254:0 / /host rw - ext4 /dev/vda rw\n102 101 7:0 / /host/srv/vol rw - ext4 /dev/loop0 rw\n",
		}}
	c := correlate.New(proc, correlate.Options{}, func(*finding.Finding) {})
	if remember {
		for _, ev := range history {
			c.Remember(ev)
		}
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestWhyExplains(t *testing.T) {
	for _, remember := range []bool{false, true} {
		c := whyWorld(t, remember)
		f := c.Why(correlate.Target{Path: "/dev/loop0", Dev: event.MakeDev(7, 0)}, time.Date(2026, 11, 21, 13, 0, 0, 0, time.UTC))
		if f == nil {
			t.Fatal("nothing holds /dev/loop0")
		}
		if f.Kind != finding.KindHeld || f.Cause != finding.CauseRprivateBind || !holderNamed(f, "node_exporter") {
			t.Errorf("remember=%v: %s", remember, f.Line())
		}
		// From /proc alone the verdict is inferred; with the lineage it
		// cites runc's bind.
		if f.Inferred == remember || actorNamed(f, "runc") != remember {
			t.Errorf("remember=%v: inferred=%v, runc cited=%v: %s", remember, f.Inferred, actorNamed(f, "runc"), f.Line())
		}
		if !strings.HasPrefix(f.Line(), "HELD /dev/loop0 (7:0): still mounted in mnt:[70] at /host/srv/vol") {
			t.Errorf("line %s", f.Line())
		}
	}
	c := whyWorld(t, false)
	if f := c.Why(correlate.Target{Path: "/etc"}, time.Now()); f != nil {
		t.Errorf("/etc is held: %s", f.Line())
	}
}

package correlate_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/mntleak/mntleak/correlate"
	"github.com/mntleak/mntleak/finding"
	"github.com/mntleak/mntleak/procfs"
)

// TestTeardownSettlesAfterItsLastUnmount: an event that comes between the
// settle deadlines of one teardown's unmounts (50 ms apart) does not split
// it in two leak findings: the teardown settles 2 s after its last
// unmount (variants' TestOneLeakPerTeardown got two under load).
func TestTeardownSettlesAfterItsLastUnmount(t *testing.T) {
	w := teardownWorld(t)
	w.send(umountEv(40, "containerd", hostNS, "/srv/vol", 0))
	w.now = w.now.Add(-150 * time.Millisecond) // send adds 200 ms: the next unmount 50 ms later
	w.send(umountEv(40, "containerd", hostNS, "/srv/rootfs", 0))
	w.now = w.now.Add(1760 * time.Millisecond) // 2.01 s after the first unmount: past its deadline, before the second's
	w.send(exitEv(22, "true", hostNS))
	w.now = w.now.Add(time.Second)
	w.send(exitEv(23, "true", hostNS))
	var leaks []*finding.Finding
	for _, f := range w.findings {
		if f.Kind == finding.KindLeak {
			leaks = append(leaks, f)
		}
	}
	if len(leaks) != 1 || len(leaks[0].Others) != 1 {
		for _, f := range w.findings {
			t.Log(f.Line())
		}
		t.Fatalf("%d leak findings, want one naming both objects of the teardown", len(leaks))
	}
}

// A teardown's unmounts whose copies stay in different holder namespaces
// are not joined: the first settles at its own deadline, whatever the
// second's (mnt:[80] keeps /srv/vol, mnt:[81] /srv/rootfs).
func TestTeardownOfCopiesInOtherNamespacesSettlesEachAtItsOwnDeadline(t *testing.T) {
	w := teardownWorld(t)
	w.send(unshareEv(25, "agent2", hostNS, 81))
	w.proc.procs = append(w.proc.procs, proc(25, "agent2", 81, ""))
	w.proc.tables[80] = "110 109 254:0 / / rw - ext4 /dev/vda rw\n111 110 7:0 / /srv/vol rw - ext4 /dev/loop0 rw\n"
	w.proc.tables[81] = "120 119 254:0 / / rw - ext4 /dev/vda rw\n122 120 0:50 / /srv/rootfs rw - tmpfs overlay rw\n"
	w.send(exitEv(26, "true", 81))
	w.send(umountEv(40, "containerd", hostNS, "/srv/vol", 0))
	w.send(umountEv(40, "containerd", hostNS, "/srv/rootfs", 0))
	w.now = w.now.Add(1700 * time.Millisecond) // 2.1 s after the first unmount: past its deadline, before the second's
	w.send(exitEv(22, "true", hostNS))
	var got []string
	for _, f := range w.findings {
		got = append(got, string(f.Kind)+" "+f.Object.Path)
	}
	if want := []string{"leak /srv/vol"}; !slices.Equal(got, want) {
		t.Errorf("got %q past the first unmount's deadline, want %q", got, want)
	}
}

// One teardown's leak leads with the object the user cares about, and
// among objects that rank the same (three volumes), with the first
// unmounted; the others follow in the order they were unmounted.
func TestTeardownOfEqualObjectsLeadsWithTheFirstUnmounted(t *testing.T) {
	host := hostTable
	holder := "110 109 254:0 / / rw - ext4 /dev/vda rw\n"
	for i, name := range []string{"a", "b", "c"} {
		host += fmt.Sprintf("%d 1 0:5%d / /srv/%s rw shared:%d - tmpfs tmpfs rw\n", 5+i, i, name, 5+i)
		holder += fmt.Sprintf("%d 110 0:5%d / /srv/%s rw - tmpfs tmpfs rw\n", 112+i, i, name)
	}
	w := newWorldOpts(t, correlate.Options{LeakSettle: 2 * time.Second}, []procfs.Process{proc(1, "systemd", hostNS, "")},
		map[uint32]string{hostNS: host})
	w.send(unshareEv(20, "agent", hostNS, 80))
	w.proc.procs = append(w.proc.procs, proc(20, "agent", 80, ""))
	w.proc.tables[80] = holder
	w.send(exitEv(21, "true", 80))
	w.proc.tables[hostNS] = hostTable
	w.send(umountEv(40, "containerd", hostNS, "/srv/a", 0), umountEv(40, "containerd", hostNS, "/srv/b", 0), umountEv(40, "containerd", hostNS, "/srv/c", 0))
	w.now = w.now.Add(3 * time.Second)
	w.send(exitEv(22, "true", hostNS))
	f := w.only()
	got := []string{f.Object.Path}
	for _, o := range f.Others {
		got = append(got, o.Path)
	}
	if want := []string{"/srv/a", "/srv/b", "/srv/c"}; !slices.Equal(got, want) {
		t.Errorf("got the leak's objects %q, want %q", got, want)
	}
}

package correlate_test

import (
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/correlate"
	"github.com/mntleak/mntleak/finding"
	"github.com/mntleak/mntleak/procfs"
)

// TestParentMadePrivateOutlivesChurn: the event a private-parent verdict
// cites (dockerd made its root private, maybe days before the leak) stays
// in the history while another namespace's mount churn fills the history
// many times over. CI once got "leak unshare" here: another package's
// mount storm (3,000 bind/umount pairs a second) ran beside the scenario
// and pushed dockerd's MS_PRIVATE out of the 16,384 events kept.
func TestParentMadePrivateOutlivesChurn(t *testing.T) {
	const maxHistory = 64
	w := newWorldOpts(t, correlate.Options{MaxHistory: maxHistory}, []procfs.Process{proc(1, "systemd", hostNS, "/init.scope")}, map[uint32]string{hostNS: hostTable})
	privateParentWorld(w, stormOf(5*maxHistory))
	f := w.only()
	if f.Cause != finding.CausePrivateParent || f.Kind != finding.KindLeak {
		t.Fatalf("got %s %s, want leak private-parent:\n%s", f.Kind, f.Cause, f.Line())
	}
	if !actorNamed(f, "dockerd") {
		t.Errorf("no evidence event by dockerd: %s", f.Line())
	}
}

// TestRbindOutlivesChurn: the recursive bind and the MS_PRIVATE an
// rprivate-bind verdict cites (made at the container's start) stay in the
// history through another namespace's mount storm; by mount(2), and by
// open_tree+move_mount+mount_setattr.
func TestRbindOutlivesChurn(t *testing.T) {
	const maxHistory = 64
	for _, newAPI := range []bool{false, true} {
		t.Run(map[bool]string{false: "mount", true: "open_tree"}[newAPI], func(t *testing.T) {
			w := newWorldOpts(t, correlate.Options{MaxHistory: maxHistory}, []procfs.Process{proc(1, "systemd", hostNS, "")}, map[uint32]string{hostNS: hostTable})
			rprivateWorld(w, newAPI, stormOf(5*maxHistory))
			f := w.only()
			if f.Cause != finding.CauseRprivateBind || f.Kind != finding.KindLeak {
				t.Fatalf("got %s %s, want leak rprivate-bind:\n%s", f.Kind, f.Cause, f.Line())
			}
			// Not "made before tracing began": the bind was traced.
			if want := map[bool]string{false: "leaked by rbind / → …/merged/host + MS_REC|MS_PRIVATE by runc",
				true: "leaked by rbind / → /host + mount_setattr(MS_PRIVATE) by runc"}[newAPI]; !strings.Contains(f.Line(), want) {
				t.Errorf("the line does not cite the bind (%q):\n%s", want, f.Line())
			}
		})
	}
}

// stormOf returns a mount storm of n bind/umount pairs, a millisecond
// apart, by a process in a private namespace of its own (as
// cmd/mntleak's overload test makes beside the other packages).
func stormOf(n int) func(*world) {
	return func(w *world) {
		w.send(unshareEv(700, "storm", hostNS, 60))
		w.proc.procs = append(w.proc.procs, proc(700, "storm", 60, ""))
		w.proc.tables[60] = "120 119 254:0 / / rw - ext4 /dev/vda rw\n"
		for range n {
			w.sendEvery(time.Millisecond,
				mountEv(700, "storm", 60, "/tmp/storm/src", "/tmp/storm/dst", "", unix.MS_BIND, 0),
				umountEv(700, "storm", 60, "/tmp/storm/dst", 0))
		}
	}
}

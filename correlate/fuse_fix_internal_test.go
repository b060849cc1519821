package correlate

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/finding"
)

// restartFUSE is the tail of every dead-FUSE fix.
const restartFUSE = "; then restart the FUSE server (its pod or unit) so it mounts again"

// The lazy unmount of a dead FUSE mount's copy in another namespace is
// entered through a process still in it; through the bind of its nsfs file
// when none is left (or the one seen has exited); by mntleak release when
// nothing names a way in (a keeper without a file, as an open fd).
func TestDeadFuseFixEntersWhereTheCopyIs(t *testing.T) {
	agent := Member{PID: 70, Comm: "agent"}
	bound := &keeper{files: []string{"/run/ns/agent.mnt", "/proc/1/root/run/ns/agent.mnt"}}
	for _, tt := range []struct {
		name    string
		members []Member
		exited  time.Time
		kept    *keeper
		want    string
	}{
		{"a process in it", []Member{agent}, time.Time{}, bound,
			"unmount it lazily in mnt:[9]: nsenter -t 70 -m umount -l /srv/vol, or mntleak release"},
		{"its process exited", []Member{agent}, t0, bound,
			"unmount it lazily in mnt:[9]: nsenter --mount=/run/ns/agent.mnt umount -l /srv/vol, or mntleak release"},
		{"no process, a bind keeps it", nil, time.Time{}, bound,
			"unmount it lazily in mnt:[9]: nsenter --mount=/run/ns/agent.mnt umount -l /srv/vol, or mntleak release"},
		{"no process, an open fd keeps it", nil, time.Time{}, &keeper{}, "mntleak release detaches the copy in mnt:[9]"},
		{"no process, nothing known keeps it", nil, time.Time{}, nil, "mntleak release detaches the copy in mnt:[9]"},
	} {
		c := New(nil, Options{}, nil)
		n := c.lineage.Created(9, 1, OriginUnshare, agent, nil)
		for _, m := range tt.members {
			n.members[m.PID] = &m
		}
		m := match{ns: n, where: "/srv/vol", exited: tt.exited, kept: tt.kept}
		if got := c.fuseFix(&analysis{pins: map[uint32][]finding.PinRef{}}, m); got != tt.want+restartFUSE {
			t.Errorf("%s: fix %q, want %q", tt.name, got, tt.want+restartFUSE)
		}
	}
}

// A dead FUSE mount's copy in another namespace cites that namespace's
// creation when it was seen; the copy here, or one in a namespace whose
// creation was not seen, cites the mount, its fact and the server's exit.
func TestDeadFuseVerdictCitesTheCopysNamespace(t *testing.T) {
	fuseTable := "1 0 254:0 / / rw shared:1 - ext4 /dev/vda rw\n2 1 0:77 / /srv/vol rw shared:5 - fuse.sshfs host:/ rw,user_id=0,group_id=0\n"
	mounted := &event.Event{Kind: event.KindMount, PID: 66, Comm: "sshfs", MntNS: 1, Time: t0, Source: "host:/", Target: "/srv/vol", FSType: "fuse.sshfs"}
	killed := func(c *Correlator) {
		c.fuse.observe(mounted)
		c.fuse.observe(&event.Event{Kind: event.KindExit, PID: 66, Comm: "sshfs", Time: t0.Add(time.Second), ExitCode: int32(unix.SIGKILL)})
	}
	unshared := func(c *Correlator, n *Namespace) {
		killed(c)
		n.Creator = Member{PID: 70, Comm: "unshare"}
		n.Event = &event.Event{Kind: event.KindUnshare, PID: 70, Comm: "unshare", Time: t0.Add(-time.Minute), MntNSBefore: 1, MntNSAfter: 9}
	}
	for _, tt := range []struct {
		name  string
		world ruleWorld
		last  string // the last evidence
	}{
		{"a copy in a namespace seen made", ruleWorld{caller: fuseTable, setup: unshared}, "the copy's namespace created: unshare() by unshare[70] mnt:[1] → mnt:[9]"},
		{"a copy in a namespace that predates tracing", ruleWorld{caller: fuseTable, setup: func(c *Correlator, _ *Namespace) { killed(c) }}, "its server sshfs[66] was killed by SIGKILL"},
		{"the mount here", ruleWorld{self: true, caller: fuseTable, setup: func(c *Correlator, n *Namespace) { unshared(c, n) }}, "its server sshfs[66] was killed by SIGKILL"},
	} {
		tt.world.trigger = failing(event.KindUmount, unix.EBUSY, "/srv/vol")
		tt.world.history = []*event.Event{mounted}
		v, ok := tt.world.run(t, (*Correlator).ruleDeadFuseDaemon)
		if !ok {
			t.Errorf("%s: dead-fuse-daemon does not match", tt.name)
			continue
		}
		if got := v.evidence[len(v.evidence)-1].What; got != tt.last {
			t.Errorf("%s: last evidence %q, want %q", tt.name, got, tt.last)
		}
	}
}

// isFUSE: fuse, fuseblk and fuse.NAME are FUSE; fusectl (the control
// filesystem) and the rest are not.
func TestIsFUSE(t *testing.T) {
	for fstype, want := range map[string]bool{"fuse": true, "fuseblk": true, "fuse.sshfs": true, "fusectl": false, "ext4": false, "": false} {
		if got := isFUSE(fstype); got != want {
			t.Errorf("isFUSE(%q) = %v, want %v", fstype, got, want)
		}
	}
}

// exitWords reads a raw wait status: a signal, else the exit status.
func TestExitWordsReadsTheWaitStatus(t *testing.T) {
	for status, want := range map[int32]string{9: "was killed by SIGKILL", 3 << 8: "exited with status 3", 0x81: "was killed by SIGHUP"} {
		if got := exitWords(status); got != want {
			t.Errorf("exitWords(%#x) = %q, want %q", status, got, want)
		}
	}
}

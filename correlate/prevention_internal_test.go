package correlate

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/event"
)

// preventionOf is the prevention text the world's holding gets, and
// whether an event (a propagation change that made its parent private)
// came with it.
func preventionOf(t *testing.T, w ruleWorld) (string, bool) {
	t.Helper()
	v, cited := w.run(t, func(c *Correlator, a *analysis, m match) (verdict, bool) {
		s, ev := c.prevention(a, m)
		return verdict{summary: s}, ev != nil
	})
	return v.summary, cited
}

// slavedThenPrivate: in the holder (mnt:[9]) a recursive mount_setattr
// made / a slave, then mount --make-private /srv cut /srv off.
func slavedThenPrivate() []*event.Event {
	return []*event.Event{
		{Kind: event.KindMountSetattr, PID: 70, Comm: "unshare", MntNS: 9, Time: t0.Add(time.Second),
			Path: "/", Propagation: unix.MS_SLAVE, Flags: unix.AT_RECURSIVE},
		{Kind: event.KindMount, PID: 71, Comm: "mount", MntNS: 9, Time: t0.Add(2 * time.Second), Target: "/srv", Flags: unix.MS_PRIVATE},
	}
}

// A holder that made the parent of its copy private after a recursive
// slave change of / is told to keep it a slave, entered through its
// oldest member, or by its name when no process is in it.
func TestPreventionKeepsAParentMadePrivateASlave(t *testing.T) {
	const tail = " was made private in mnt:[9] after the namespace was copied as a slave: " +
		"no unmount reaches the copies below it; keep it a slave there ("
	withMember := func(c *Correlator, n *Namespace) {
		c.lineage.Join(9, 0, Member{PID: 77, StartTime: 770, Comm: "sleep"})
	}
	for _, tt := range []struct {
		name  string
		setup func(*Correlator, *Namespace)
		want  string
	}{
		{"with a member", withMember, "/srv" + tail + "nsenter -t 77 -m mount --make-rslave /srv)"},
		{"without members", nil, "/srv" + tail + "nsenter into mnt:[9] and run mount --make-rslave /srv)"},
	} {
		got, cited := preventionOf(t, ruleWorld{holder: srvParentHolder, setup: tt.setup, history: slavedThenPrivate()})
		if got != tt.want || !cited {
			t.Errorf("%s: prevention %q (event cited: %v), want %q (cited)", tt.name, got, cited, tt.want)
		}
	}
}

// A holder whose root is private but whose copy is a slave is already a
// slave: the fix is on the caller's side.
func TestPreventionOfASlaveCopyUnderAPrivateRoot(t *testing.T) {
	holder := "1 0 254:0 / / rw - ext4 /dev/vda rw\n2 1 7:0 / /srv/vol rw master:5 - ext4 /dev/loop0 rw\n"
	got, cited := preventionOf(t, ruleWorld{holder: holder})
	want := "mnt:[9] is already a slave: the unmount did not reach it because the mount above /srv/vol is private in the host; " +
		"make it shared there (mount --make-rshared the mount above /srv/vol) before such namespaces are created"
	if got != want || cited {
		t.Errorf("prevention %q (event cited: %v), want %q (none cited)", got, cited, want)
	}
}

package correlate

import (
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/finding"
	"github.com/mntleak/mntleak/procfs"
)

// The edges of the rules that TestCauseRules' one world per rule does not
// reach (docs/mutation.md, "Rule files, second part": each test here
// kills a mutant of a rule that the tests before it let live).

// srvParentHolder is a holder namespace whose /srv/vol lies on a mount of
// /srv, the parent a propagation change made private.
const srvParentHolder = "1 0 254:0 / / rw - ext4 /dev/vda rw\n5 1 254:0 /srv /srv rw - ext4 /dev/vda rw\n2 5 7:0 / /srv/vol rw - ext4 /dev/loop0 rw\n"

// unsharedAt makes the holder a namespace unshare[70] made at t0.
func unsharedAt(c *Correlator, n *Namespace) {
	n.Origin, n.Created = OriginUnshare, t0
	n.Creator = Member{PID: 70, Comm: "unshare"}
	n.Event = &event.Event{Kind: event.KindUnshare, PID: 70, Comm: "unshare", Time: t0}
}

// private-parent: the parent made private by mount_setattr (the new mount
// API: mount --make-private of util-linux 2.39), and a propagation change
// of the parent namespace's earlier generation, which does not count.
func TestPrivateParentMadeBySetattr(t *testing.T) {
	setattr := &event.Event{Kind: event.KindMountSetattr, PID: 60, Comm: "mount", MntNS: 1, Time: t0.Add(-time.Minute),
		Path: "/srv", Propagation: unix.MS_PRIVATE}
	v, ok := ruleWorld{holder: srvParentHolder, setup: unsharedAt, history: []*event.Event{setattr}}.run(t, (*Correlator).rulePrivateParent)
	if want := "mount[60] made /srv private"; !ok || !strings.Contains(v.summary, want) {
		t.Errorf("mount_setattr(MS_PRIVATE) of /srv: matched %v, summary %q; want %q", ok, v.summary, want)
	}
	slave := *setattr
	slave.Propagation = unix.MS_SLAVE
	if v, ok := (ruleWorld{holder: srvParentHolder, setup: unsharedAt, history: []*event.Event{&slave}}).run(t, (*Correlator).rulePrivateParent); ok {
		t.Errorf("mount_setattr(MS_SLAVE) of /srv is taken for making it private: %q", v.summary)
	}
	other := *setattr
	other.Path = "/var"
	if v, ok := (ruleWorld{holder: srvParentHolder, setup: unsharedAt, history: []*event.Event{&other}}).run(t, (*Correlator).rulePrivateParent); ok {
		t.Errorf("mount_setattr(MS_PRIVATE) of /var is taken for making /srv private: %q", v.summary)
	}
}

// The parent namespace now is a later generation (made at t0-30s, its
// inode reused): the propagation change a minute before t0 was made in
// the earlier one and says nothing of the parent the holder copied.
func TestPrivateParentOfAnEarlierGeneration(t *testing.T) {
	made := &event.Event{Kind: event.KindMount, PID: 60, Comm: "mount", MntNS: 1, Time: t0.Add(-time.Minute), Target: "/srv", Flags: unix.MS_PRIVATE}
	reborn := func(c *Correlator, n *Namespace) {
		unsharedAt(c, n)
		c.lineage.Get(1).Created = t0.Add(-30 * time.Second)
	}
	if v, ok := (ruleWorld{holder: srvParentHolder, setup: reborn, history: []*event.Event{made}}).run(t, (*Correlator).rulePrivateParent); ok {
		t.Errorf("a propagation change of the parent's earlier generation is cited: %q", v.summary)
	}
}

// rootfs-held reads the container from containerd's task bundle path:
// STATE/io.containerd.runtime.v2.task/NAMESPACE/ID/rootfs, whatever STATE
// is (also /, the bundle directory at the path's start).
func TestRootfsHeldTaskPath(t *testing.T) {
	for _, tt := range []struct {
		path string
		want task
		ok   bool
	}{
		{"/run/containerd/io.containerd.runtime.v2.task/k8s.io/abc/rootfs", task{"k8s.io", "abc"}, true},
		{"/io.containerd.runtime.v2.task/moby/abc/rootfs", task{"moby", "abc"}, true},
		{"/run/containerd/io.containerd.runtime.v2.task/k8s.io/abc/rootfs/proc", task{}, false},
		{"/run/containerd/io.containerd.runtime.v2.task//abc/rootfs", task{}, false},
		{"/run/containerd/io.containerd.runtime.v2.task/k8s.io//rootfs", task{}, false},
		{"/run/containerd/io.containerd.runtime.v2.task/k8s.io/abc/work", task{}, false},
		{"/run/containerd/k8s.io/abc/rootfs", task{}, false},
	} {
		if got, ok := containerdTask(tt.path); got != tt.want || ok != tt.ok {
			t.Errorf("containerdTask(%s) = %+v %v, want %+v %v", tt.path, got, ok, tt.want, tt.ok)
		}
	}
}

// The mount rootfs-held cites is the last successful mount that made
// something at the rootfs in the caller's namespace before the call: not
// a failed one, another namespace's, a remount, one of another path, one
// after the call, nor an unmount; also when it is the history's first.
func TestRootfsHeldCitesItsMount(t *testing.T) {
	const rootfs = "/run/containerd/io.containerd.runtime.v2.task/k8s.io/abc/rootfs"
	c := New(noCommands{}, Options{}, func(*finding.Finding) {})
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	made := &event.Event{Kind: event.KindMount, PID: 40, Comm: "containerd-shim", MntNS: 1, Time: at(1), Source: "overlay", Target: rootfs, FSType: "overlay"}
	call := &event.Event{Kind: event.KindUmount, PID: 41, Comm: "containerd-shim", MntNS: 1, Time: at(10), Target: rootfs, Ret: -int64(unix.EBUSY)}
	for _, ev := range []*event.Event{
		made,
		{Kind: event.KindMount, PID: 42, Comm: "failed", MntNS: 1, Time: at(2), Source: "overlay", Target: rootfs, Ret: -int64(unix.EINVAL)},
		{Kind: event.KindMount, PID: 43, Comm: "elsewhere", MntNS: 9, Time: at(3), Source: "overlay", Target: rootfs},
		{Kind: event.KindMount, PID: 44, Comm: "remount", MntNS: 1, Time: at(4), Target: rootfs, Flags: unix.MS_REMOUNT},
		{Kind: event.KindMount, PID: 45, Comm: "other", MntNS: 1, Time: at(5), Source: "overlay", Target: rootfs + "/proc"},
		{Kind: event.KindUmount, PID: 46, Comm: "umount", MntNS: 1, Time: at(6), Target: rootfs, Ret: -int64(unix.EBUSY)},
		{Kind: event.KindOpenTree, PID: 47, Comm: "open_tree", MntNS: 1, Time: at(7), Path: rootfs, Target: rootfs},
		{Kind: event.KindMount, PID: 48, Comm: "later", MntNS: 1, Time: at(11), Source: "overlay", Target: rootfs},
	} {
		c.ledger.Record(ev)
	}
	if got := c.mountIn(1, rootfs, call); got != made {
		t.Errorf("mountIn cites %+v, want containerd-shim[40]'s mount at %s", got, finding.Clock(made.Time))
	}
}

// restartedFrom makes the holder (mnt:[9]) the namespace creator made at
// t0, with past its members that left and members those that stay, and
// the caller's mnt:[12] the one dockerd[90] made by unshare after a
// restart: mountflags-restart's world.
func restartedFrom(creator Member, past []Member, members ...Member) func(c *Correlator, old *Namespace) {
	return func(c *Correlator, old *Namespace) {
		old.Origin, old.Created, old.Creator = OriginUnshare, t0, creator
		old.Event = &event.Event{Kind: event.KindUnshare, PID: uint32(creator.PID), Comm: creator.Comm, Time: t0}
		old.past = past
		old.members = map[int]*Member{}
		for _, m := range members {
			old.members[m.PID] = &m
		}
		cur := c.lineage.Created(12, 1, OriginUnshare, Member{PID: 90, Comm: "dockerd"}, &event.Event{Kind: event.KindUnshare, PID: 90, Comm: "dockerd", Time: t0.Add(30 * time.Second)})
		cur.Created = t0.Add(30 * time.Second)
	}
}

// restartedCall is dockerd's unmount after the restart, from mnt:[12].
var restartedCall = &event.Event{Kind: event.KindUmount, PID: 91, Comm: "dockerd", MntNS: 12, Ret: -int64(unix.EINVAL), Time: t0.Add(time.Minute), Target: "/srv/vol"}

// mountflags-restart needs the same daemon in both generations: the old
// namespace made by its wrapper (systemd's "(dockerd)") whose past
// members ran as the daemon is one; a namespace another daemon made is
// not, whoever left it.
func TestMountflagsRestartOfAnotherDaemon(t *testing.T) {
	wrapper := restartedFrom(Member{PID: 80, Comm: "(dockerd)"}, []Member{{PID: 80, Comm: "dockerd"}})
	v, ok := ruleWorld{holder: privateHolder, setup: wrapper, trigger: restartedCall}.run(t, (*Correlator).ruleMountflagsRestart)
	if want := "dockerd was restarted into a new namespace"; !ok || !strings.Contains(v.summary, want) {
		t.Errorf("made by (dockerd), dockerd[80] left it: matched %v, summary %q; want %q", ok, v.summary, want)
	}
	other := restartedFrom(Member{PID: 80, Comm: "containerd"}, []Member{{PID: 81, Comm: "containerd-shim"}})
	if v, ok := (ruleWorld{holder: privateHolder, setup: other, trigger: restartedCall}).run(t, (*Correlator).ruleMountflagsRestart); ok {
		t.Errorf("a namespace containerd made is taken for dockerd's first generation: %q", v.summary)
	}
}

// The survivors of the first generation, in the summary, the evidence and
// the fix's nsenter: none, one ("keeps"), two ("keep").
func TestMountflagsRestartSurvivors(t *testing.T) {
	dockerd := Member{PID: 80, Comm: "dockerd"}
	shim := Member{PID: 100, StartTime: 1000, Comm: "containerd-shim"}
	shim2 := Member{PID: 101, StartTime: 1010, Comm: "containerd-shim"}
	for _, tt := range []struct {
		name     string
		members  []Member
		summary  string // how the summary ends
		evidence string // the survivors' evidence, "" for none
		fix      string
	}{
		{"none", nil, "since 10:00:30.000", "",
			"nsenter -t <pid in mnt:[9]> -m umount /srv/vol"},
		{"one", []Member{shim}, "; containerd-shim[100] survived the restart (live-restore) and keeps mnt:[9] alive with the mount",
			"survivors in mnt:[9]: containerd-shim[100]", "nsenter -t 100 -m umount /srv/vol"},
		{"two", []Member{shim, shim2}, "; containerd-shim[100], containerd-shim[101] survived the restart (live-restore) and keep mnt:[9] alive with the mount",
			"survivors in mnt:[9]: containerd-shim[100], containerd-shim[101]", "nsenter -t 100 -m umount /srv/vol"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := ruleWorld{holder: privateHolder, setup: restartedFrom(dockerd, nil, tt.members...), trigger: restartedCall}
			v, ok := w.run(t, (*Correlator).ruleMountflagsRestart)
			if !ok || !strings.HasSuffix(v.summary, tt.summary) || !strings.Contains(v.fix, tt.fix) {
				t.Fatalf("matched %v, summary %q fix %q; want the summary to end %q, the fix to say %q", ok, v.summary, v.fix, tt.summary, tt.fix)
			}
			var said string
			for _, e := range v.evidence {
				if strings.HasPrefix(e.What, "survivors in ") {
					said = e.What
				}
			}
			if said != tt.evidence {
				t.Errorf("the survivors' evidence %q, want %q", said, tt.evidence)
			}
		})
	}
}

// commandsOf answers Command from cmds; no process otherwise.
type commandsOf struct {
	procfs.Proc
	cmds map[int]procfs.Command
}

func (p commandsOf) Command(pid int) (procfs.Command, error) {
	if c, ok := p.cmds[pid]; ok {
		return c, nil
	}
	return procfs.Command{}, os.ErrNotExist
}

// What a namespace's creator runs as now (mountflags-restart compares the
// daemon of both generations by it): its executable's name, cut to
// comm's 15 bytes, while it lives and /proc answers; else its comm.
func TestMountflagsRestartDaemonName(t *testing.T) {
	c := New(commandsOf{cmds: map[int]procfs.Command{
		90: {Exe: "/usr/bin/dockerd"},
		91: {Exe: "/usr/local/bin/kube-controller-manager (deleted)"},
		92: {},
	}}, Options{}, func(*finding.Finding) {})
	for _, tt := range []struct {
		creator Member
		gone    bool
		want    string
	}{
		{Member{PID: 90, Comm: "(dockerd)"}, false, "dockerd"},
		{Member{PID: 91, Comm: "(kube-controlle"}, false, "kube-controller"},
		{Member{PID: 92, Comm: "(dockerd)"}, false, "(dockerd)"}, // no executable said
		{Member{PID: 93, Comm: "(dockerd)"}, false, "(dockerd)"}, // no such process
		{Member{PID: 90, Comm: "(dockerd)"}, true, "(dockerd)"},  // its pid means nothing now
		{Member{Comm: "containerd"}, false, "containerd"},        // no pid known
	} {
		n := &Namespace{Ino: 12, Creator: tt.creator, creatorGone: tt.gone}
		if got := c.runningAs(n); got != tt.want {
			t.Errorf("creator %s[%d] (gone %v) runs as %q, want %q", tt.creator.Comm, tt.creator.PID, tt.gone, got, tt.want)
		}
	}
}

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

// ruleWorld is one rule's evidence, built directly: the tables of the
// caller (ns 1, the host) and the holder (ns 9), the namespaces, history.
type ruleWorld struct {
	holder  string // the holder's mountinfo
	caller  string // the caller's mountinfo
	self    bool   // the holding is the caller's own namespace
	where   string // where the holder has the copy; default /srv/vol
	trigger *event.Event
	pins    []finding.PinRef
	history []*event.Event
	setup   func(c *Correlator, holder *Namespace)
	// asked: the trigger is a question (why, release) asked where the
	// caller still has /srv/vol mounted.
	asked bool
}

var t0 = time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)

const hostTable = "1 0 254:0 / / rw shared:1 - ext4 /dev/vda rw\n2 1 7:0 / /srv/vol rw shared:5 - ext4 /dev/loop0 rw\n"

func failing(kind event.Kind, errno unix.Errno, path string) *event.Event {
	ev := &event.Event{Kind: kind, PID: 50, Comm: "umount", MntNS: 1, Ret: -int64(errno), Time: t0.Add(time.Minute), Target: path, Path: path}
	if kind == event.KindMount {
		ev.Source, ev.Target = path, "/c/dst"
	}
	return ev
}

func (w ruleWorld) run(t *testing.T, try func(*Correlator, *analysis, match) (verdict, bool)) (verdict, bool) {
	t.Helper()
	c := New(noCommands{}, Options{}, func(*finding.Finding) {})
	c.hostNS = 1
	c.lineage.Created(1, 0, OriginPredates, Member{PID: 1, Comm: "init"}, nil)
	ns := uint32(9)
	if w.self {
		ns = 1
	}
	holder := c.lineage.Get(ns)
	if holder == nil {
		holder = c.lineage.Created(ns, 1, OriginPredates, Member{}, nil)
	}
	if w.setup != nil {
		w.setup(c, holder)
	}
	callerText := firstNonEmpty(w.caller, hostTable)
	c.ledger.Store(table(t, 1, callerText))
	ht := table(t, ns, firstNonEmpty(w.holder, callerText))
	if !w.self {
		c.ledger.Store(ht)
	} else {
		ht = c.ledger.Table(1)
	}
	for _, ev := range w.history {
		c.ledger.Record(ev)
	}
	trig := w.trigger
	if trig == nil {
		trig = failing(event.KindUmount, unix.EINVAL, "/srv/vol")
	}
	a := &analysis{trigger: trig, caller: trig.MntNS, pins: map[uint32][]finding.PinRef{ns: w.pins}}
	if w.asked {
		a.trigger = &event.Event{Kind: event.KindFailure, SyscallNr: -1, Syscall: "why", MntNS: 1, Time: t0.Add(time.Minute), Path: "/srv/vol"}
		a.own = c.ledger.Table(1).At("/srv/vol")
	}
	where := firstNonEmpty(w.where, "/srv/vol")
	if trig.Kind == event.KindMount {
		where = trig.Source
	}
	return try(c, a, match{ns: holder, table: ht, mount: ht.At(where), where: where, self: w.self})
}

const privateHolder = "1 0 254:0 / / rw - ext4 /dev/vda rw\n2 1 7:0 / /srv/vol rw - ext4 /dev/loop0 rw\n"

// Each rule of the cause table on its own: the world it matches, and the
// nearest world it must not match.
func TestCauseRules(t *testing.T) {
	unshared := func(c *Correlator, n *Namespace) {
		n.Origin, n.Created = OriginUnshare, t0
		n.Creator = Member{PID: 70, Comm: "unshare"}
		n.Event = &event.Event{Kind: event.KindUnshare, PID: 70, Comm: "unshare", Time: t0}
	}
	restarted := func(c *Correlator, old *Namespace) {
		old.Origin, old.Created, old.Creator = OriginUnshare, t0, Member{PID: 80, Comm: "dockerd"}
		old.Event = &event.Event{Kind: event.KindUnshare, PID: 80, Comm: "dockerd", Time: t0}
		cur := c.lineage.Created(12, 1, OriginUnshare, Member{PID: 90, Comm: "dockerd"}, &event.Event{Kind: event.KindUnshare, PID: 90, Comm: "dockerd", Time: t0.Add(30 * time.Second)})
		cur.Created = t0.Add(30 * time.Second)
	}
	busyUmount := failing(event.KindUmount, unix.EBUSY, "/srv/vol")
	stale := failing(event.KindMount, unix.ENOENT, "/srv/vol")
	pin := []finding.PinRef{{ProcRef: finding.ProcRef{PID: 77, Comm: "sleep"}, MntNS: 9, Pin: "cwd", Path: "/srv/vol"}}
	fuseTable := "1 0 254:0 / / rw shared:1 - ext4 /dev/vda rw\n2 1 0:77 / /srv/vol rw shared:5 - fuse.sshfs host:/ rw,user_id=0,group_id=0\n"
	fuseMount := &event.Event{Kind: event.KindMount, PID: 66, Comm: "sshfs", MntNS: 1, Time: t0, Source: "host:/", Target: "/srv/vol", FSType: "fuse.sshfs"}
	fuseServed := func(c *Correlator, _ *Namespace) { c.fuse.observe(fuseMount) }
	fuseKilled := func(c *Correlator, n *Namespace) {
		fuseServed(c, n)
		c.fuse.observe(&event.Event{Kind: event.KindExit, PID: 66, Comm: "sshfs", Time: t0.Add(time.Second), ExitCode: int32(unix.SIGKILL)})
	}
	rootfs := "/run/containerd/io.containerd.runtime.v2.task/k8s.io/abc/rootfs"
	rootfsTable := "1 0 254:0 / / rw shared:1 - ext4 /dev/vda rw\n2 1 0:40 / " + rootfs + " rw shared:5 - overlay overlay rw\n"
	agent := []finding.PinRef{{ProcRef: finding.ProcRef{PID: 78, Comm: "agent"}, MntNS: 1, Pin: "cwd", Path: rootfs + "/var/log"}}
	privParent := &event.Event{Kind: event.KindMount, PID: 60, Comm: "mount", MntNS: 1, Time: t0.Add(-time.Minute), Target: "/srv", Flags: unix.MS_PRIVATE}
	twiceMounted := []*event.Event{
		{Kind: event.KindMount, PID: 40, Comm: "csi-node", MntNS: 1, Time: t0.Add(-time.Minute), Source: "/dev/loop0", Target: "/srv/staging", FSType: "ext4"},
		{Kind: event.KindMount, PID: 40, Comm: "csi-node", MntNS: 1, Time: t0.Add(-59 * time.Second), Source: "/dev/loop0", Target: "/srv/vol", FSType: "ext4"},
		{Kind: event.KindUmount, PID: 41, Comm: "kubelet", MntNS: 1, Time: t0.Add(-58 * time.Second), Target: "/srv/staging"},
	}
	tests := []struct {
		cause    finding.Cause
		match    ruleWorld
		miss     ruleWorld
		contains string // in the summary of the match
	}{
		{finding.CauseStaleBind,
			ruleWorld{self: true, trigger: stale, caller: "1 0 254:0 / / rw - ext4 /dev/vda rw\n2 1 254:0 /cm/key//deleted /srv/vol rw - ext4 /dev/vda rw\n"},
			ruleWorld{self: true, trigger: stale}, // the source is there
			"which has since been deleted"},
		{finding.CauseDeadFuseDaemon,
			ruleWorld{self: true, caller: fuseTable, trigger: busyUmount, history: []*event.Event{fuseMount}, setup: fuseKilled},
			ruleWorld{self: true, caller: fuseTable, trigger: busyUmount, history: []*event.Event{fuseMount}, setup: fuseServed}, // its server runs
			"sshfs[66] served it from 10:00:00.000 and was killed by SIGKILL"},
		{finding.CauseBusyCopy,
			ruleWorld{holder: privateHolder, trigger: busyUmount, pins: pin},
			ruleWorld{holder: privateHolder, trigger: busyUmount}, // nothing pins the copy
			"which is busy: sleep[77] (cwd /srv/vol)"},
		{finding.CauseRootfsHeld,
			ruleWorld{self: true, caller: rootfsTable, where: rootfs, trigger: failing(event.KindUmount, unix.EBUSY, rootfs), pins: agent},
			ruleWorld{self: true, trigger: busyUmount, pins: agent}, // not a container's rootfs
			"agent[78] has its cwd at " + rootfs + "/var/log, in the rootfs of container abc (containerd namespace k8s.io)"},
		{finding.CauseDoubleMount,
			ruleWorld{self: true, history: twiceMounted},
			ruleWorld{self: true, history: twiceMounted[:2]}, // both mounts stay: nothing was unmounted
			"csi-node[40] mounted /dev/loop0 at /srv/staging at 09:59:00.000 and csi-node[40] mounted it again at /srv/vol at 09:59:01.000; kubelet[41] unmounted /srv/staging"},
		{finding.CauseSharedPropagation,
			ruleWorld{self: true, history: []*event.Event{{Kind: event.KindMount, PID: 40, Comm: "mount", MntNS: 9, Time: t0, Source: "/dev/loop0", Target: "/srv/vol"}}},
			ruleWorld{self: true, history: []*event.Event{{Kind: event.KindMount, PID: 40, Comm: "mount", MntNS: 1, Time: t0, Source: "/dev/loop0", Target: "/srv/vol"}}}, // mounted here
			"propagated to /srv/vol here"},
		{finding.CauseInUse,
			ruleWorld{self: true},
			ruleWorld{holder: privateHolder}, // another namespace's copy
			"not a leak"},
		{finding.CausePrivateTmp,
			ruleWorld{holder: privateHolder + "3 1 254:0 /tmp/systemd-private-0123456789abcdef0123456789abcdef-ntpd.service-AbCdEf/tmp /tmp rw - ext4 /dev/vda rw\n"},
			ruleWorld{holder: privateHolder + "3 1 254:0 /tmp/other/tmp /tmp rw - ext4 /dev/vda rw\n"},
			"PrivateTmp namespace of ntpd.service"},
		{finding.CauseRprivateBind,
			ruleWorld{where: "/host/srv/vol", holder: "1 0 254:0 / / rw - ext4 /dev/vda rw\n2 1 254:0 / /host rw - ext4 /dev/vda rw\n3 2 7:0 / /host/srv/vol rw - ext4 /dev/loop0 rw\n"},
			ruleWorld{where: "/host/srv/vol", holder: "1 0 254:0 / / rw - ext4 /dev/vda rw\n2 1 254:0 / /host rw master:1 - ext4 /dev/vda rw\n3 2 7:0 / /host/srv/vol rw master:5 - ext4 /dev/loop0 rw\n"}, // rslave
			"leaked by a private recursive bind of / at /host"},
		{finding.CauseMountflagsRestart,
			ruleWorld{holder: privateHolder, setup: restarted, trigger: &event.Event{Kind: event.KindUmount, PID: 91, Comm: "dockerd", MntNS: 12, Ret: -int64(unix.EINVAL), Time: t0.Add(time.Minute), Target: "/srv/vol"}},
			ruleWorld{holder: privateHolder, setup: unshared}, // the caller is the host
			"was restarted into a new namespace"},
		{finding.CausePrivateParent,
			ruleWorld{holder: "1 0 254:0 / / rw - ext4 /dev/vda rw\n5 1 254:0 /srv /srv rw - ext4 /dev/vda rw\n2 5 7:0 / /srv/vol rw - ext4 /dev/loop0 rw\n", setup: unshared, history: []*event.Event{privParent}},
			ruleWorld{holder: "1 0 254:0 / / rw - ext4 /dev/vda rw\n5 1 254:0 /srv /srv rw - ext4 /dev/vda rw\n2 5 7:0 / /srv/vol rw - ext4 /dev/loop0 rw\n", setup: unshared}, // no one made it private
			"made /srv private"},
		{finding.CauseUnshare,
			ruleWorld{holder: privateHolder, setup: unshared},
			ruleWorld{holder: privateHolder}, // no creator known
			"was created by unshare[70] (unshare)"},
		{finding.CauseUnknown,
			ruleWorld{holder: privateHolder},
			ruleWorld{}, // the last rule always matches: no miss
			"holds a copy"},
	}
	c := New(nil, Options{}, func(*finding.Finding) {})
	if len(tests) != len(c.rules) {
		t.Fatalf("%d rules tested, the table has %d", len(tests), len(c.rules))
	}
	for i, tt := range tests {
		r := c.rules[i]
		t.Run(tt.cause.String(), func(t *testing.T) {
			if r.cause != tt.cause {
				t.Fatalf("rule %d concludes %s, want %s (the table's order)", i, r.cause, tt.cause)
			}
			if info := r.cause.Info(); info.Needs == "" || info.Fix == "" {
				t.Errorf("rule %s does not say what it needs or its fix", r.cause)
			}
			v, ok := tt.match.run(t, r.try)
			if !ok || !strings.Contains(v.summary, tt.contains) || v.fix == "" {
				t.Errorf("on its evidence: matched %v, summary %q fix %q; want %q in the summary", ok, v.summary, v.fix, tt.contains)
			}
			if tt.cause == finding.CauseUnknown {
				return
			}
			if v, ok := tt.miss.run(t, r.try); ok {
				t.Errorf("matched without its evidence: %q", v.summary)
			}
		})
	}
}

// noCommands answers no /proc question: a rule that asks goes on without.
type noCommands struct{ procfs.Proc }

func (noCommands) Command(int) (procfs.Command, error) { return procfs.Command{}, os.ErrNotExist }

// The table: every cause once, in the order the causes are declared (the
// cause table's, finding.Causes), the last row catches all.
func TestCauseTable(t *testing.T) {
	c := New(nil, Options{}, func(*finding.Finding) {})
	seen := map[finding.Cause]int{}
	causes := finding.Causes()
	for i, r := range c.rules {
		if i >= len(causes) || r.cause != causes[i] {
			t.Errorf("rule %d concludes %s: the rules are not in the causes' order %v", i, r.cause, causes)
		}
		if prev, ok := seen[r.cause]; ok {
			t.Errorf("%s concluded by rules %d and %d", r.cause, prev, i)
		}
		seen[r.cause] = i
		if c.rankOf(r.cause) != i {
			t.Errorf("rank of %s = %d, want its row %d", r.cause, c.rankOf(r.cause), i)
		}
	}
	for _, cause := range finding.Causes() {
		if _, ok := seen[cause]; !ok {
			t.Errorf("no rule concludes %s", cause)
		}
	}
	if last := c.rules[len(c.rules)-1].cause; last != finding.CauseUnknown {
		t.Errorf("last rule %s, want unknown", last)
	}
}

// The fix names the tool that made the bind, from the holder's cgroups.
func TestMadeBy(t *testing.T) {
	id := "5f2c0e1a9b8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d9c8b7a6f5e4d3c2b"
	tests := []struct {
		cgroup string
		pod    string
		docker bool
		unit   string
	}{
		{"/kubepods/burstable/pod0c2f3a1e-7d4b-4c3e-9a1f-2b3c4d5e6f70/" + id, "0c2f3a1e-7d4b-4c3e-9a1f-2b3c4d5e6f70", false, ""},
		{"/docker/" + id, "", true, ""},
		{"/system.slice/docker-" + id + ".scope", "", true, ""},
		{"/system.slice/ntpd.service", "", false, "ntpd.service"},
		{"/", "", false, ""},
	}
	c := New(nil, Options{}, func(*finding.Finding) {})
	for _, tt := range tests {
		n := &Namespace{Ino: 9, Creator: Member{PID: 1, Cgroup: tt.cgroup}, members: map[int]*Member{}}
		if pod, docker, unit := c.madeBy(match{ns: n}); pod != tt.pod || docker != tt.docker || unit != tt.unit {
			t.Errorf("%s: pod %q docker %v unit %q, want %q %v %q", tt.cgroup, pod, docker, unit, tt.pod, tt.docker, tt.unit)
		}
	}
}

// Asked (why, release) before anyone tried: an unmount where the caller
// has the object mounted would reach a slave or peer copy a process works
// in (busy-copy); a private copy it would not reach, and a copy nobody
// pins is no reason for the unmount to fail.
func TestBusyCopyAsked(t *testing.T) {
	pin := []finding.PinRef{{ProcRef: finding.ProcRef{PID: 77, Comm: "sleep"}, MntNS: 9, Pin: "cwd", Path: "/srv/vol"}}
	slave := "1 0 254:0 / / rw master:1 - ext4 /dev/vda rw\n2 1 7:0 / /srv/vol rw master:5 - ext4 /dev/loop0 rw\n"
	peer := "1 0 254:0 / / rw shared:1 - ext4 /dev/vda rw\n2 1 7:0 / /srv/vol rw shared:5 - ext4 /dev/loop0 rw\n"
	otherGroup := "1 0 254:0 / / rw master:1 - ext4 /dev/vda rw\n2 1 7:0 / /srv/vol rw master:6 - ext4 /dev/loop0 rw\n"
	for _, tt := range []struct {
		name string
		w    ruleWorld
		want bool
	}{
		{"a slave copy, pinned", ruleWorld{asked: true, pins: pin, holder: slave}, true},
		{"a peer copy, pinned", ruleWorld{asked: true, pins: pin, holder: peer}, true},
		{"a private copy, pinned", ruleWorld{asked: true, pins: pin, holder: privateHolder}, false},
		{"a slave of another group, pinned", ruleWorld{asked: true, pins: pin, holder: otherGroup}, false},
		{"a slave copy, not pinned", ruleWorld{asked: true, holder: slave}, false},
		{"not asked", ruleWorld{pins: pin, holder: slave}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			v, ok := tt.w.run(t, (*Correlator).ruleBusyCopy)
			if ok != tt.want || (ok && !strings.Contains(v.summary, "an unmount of /srv/vol here propagates to the copy in mnt:[9]")) {
				t.Errorf("matched %v (%q), want %v", ok, v.summary, tt.want)
			}
		})
	}
}

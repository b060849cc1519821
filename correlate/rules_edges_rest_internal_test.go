package correlate

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/event"
)

// The edges of the rules the tool reached last (docs/mutation.md, "Rule
// files, third part"): rule_shared_propagation, rule_stale_bind,
// rule_double_mount, rule_unknown and the rest of rule_rootfs_held. Each
// test here kills a mutant that the tests before it let live.

// askedAt is a rule's try with the failed call's path set: the path the
// call named, which the object's identity carries (analysis.id.path).
func askedAt(path string, try func(*Correlator, *analysis, match) (verdict, bool)) func(*Correlator, *analysis, match) (verdict, bool) {
	return func(c *Correlator, a *analysis, m match) (verdict, bool) {
		a.id.path = path
		return try(c, a, m)
	}
}

// shared-propagation, the mounter's namespace gone: the fix unmounts the
// path that failed when the object shows there too (the volume published
// to two peers of the caller's namespace, /srv/vol and /mnt/vol: the
// kubelet's rmdir of /mnt/vol fails, and umount /mnt/vol is what frees
// it), and where the copy is when the failed path is no mount here (an
// rmdir of /srv, the directory above the copy).
func TestSharedPropagationGoneMounterFix(t *testing.T) {
	peers := "1 0 254:0 / / rw shared:1 - ext4 /dev/vda rw\n2 1 7:0 / /srv/vol rw shared:5 - ext4 /dev/loop0 rw\n" +
		"3 1 7:0 / /mnt/vol rw shared:5 - ext4 /dev/loop0 rw\n"
	mounted := &event.Event{Kind: event.KindMount, PID: 40, Comm: "mount", MntNS: 9, Time: t0, Source: "/dev/loop0", Target: "/srv/vol"}
	for _, tt := range []struct {
		failed, want string
	}{
		{"/mnt/vol", "umount /mnt/vol here: mnt:[9], which mounted it, is gone and cannot clean it up"},
		{"/srv", "umount /srv/vol here: mnt:[9], which mounted it, is gone and cannot clean it up"},
	} {
		rmdir := &event.Event{Kind: event.KindFailure, Syscall: "rmdir", SyscallNr: 84, PID: 50, Comm: "kubelet", MntNS: 1,
			Ret: -int64(unix.EBUSY), Time: t0.Add(time.Minute), Path: tt.failed}
		w := ruleWorld{self: true, caller: peers, trigger: rmdir, history: []*event.Event{mounted}}
		v, ok := w.run(t, askedAt(tt.failed, (*Correlator).ruleSharedPropagation))
		if !ok || !strings.HasPrefix(v.fix, tt.want) {
			t.Errorf("rmdir %s failed, the copy at /srv/vol mounted by mnt:[9] (gone): matched %v, fix %q; want it to start %q",
				tt.failed, ok, v.fix, tt.want)
		}
	}
}

// csiMountedTwice is double-mount's history: csi-node mounted /dev/loop0
// at /srv/staging and again at /srv/vol, and the kubelet unmounted
// /srv/staging.
func csiMountedTwice() []*event.Event {
	return []*event.Event{
		{Kind: event.KindMount, PID: 40, Comm: "csi-node", MntNS: 1, Time: t0.Add(-time.Minute), Source: "/dev/loop0", Target: "/srv/staging", FSType: "ext4"},
		{Kind: event.KindMount, PID: 40, Comm: "csi-node", MntNS: 1, Time: t0.Add(-59 * time.Second), Source: "/dev/loop0", Target: "/srv/vol", FSType: "ext4"},
		{Kind: event.KindUmount, PID: 41, Comm: "kubelet", MntNS: 1, Time: t0.Add(-58 * time.Second), Target: "/srv/staging"},
	}
}

// double-mount: a mount of another device at another path, made after the
// pair and before the failure, is not the mount that made the copy: the
// double mount is still found and named.
func TestDoubleMountPastALaterMountElsewhere(t *testing.T) {
	later := &event.Event{Kind: event.KindMount, PID: 42, Comm: "mount", MntNS: 1, Time: t0.Add(-30 * time.Second), Source: "/dev/loop1", Target: "/srv/other", FSType: "ext4"}
	v, ok := ruleWorld{self: true, history: append(csiMountedTwice(), later)}.run(t, (*Correlator).ruleDoubleMount)
	want := "csi-node[40] mounted /dev/loop0 at /srv/staging at 09:59:00.000 and csi-node[40] mounted it again at /srv/vol at 09:59:01.000; " +
		"kubelet[41] unmounted /srv/staging at 09:59:02.000 and the mount at /srv/vol still holds it"
	if !ok || !strings.Contains(v.summary, want) {
		t.Errorf("with mount[42]'s later mount of /dev/loop1 at /srv/other: matched %v, summary %q; want %q", ok, v.summary, want)
	}
}

// double-mount: the unmount that took the first mount away is one that
// worked, of the first mount's path. The kubelet's umount of /srv/staging
// failing (EBUSY), or a successful umount of another path, leaves both
// mounts in place: no double mount is told ("kubelet[41] unmounted
// /srv/staging" would be false).
func TestDoubleMountNeedsTheFirstPathUnmounted(t *testing.T) {
	both := csiMountedTwice()[:2]
	for _, trig := range []*event.Event{
		{Kind: event.KindUmount, PID: 41, Comm: "kubelet", MntNS: 1, Ret: -int64(unix.EBUSY), Time: t0.Add(time.Minute), Target: "/srv/staging"},
		{Kind: event.KindUmount, PID: 41, Comm: "kubelet", MntNS: 1, Time: t0.Add(time.Minute), Target: "/srv/other"},
	} {
		if v, ok := (ruleWorld{self: true, trigger: trig, history: both}).run(t, (*Correlator).ruleDoubleMount); ok {
			t.Errorf("umount of %s (ret %d): a double mount told: %q", trig.Target, trig.Ret, v.summary)
		}
	}
}

// double-mount held in a namespace no process runs in (kept by a bind of
// its nsfs file): the fix unmounts it in that namespace and names no
// process, as there is none to enter through.
func TestDoubleMountInANamespaceWithoutProcesses(t *testing.T) {
	inHolder := csiMountedTwice()
	for _, ev := range inHolder[:2] {
		ev.MntNS = 9
	}
	v, ok := ruleWorld{holder: privateHolder, history: inHolder}.run(t, (*Correlator).ruleDoubleMount)
	if !ok || !strings.Contains(v.fix, "unmount it in mnt:[9]: nsenter -t ") || !strings.Contains(v.fix, " -m umount /srv/vol") {
		t.Fatalf("matched %v, fix %q; want it unmounted in mnt:[9]", ok, v.fix)
	}
	if pids := regexp.MustCompile(`-t \d+|[^:\s]\[\d+\]`).FindAllString(v.fix, -1); len(pids) != 0 {
		t.Errorf("the fix names %q, though no process runs in mnt:[9]: %q", pids, v.fix)
	}
}

// shared-propagation, the mounter's namespace alive: the fix enters it
// through the process that made the mount while it runs there, else
// through the namespace's oldest process (never another one, and never a
// process that left), and the evidence cites the namespace's creation.
func TestSharedPropagationEntersThroughTheMounter(t *testing.T) {
	mounted := &event.Event{Kind: event.KindMount, PID: 40, Comm: "csi-node", MntNS: 9, Time: t0, Source: "/dev/loop0", Target: "/srv/vol"}
	for _, tt := range []struct {
		name    string
		members []Member
		want    string
	}{
		{"the mounter runs there", []Member{{PID: 30, Comm: "pause", StartTime: 300}, {PID: 40, Comm: "csi-node", StartTime: 400}, {PID: 50, Comm: "sh", StartTime: 500}},
			"unmount it in mnt:[9] where it was mounted (nsenter -t 40 -m umount /srv/vol;"},
		{"the mounter left", []Member{{PID: 30, Comm: "pause", StartTime: 300}, {PID: 35, Comm: "sh", StartTime: 350}},
			"unmount it in mnt:[9] where it was mounted (nsenter -t 30 -m umount /srv/vol;"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			alive := func(c *Correlator, _ *Namespace) {
				c.lineage.Created(9, 1, OriginUnshare, Member{PID: 30, Comm: "pause"}, &event.Event{Kind: event.KindUnshare, PID: 30, Comm: "pause", Time: t0.Add(-time.Minute)})
				for _, m := range tt.members {
					c.lineage.Join(9, 1, m)
				}
			}
			v, ok := ruleWorld{self: true, setup: alive, history: []*event.Event{mounted}}.run(t, (*Correlator).ruleSharedPropagation)
			if !ok || !strings.HasPrefix(v.fix, tt.want) {
				t.Errorf("matched %v, fix %q; want it to start %q", ok, v.fix, tt.want)
			}
			created := false
			for _, e := range v.evidence {
				created = created || strings.HasPrefix(e.What, "namespace created: ")
			}
			if !created {
				t.Errorf("the creation of mnt:[9] (unshare by pause[30]) is not cited: %+v", v.evidence)
			}
		})
	}
}

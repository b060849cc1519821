package findingset

import (
	"os"
	"strconv"
	"testing"

	"github.com/mntleak/mntleak/e2e/testkit/privtest"
	"github.com/mntleak/mntleak/finding"
)

// leak is an unshare leak in mnt:[95] naming holder[PID] as a member,
// citing the unshare that made the namespace; its fix names the pid.
func leak(pid int) *finding.Finding {
	p := finding.ProcRef{PID: pid, Comm: "holder"}
	return &finding.Finding{Kind: finding.KindLeak, Call: finding.Call{Syscall: "umount2"}, Cause: finding.CauseUnshare,
		Object: finding.Object{Path: "/srv/vol"},
		Holders: []finding.Holder{{MntNS: 95, Where: "/srv/vol", Processes: []finding.ProcRef{p},
			Actor: &finding.Actor{ProcRef: p, Role: finding.RoleMember}}},
		Evidence: []finding.Evidence{{What: "unshare", Event: &finding.EventRef{Kind: "unshare", MntNS: 95}}},
		Fix:      "stop or restart holder[" + strconv.Itoa(pid) + "] and the processes in mnt:[95]"}
}

// TestExactRefusesWhatIsNotWanted: the check passes on the wanted finding
// and fails on an extra one, a missing one, another process, another role,
// a namespace not said to be made by its event, and a fix naming another
// pid (Remote: the pids are not looked up on this machine).
func TestExactRefusesWhatIsNotWanted(t *testing.T) {
	want := []Want{{Kind: finding.KindLeak, Syscall: "umount2", Cause: finding.CauseUnshare, PID: 20, Role: finding.RoleMember, NS: 95, NSID: 7, Fix: 20}}
	noEvent := leak(20)
	noEvent.Evidence = nil
	otherFix := leak(20)
	otherFix.Fix = "stop or restart holder[21]"
	member := leak(20)
	member.Holders[0].Actor.Role = finding.RolePinner
	for _, tc := range []struct {
		name string
		got  []*finding.Finding
		pass bool
	}{
		{"the finding wanted", []*finding.Finding{leak(20)}, true},
		{"one more", []*finding.Finding{leak(20), leak(20)}, false},
		{"none", nil, false},
		{"another process", []*finding.Finding{leak(21)}, false},
		{"another role", []*finding.Finding{member}, false},
		{"the creation not cited", []*finding.Finding{noEvent}, false},
		{"the fix names another pid", []*finding.Finding{otherFix}, false},
		{"its namespace born with the id wanted", []*finding.Finding{born(leak(20), 7)}, true},
		{"another namespace born with the inode since", []*finding.Finding{born(leak(20), 8)}, false},
	} {
		check(t, tc.name, tc.got, want, tc.pass)
	}
	// Own: the caller's own namespace, nothing made there traced.
	own := []Want{{Kind: finding.KindLeak, Syscall: "umount2", Cause: finding.CauseUnshare, PID: 20, Role: finding.RoleMember, NS: 95, Own: true, Fix: 20}}
	self := leak(20)
	self.Holders[0].Self = true
	check(t, "the caller's own, as wanted", []*finding.Finding{self}, own, true)
	check(t, "not said to be the caller's own", []*finding.Finding{noEvent}, own, false)
}

// check runs Exact on got (Remote) under a recorder: it must fail unless
// pass.
func check(t *testing.T, name string, got []*finding.Finding, want []Want, pass bool) {
	t.Run(name, func(t *testing.T) {
		r := privtest.Record(t, func(tb testing.TB) { Exact(tb, got, want, Remote()) })
		if r.Failed() == pass {
			t.Errorf("failed: %v, want %v; reports: %q", r.Failed(), !pass, r.Reports())
		}
	})
}

// TestObjectsOf: a finding is the test's when it names one of its paths
// or holder namespaces.
func TestObjectsOf(t *testing.T) {
	o := Objects{Paths: []string{"/srv/vol"}}
	other := leak(20)
	other.Object.Path, other.Holders[0].Where, other.Holders[0].MntNS, other.Fix = "/srv/other", "/srv/other", 96, "stop it"
	if got := o.Of([]*finding.Finding{leak(20), other}); len(got) != 1 || got[0].Object.Path != "/srv/vol" {
		t.Errorf("by path: %d findings", len(got))
	}
	if got := (Objects{NS: []uint32{96}}).Of([]*finding.Finding{leak(20), other}); len(got) != 1 || got[0].Object.Path != "/srv/other" {
		t.Errorf("by namespace: %d findings", len(got))
	}
}

// born gives f's holders the birth id id.
func born(f *finding.Finding, id uint64) *finding.Finding {
	for i := range f.Holders {
		f.Holders[i].MntNSID = id
	}
	return f
}

// TestReusedInodeIsNotTheTests: the kernel gives a freed namespace inode
// to the next namespace at once, and packages run side by side: a finding
// about another package's namespace, born with another id in the test's
// holder inode, is not the test's; one born with the test's id is, and so
// is one that names no id (a kernel without NS_GET_MNTNS_ID: by inode).
func TestReusedInodeIsNotTheTests(t *testing.T) {
	o := Objects{Paths: []string{"/srv/mine"}, NS: []uint32{95}, IDs: []uint64{7}}
	elsewhere := func(id uint64) *finding.Finding {
		f := born(leak(20), id)
		f.Object.Path, f.Holders[0].Where = "/srv/theirs", "/srv/theirs"
		return f
	}
	for _, tc := range []struct {
		name string
		f    *finding.Finding
		mine bool
	}{
		{"born with the test's id", elsewhere(7), true},
		{"no id named", elsewhere(0), true},
		{"born with another id", elsewhere(8), false},
	} {
		if got := o.Names(tc.f); got != tc.mine {
			t.Errorf("%s: the test's: %v, want %v: %s", tc.name, got, tc.mine, tc.f.Line())
		}
	}
}

// TestAnotherTestsObjectIsNotTheTests: packages run side by side, and a
// private namespace a test makes copies every mount of the node, also a
// mount another package's test made in its own temporary directory. A
// finding about that mount (its failing umount2 explained by the copy in
// the test's namespace, as CI saw: tracer's TestUmountNotMountedHere
// beside a churn control) is the other test's, though it names the test's
// namespace; a finding about one of the test's own paths, or about a path
// outside any test's temporary directory, in the test's namespace, is the
// test's.
func TestAnotherTestsObjectIsNotTheTests(t *testing.T) {
	tmp := os.TempDir()
	mine := tmp + "/TestVariantMatrixchurn1234/001"
	o := Objects{Paths: []string{mine + "/c0/rootfs"}, NS: []uint32{95}}
	in95 := func(path string) *finding.Finding {
		f := leak(20)
		f.Object.Path, f.Holders[0].Where, f.Holders[0].MntNS = path, path, 95
		return f
	}
	for _, tc := range []struct {
		name string
		f    *finding.Finding
		mine bool
	}{
		{"another test's mount, copied by the test's namespace", in95(tmp + "/TestUmountNotMountedHere1517559589/001/elsewhere"), false},
		{"the test's own path", in95(mine + "/c0/rootfs"), true},
		{"another path in the test's temporary directory", in95(mine + "/c1/rootfs"), true},
		{"a path of the node", in95("/srv/vol"), true},
	} {
		if got := o.Names(tc.f); got != tc.mine {
			t.Errorf("%s: the test's: %v, want %v: %s", tc.name, got, tc.mine, tc.f.Line())
		}
	}
}

// TestAnotherTestsHolderIsNotTheTests: a finding about the test's device
// path whose holders all hold it in another test's temporary directory
// (tracer's TestBlockDeviceMountedElsewhere failed on /dev/loop0, freed
// it, and a churn control attached /dev/loop0 next, as CI saw) is the
// other test's; one held at the test's own path, or at a path of the
// node, is the test's.
func TestAnotherTestsHolderIsNotTheTests(t *testing.T) {
	tmp := os.TempDir()
	mine := tmp + "/TestVariantMatrixchurn1234/001"
	o := Objects{Paths: []string{"/dev/loop0", mine + "/vol"}}
	heldAt := func(where string) *finding.Finding {
		f := leak(20)
		f.Object.Path, f.Holders[0].Where, f.Holders[0].MntNS = "/dev/loop0", where, 96
		return f
	}
	for _, tc := range []struct {
		name string
		f    *finding.Finding
		mine bool
	}{
		{"held in another test's directory", heldAt(tmp + "/TestBlockDeviceMountedElsewhere1182119089/002/vol"), false},
		{"held at the test's own path", heldAt(mine + "/vol"), true},
		{"held at a path of the node", heldAt("/srv/vol"), true},
	} {
		if got := o.Names(tc.f); got != tc.mine {
			t.Errorf("%s: the test's: %v, want %v: %s", tc.name, got, tc.mine, tc.f.Line())
		}
	}
}

package docker

import (
	"strconv"
	"strings"
	"testing"

	"github.com/mntleak/mntleak/e2e/findingset"
	"github.com/mntleak/mntleak/e2e/oraclecheck"
	"github.com/mntleak/mntleak/finding"
)

// TestRootfsHeldByAnAgent (issue 28, item 5): an agent of the node keeps a
// file open in a stopped container's rootfs; containerd's runc shim,
// deleting the task, fails to unmount the rootfs with EBUSY. The finding
// names the agent, the file and the container whose rootfs it is, and
// cites the shim's mount of it; the control container, deleted with
// nothing holding it, gets no finding (its deletion settles 3 s before the
// held one is tried, past the 2 s settle window).
func TestRootfsHeldByAnAgent(t *testing.T) {
	checked := false
	all, exp := run(t, "issue28/rootfs-held.sh", func(t *testing.T, findings func() []logged, exp map[string]string, _ string) {
		checked = true
		checkRootfsHeld(t, findings(), exp)
	})
	if !checked {
		t.Fatal("the script never reached the point where the agent holds the rootfs")
	}
	for _, l := range all {
		if strings.Contains(l.Raw, exp["quiet_rootfs"]) {
			t.Errorf("a finding about the control container, deleted with nothing holding it: %s", l.Msg)
		}
	}
}

// checkRootfsHeld checks the findings while the agent still holds the
// rootfs: exactly one, whole, its pids alive.
func checkRootfsHeld(t *testing.T, all []logged, exp map[string]string) {
	if exp["delete"] != "failed" || exp["rootfs_after"] != "mounted" {
		t.Fatalf("the held rootfs: delete %q, rootfs after %q; want failed, mounted", exp["delete"], exp["rootfs_after"])
	}
	rootfs := exp["rootfs"]
	agent, _ := strconv.Atoi(exp["agent_pid"])
	nodeNS, _ := strconv.ParseUint(exp["node_ns"], 10, 32)
	var lines []logged
	var got []*finding.Finding
	for _, l := range all {
		if strings.Contains(l.Raw, rootfs) {
			lines, got = append(lines, l), append(got, l.Detail)
		}
	}
	oraclecheck.CheckLogged(t, lines...)
	findingset.Exact(t, got, []findingset.Want{{Kind: finding.KindFailure, Syscall: "umount2", Cause: finding.CauseRootfsHeld,
		PID: agent, Role: finding.RolePinner, NS: uint32(nodeNS), Event: "mount", Fix: agent}})
	if len(got) != 1 {
		return
	}
	f := got[0]
	for _, w := range []string{
		"sleep[" + exp["agent_pid"] + "] has fd 3 open on " + rootfs + "/tmp/app.log",
		"in the rootfs of container app (containerd namespace mntleak-issue28)",
		"which containerd-shim[" + exp["shim_pid"] + "] mounted",
	} {
		if !strings.Contains(f.Summary, w) {
			t.Errorf("the summary does not say %q: %s", w, f.Summary)
		}
	}
	if f.Call.Comm != "containerd-shim" || f.Call.Errno != "EBUSY" || f.Object.Path != rootfs || f.Object.FSType != "overlay" {
		t.Errorf("call %s %s %s on %s (%s), want containerd-shim's umount2 EBUSY on %s (overlay)", f.Call.Comm, f.Call.Syscall, f.Call.Errno,
			f.Object.Path, f.Object.FSType, rootfs)
	}
	if f.Release != "" {
		t.Errorf("a busy rootfs in the caller's own namespace is not a leak to release: %s", f.Release)
	}
}

package oracle_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/e2e/oracle"
	"github.com/mntleak/mntleak/e2e/testkit/privtest"
	"github.com/mntleak/mntleak/internal/nsthread"
)

// Every case builds its state in a node namespace of its own (no other
// test's unshare copies its mounts), asks the oracle, and asserts the
// answer: which namespaces have the object mounted where, and which
// processes hold it and how.

// deviceTarget is the target of a block device's filesystem.
func deviceTarget(t *testing.T, dev string) oracle.Target {
	t.Helper()
	target, err := oracle.PathTarget(dev)
	if err != nil {
		t.Fatal(err)
	}
	return target
}

// ask takes a snapshot and answers for target, logging the answer.
func ask(t *testing.T, target oracle.Target) oracle.Answer {
	t.Helper()
	a, err := oracle.Holders(target)
	if err != nil {
		t.Fatal(err)
	}
	if !a.Walked {
		t.Errorf("no namespace walk on this kernel: %v", a.Skipped)
	}
	t.Log(a)
	return a
}

// wantNamespaces asserts exactly which namespaces have the target mounted.
func wantNamespaces(t *testing.T, a oracle.Answer, want map[uint32]string) {
	t.Helper()
	got := map[uint32]string{}
	for _, h := range a.Namespaces {
		got[uint32(h.Inode)] = strings.Join(h.Points, ",")
	}
	if len(got) != len(want) {
		t.Errorf("namespaces %v, want %v", got, want)
	}
	for ns, p := range want {
		if got[ns] != p {
			t.Errorf("mnt:[%d] at %q, want %q", ns, got[ns], p)
		}
	}
}

func hasMember(h oracle.Holding, pid int) bool {
	for _, m := range h.Members {
		if m.PID == pid {
			return true
		}
	}
	return false
}

// nodeWithDevice is a node with a fresh loop device mounted at vol.
func nodeWithDevice(t *testing.T) (privtest.Node, string, string) {
	privtest.Require(t)
	privtest.RequireCommands(t, "unshare", "nsenter", "mount", "umount", "losetup", "mkfs.ext4")
	dev := privtest.LoopDevice(t, 16)
	vol := privtest.Mkdir(t, filepath.Join(t.TempDir(), "vol"))
	node := privtest.StartNode(t)
	node.Run(t, "mount", dev, vol)
	return node, dev, vol
}

func TestOracleDeviceMountedInANode(t *testing.T) {
	node, dev, vol := nodeWithDevice(t)
	a := ask(t, deviceTarget(t, dev))
	wantNamespaces(t, a, map[uint32]string{node.MntNS: vol})
	if h, _ := a.Holding(uint64(node.MntNS)); !hasMember(h, node.PID) {
		t.Errorf("node's holder %d not a member", node.PID)
	}
	if len(a.Pins) != 0 {
		t.Errorf("pins %v, want none", a.Pins)
	}
	node.Run(t, "umount", vol)
	if a := ask(t, deviceTarget(t, dev)); a.Held() {
		t.Errorf("held after the unmount")
	}
}

func TestOracleCopyInAPrivateNamespace(t *testing.T) {
	node, dev, vol := nodeWithDevice(t)
	holder := node.StartHolder(t, "private", "true")
	target := deviceTarget(t, dev)
	wantNamespaces(t, ask(t, target), map[uint32]string{node.MntNS: vol, holder.MntNS: vol})
	node.Run(t, "umount", vol)
	a := ask(t, target)
	wantNamespaces(t, a, map[uint32]string{holder.MntNS: vol})
	if h, _ := a.Holding(uint64(holder.MntNS)); !hasMember(h, holder.PID) {
		t.Errorf("holder %d not a member of mnt:[%d]", holder.PID, holder.MntNS)
	}
	leak := oracle.FindingFacts{Kind: "leak", Target: target, CallerNS: uint64(node.MntNS), Holders: []oracle.HolderFacts{{
		NS: uint64(holder.MntNS), Members: []int{holder.PID}, Actor: &oracle.ActorFacts{PID: holder.PID, Role: "member"}}}}
	if d := oracle.Compare(leak, a); len(d) != 0 {
		t.Errorf("the right leak disagrees: %v", d)
	}
	wrong := leak
	wrong.Holders = []oracle.HolderFacts{{NS: uint64(node.MntNS), Actor: &oracle.ActorFacts{PID: node.PID, Role: "member"}}}
	if d := oracle.Compare(wrong, a); len(d) != 3 {
		t.Errorf("a leak naming the node: %d disagreements, want 3 (node not holding, pid not a holder, holder unnamed): %q", len(d), d)
	}
	if d := oracle.Unheld(a, nil); len(d) != 1 {
		t.Errorf("as a control: %q, want the holder's copy", d)
	}
	if d := oracle.Unheld(a, nil, uint64(holder.MntNS)); len(d) != 0 {
		t.Errorf("as a control allowing the holder: %q", d)
	}
	// Killed, the holder's namespace goes and with it the copy.
	_ = holder.Cmd.Process.Kill()
	_ = holder.Cmd.Wait()
	if !privtest.Poll(5*time.Second, func() bool { a, err := oracle.Holders(target); return err == nil && !a.Held() }) {
		t.Errorf("still held after the holder was killed: %v", ask(t, target))
	}
}

func TestOracleCwdPin(t *testing.T) {
	node, dev, vol := nodeWithDevice(t)
	holder := node.StartHolder(t, "private", "cd "+vol)
	node.Run(t, "umount", vol)
	a := ask(t, deviceTarget(t, dev))
	wantNamespaces(t, a, map[uint32]string{holder.MntNS: vol})
	if len(a.Pins) != 1 || a.Pins[0].PID != holder.PID || a.Pins[0].How != "cwd" || a.Pins[0].InNS != uint64(holder.MntNS) || a.Pins[0].Detached {
		t.Errorf("pins %v, want pid %d's cwd in mnt:[%d]", a.Pins, holder.PID, holder.MntNS)
	}
}

// TestOracleDetachedCopyKeptByAnOpenFile: the node unmounts the device and
// removes the mountpoint; the kernel detaches the holder's copy, which its
// open fd still keeps: in no table, but held.
func TestOracleDetachedCopyKeptByAnOpenFile(t *testing.T) {
	node, dev, vol := nodeWithDevice(t)
	node.Run(t, "touch", vol+"/data")
	holder := node.StartHolder(t, "private", "exec 3<"+vol+"/data")
	node.Run(t, "umount", vol)
	node.Run(t, "rmdir", vol)
	a := ask(t, deviceTarget(t, dev))
	wantNamespaces(t, a, nil)
	if len(a.Pins) != 1 || a.Pins[0].PID != holder.PID || a.Pins[0].How != "fd 3" || !a.Pins[0].Detached {
		t.Fatalf("pins %v, want pid %d's fd 3 in a detached copy", a.Pins, holder.PID)
	}
	if d := oracle.Unheld(a, nil, uint64(holder.MntNS)); len(d) != 1 {
		t.Errorf("a detached pin is a holder in a control, whatever namespace is allowed: %q", d)
	}
	right := oracle.FindingFacts{Kind: "leak", Target: a.Target, Holders: []oracle.HolderFacts{{NS: uint64(holder.MntNS), Detached: true,
		Pins: []oracle.PinFacts{{PID: holder.PID, Pin: "fd"}}, Actor: &oracle.ActorFacts{PID: holder.PID, Role: "pinner", Pin: "fd"}}}}
	if d := oracle.Compare(right, a); len(d) != 0 {
		t.Errorf("the right finding disagrees: %q", d)
	}
	if d := oracle.Compare(oracle.FindingFacts{Kind: "leak", Target: a.Target}, a); len(d) != 1 {
		t.Errorf("a finding naming no holder: %q, want the detached pin unnamed", d)
	}
}

// pinsDir is a private bind in the node where an nsfs file can be bound.
func pinsDir(t *testing.T, node privtest.Node) string {
	pins := privtest.Mkdir(t, filepath.Join(t.TempDir(), "pins"))
	node.Run(t, "mount", "--bind", pins, pins)
	node.Run(t, "mount", "--make-private", pins)
	return pins
}

func TestOracleNamespaceKeptByABind(t *testing.T) {
	node, dev, vol := nodeWithDevice(t)
	file := filepath.Join(pinsDir(t, node), "mnt")
	node.Run(t, "touch", file)
	kept := node.KeepNamespace(t, file)
	node.Run(t, "umount", vol)
	a := ask(t, deviceTarget(t, dev))
	wantNamespaces(t, a, map[uint32]string{kept: vol})
	h, _ := a.Holding(uint64(kept))
	if len(h.Members) != 0 || len(h.KeptBy) != 1 || h.KeptBy[0] != file+" in mnt:["+strconv.Itoa(int(node.MntNS))+"]" {
		t.Errorf("mnt:[%d]: members %v kept by %v, want none, the bind at %s in the node", kept, h.Members, h.KeptBy, file)
	}
}

func TestOracleNamespaceKeptByAnOpenNsfsFile(t *testing.T) {
	node, dev, vol := nodeWithDevice(t)
	holder := node.StartHolder(t, "private", "true")
	keeper := exec.Command("sh", "-c", "exec 3</proc/"+strconv.Itoa(holder.PID)+"/ns/mnt && echo ready && exec sleep 600")
	privtest.StartReady(t, keeper, 10*time.Second)
	_ = holder.Cmd.Process.Kill()
	_ = holder.Cmd.Wait()
	node.Run(t, "umount", vol)
	a := ask(t, deviceTarget(t, dev))
	wantNamespaces(t, a, map[uint32]string{holder.MntNS: vol})
	h, _ := a.Holding(uint64(holder.MntNS))
	if len(h.Members) != 0 || len(h.HeldOpenBy) != 1 || h.HeldOpenBy[0].PID != keeper.Process.Pid || h.HeldOpenBy[0].How != "fd 3" {
		t.Errorf("mnt:[%d]: members %v held open by %v, want none, fd 3 of %d", holder.MntNS, h.Members, h.HeldOpenBy, keeper.Process.Pid)
	}
	f := oracle.FindingFacts{Kind: "leak", Target: a.Target, CallerNS: uint64(node.MntNS), Holders: []oracle.HolderFacts{{
		NS: uint64(holder.MntNS), Pins: []oracle.PinFacts{{PID: keeper.Process.Pid, Pin: "nsfd"}}}}}
	if d := oracle.Compare(f, a); len(d) != 0 {
		t.Errorf("the right finding disagrees: %q", d)
	}
}

// TestOracleReaderThreadIsNoMember: mntleak reads the table of a namespace
// kept by an open nsfs file from a thread of its own that enters it for a
// moment (internal/nsthread). A daemon of another package's test, running
// beside this one, did that while the oracle looked, and the namespace
// had "members mntleak[PID]" (TestOracleNamespaceKeptByAnOpenNsfsFile, CI
// full run). Such a thread, named by nsthread, is no member; the process's
// own namespace is still read as it is.
func TestOracleReaderThreadIsNoMember(t *testing.T) {
	node, dev, vol := nodeWithDevice(t)
	holder := node.StartHolder(t, "private", "true")
	keeper := exec.Command("sh", "-c", "exec 3</proc/"+strconv.Itoa(holder.PID)+"/ns/mnt && echo ready && exec sleep 600")
	privtest.StartReady(t, keeper, 10*time.Second)
	_ = holder.Cmd.Process.Kill()
	_ = holder.Cmd.Wait()
	node.Run(t, "umount", vol)
	inside, leave := make(chan error, 1), make(chan struct{})
	go func() {
		_ = nsthread.Run(func() error {
			fd, err := unix.Open("/proc/"+strconv.Itoa(keeper.Process.Pid)+"/fd/3", unix.O_RDONLY|unix.O_CLOEXEC, 0)
			if err == nil {
				err = unix.Unshare(unix.CLONE_FS) // a thread sharing its fs_struct may not setns
			}
			if err == nil {
				err = unix.Setns(fd, unix.CLONE_NEWNS)
				_ = unix.Close(fd)
			}
			inside <- err
			<-leave
			return nil
		})
	}()
	err := <-inside
	a := ask(t, deviceTarget(t, dev))
	close(leave)
	if err != nil {
		t.Fatalf("enter mnt:[%d]: %v", holder.MntNS, err)
	}
	wantNamespaces(t, a, map[uint32]string{holder.MntNS: vol})
	if h, _ := a.Holding(uint64(holder.MntNS)); len(h.Members) != 0 || len(h.HeldOpenBy) != 1 {
		t.Errorf("mnt:[%d]: members %v held open by %v, want no member (a reader thread is none), fd 3 of %d", holder.MntNS, h.Members, h.HeldOpenBy, keeper.Process.Pid)
	}
}

func TestOracleTmpfs(t *testing.T) {
	privtest.Require(t)
	privtest.RequireCommands(t, "unshare", "nsenter", "mount", "umount")
	vol := privtest.Mkdir(t, filepath.Join(t.TempDir(), "vol"))
	node := privtest.StartNode(t)
	node.Run(t, "mount", "-t", "tmpfs", "-o", "size=1m", "oracle-test", vol)
	var st unix.Stat_t
	// The node's mount, seen from here through the node's root.
	if err := unix.Stat("/proc/"+strconv.Itoa(node.PID)+"/root"+vol, &st); err != nil {
		t.Fatal(err)
	}
	holder := node.StartHolder(t, "private", "cd "+vol)
	a := ask(t, oracle.Target{Major: unix.Major(st.Dev), Minor: unix.Minor(st.Dev)})
	wantNamespaces(t, a, map[uint32]string{node.MntNS: vol, holder.MntNS: vol})
	if len(a.Pins) != 1 || a.Pins[0].PID != holder.PID || a.Pins[0].How != "cwd" {
		t.Errorf("pins %v, want the holder's cwd", a.Pins)
	}
	if _, err := os.Stat(vol + "/x"); err == nil {
		t.Errorf("the node's tmpfs is visible here")
	}
}

// TestOracleMappingPin: a process running a static program from the copy
// (mapped at a low address: maps pads it with zeros, map_files does not).
func TestOracleMappingPin(t *testing.T) {
	node, dev, vol := nodeWithDevice(t)
	privtest.RequireCommands(t, "busybox")
	node.Run(t, "cp", "/usr/bin/busybox", vol+"/busybox")
	mapper := exec.Command("nsenter", "-t", strconv.Itoa(node.PID), "-m", "--", "unshare", "-m", "--propagation", "private",
		"sh", "-c", "echo ready && exec "+vol+"/busybox sleep 600")
	privtest.StartReady(t, mapper, 10*time.Second)
	ns := privtest.MountNS(t, strconv.Itoa(mapper.Process.Pid))
	node.Run(t, "umount", vol)
	a := ask(t, deviceTarget(t, dev))
	wantNamespaces(t, a, map[uint32]string{ns: vol})
	if len(a.Pins) != 1 || a.Pins[0].PID != mapper.Process.Pid || a.Pins[0].How != "map" || a.Pins[0].InNS != uint64(ns) {
		t.Errorf("pins %v, want pid %d's mapping in mnt:[%d]", a.Pins, mapper.Process.Pid, ns)
	}
}

// TestOracleThreadInANamespace: a thread that entered a namespace (setns)
// keeps it while it is there: its process is a member; once the thread
// has ended, it is not.
func TestOracleThreadInANamespace(t *testing.T) {
	node, dev, vol := nodeWithDevice(t)
	holder := node.StartHolder(t, "private", "true")
	node.Run(t, "umount", vol)
	target := deviceTarget(t, dev)
	entered, leave := make(chan error), make(chan struct{})
	// A thread that is not the main thread (the runtime parks a main
	// thread whose locked goroutine ended, in the namespace it entered:
	// 1 CI run in many failed so).
	// Named as a program's worker, not as nsthread names mntleak's own
	// passing readers (the oracle counts no such thread as a member).
	go nsthread.Run(func() error {
		name := []byte("worker\x00")
		fd, err := unix.Open("/proc/"+strconv.Itoa(holder.PID)+"/ns/mnt", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err == nil {
			defer unix.Close(fd)
			err = unix.Prctl(unix.PR_SET_NAME, uintptr(unsafe.Pointer(&name[0])), 0, 0, 0)
		}
		if err == nil {
			if err = unix.Unshare(unix.CLONE_FS); err == nil {
				err = unix.Setns(fd, unix.CLONE_NEWNS)
			}
		}
		entered <- err
		<-leave
		return nil
	})
	if err := <-entered; err != nil {
		t.Fatalf("enter mnt:[%d]: %v", holder.MntNS, err)
	}
	h, _ := ask(t, target).Holding(uint64(holder.MntNS))
	close(leave)
	if !hasMember(h, os.Getpid()) {
		t.Errorf("mnt:[%d] members %v, want this process (a thread of it is there)", holder.MntNS, h.Members)
	}
	if !privtest.Poll(5*time.Second, func() bool {
		a, err := oracle.Holders(target)
		h, _ := a.Holding(uint64(holder.MntNS))
		return err == nil && !hasMember(h, os.Getpid())
	}) {
		t.Errorf("still a member of mnt:[%d] after its thread ended", holder.MntNS)
	}
}

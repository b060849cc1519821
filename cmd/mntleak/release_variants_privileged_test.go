package main

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mntleak/mntleak/e2e/testkit/journaldtest"
	"github.com/mntleak/mntleak/e2e/testkit/privtest"
)

// TestBusyAndKeptCopiesReleased releases, with what the daemon's finding carries, the
// two holdings the seed scenarios do not build: a busy copy (the node's
// unmount propagates to a slave copy a process works in: refused, then
// forced; proven by the failed unmount the daemon kept in its state dir,
// whatever form names it) and a namespace no process runs in, kept by a bind of its nsfs
// file (entered through the bind). The operation that failed succeeds
// afterwards and whatever held the copy is still there.
func TestBusyAndKeptCopiesReleased(t *testing.T) {
	privtest.Require(t)
	privtest.RequireCommands(t, "unshare", "nsenter", "mount", "umount", "mkfs.ext4")
	bin := privtest.Binary(t)
	t.Run("busy copy", func(t *testing.T) {
		dir := t.TempDir()
		dev := privtest.LoopDevice(t, 16)
		vol := privtest.Mkdir(t, filepath.Join(dir, "vol"))
		// Each action is kept in the journal and the daemon's state dir,
		// and counted in the daemon's metrics.
		j := journaldtest.Start(t)
		stateDir := filepath.Join(dir, "state")
		d := privtest.StartDaemon(t, nil, "--journald", "off", "--state-dir", stateDir, "--metrics-addr", "127.0.0.1:0")
		addr := metricsAddr(t, d)
		node := privtest.StartNode(t)
		node.Run(t, "mount", dev, vol)
		h := node.StartHolder(t, "slave", "cd "+vol)
		umount := exec.Command("nsenter", "-t", strconv.Itoa(node.PID), "-m", "--", "umount", vol)
		if out, err := umount.CombinedOutput(); err == nil {
			t.Fatalf("umount with a busy slave copy succeeded: %s", out)
		}
		line := findingLine(t, d, `"cause":"busy-copy"`, vol)
		in := []string{"-t", strconv.Itoa(node.PID), "-m", "--", bin, "release", "--state-dir", stateDir, "--journald-socket", j.Socket, "--finding", "-"}

		out, code := runIn(t, line, in...)
		if code != exitError || !strings.Contains(out, "refused: mnt:["+strconv.FormatUint(uint64(h.MntNS), 10)+"]") ||
			!strings.Contains(out, "processes work in the copy: sleep["+strconv.Itoa(h.PID)+"] (cwd "+vol+")") {
			t.Fatalf("without --force: exit %d, want %d and the pinner named:\n%s", code, exitError, out)
		}
		// The same line with its cause edited: refused, naming what
		// differs from the finding the daemon kept under its id.
		edited := strings.ReplaceAll(line, `"cause":"busy-copy"`, `"cause":"rprivate-bind"`)
		out, code = runIn(t, edited, append(in, "--apply", "--force")...)
		if code != exitError || !strings.Contains(out, "differs from the one the daemon kept under id") || !strings.Contains(out, "cause rprivate-bind, kept busy-copy") {
			t.Fatalf("an edited finding: exit %d, want %d and the difference named:\n%s", code, exitError, out)
		}
		// Then by its id, as the log line and the journal carry it: the
		// daemon kept the finding in its state dir.
		var logged struct {
			ID string `json:"finding_id"`
		}
		if err := json.Unmarshal([]byte(line), &logged); err != nil || len(logged.ID) != 12 {
			t.Fatalf("finding_id %q (%v)", logged.ID, err)
		}
		// Planned by its id, by namespace and mount id, by path: each
		// proves the copy from what the daemon kept (the failed unmount);
		// then released by the device.
		by := func(target ...string) []string {
			return append([]string{"-t", strconv.Itoa(node.PID), "-m", "--", bin, "release", "--state-dir", stateDir, "--journald-socket", j.Socket, "--force"}, target...)
		}
		for _, target := range [][]string{{"--finding", logged.ID}, {"--mntns", ns(h.MntNS), "--mount-id", strconv.Itoa(copyID(t, h.PID, vol))}, {vol}} {
			out, code = runIn(t, "", by(target...)...)
			if code != exitOK || !strings.Contains(out, "dry run: nothing changed") || !strings.Contains(out, "could not unmount "+vol+" because of this copy (umount") {
				t.Fatalf("%v --force: exit %d, want %d and the plan citing the failed unmount:\n%s", target, code, exitOK, out)
			}
		}
		out, code = runIn(t, "", by("--apply", dev)...)
		if code != exitOK || !strings.Contains(out, "released: mount") {
			t.Fatalf("--apply --force %s: exit %d, want %d and released:\n%s", dev, code, exitOK, out)
		}
		if out, err := exec.Command("nsenter", "-t", strconv.Itoa(node.PID), "-m", "--", "umount", vol).CombinedOutput(); err != nil {
			t.Errorf("the node's umount after the release: %v: %s", err, out)
		}
		if syscall.Kill(h.PID, 0) != nil {
			t.Error("the process that worked in the copy did not keep running")
		}
		entries := j.Entries(t, 10*time.Second, "MNTLEAK_ACTION=release", "MNTLEAK_RESULT=released")
		if len(entries) != 1 || entries[0]["MNTLEAK_MNTNS"] != strconv.FormatUint(uint64(h.MntNS), 10) || entries[0]["MNTLEAK_PATH"] != vol {
			t.Errorf("journal entries of the release: %v", entries)
		}
		// Refused: the pinned copy, the edited finding, and the node's own
		// mount by the path and by the device (the caller's namespace).
		if n := len(j.Entries(t, 0, "MNTLEAK_ACTION=release", "MNTLEAK_RESULT=refused")); n != 4 {
			t.Errorf("%d refusals in the journal, want 4", n)
		}
		for result, want := range map[string]float64{"released": 1, "refused": 4} {
			if got := scrape(t, addr, "mntleak_actions_total", `action="release",result="`+result+`"`); got != want {
				t.Errorf("mntleak_actions_total{result=%q} = %v, want %v", result, got, want)
			}
		}
		d.Stop(t)
	})
	// Every namespace file is on one device (nsfs, 0:4): the copy named by
	// --mntns/--mount-id is one namespace's file, not any nsfs mount (the
	// caller's own bind of another network namespace made release refuse
	// it as in use).
	t.Run("a namespace file among others", func(t *testing.T) {
		dir := t.TempDir()
		node := privtest.StartNode(t)
		own := filepath.Join(dir, "own")
		leaked := filepath.Join(dir, "leaked")
		node.Run(t, "touch", own, leaked)
		// Two network namespaces, bound as ip netns does: one stays bound
		// in the node, the other is copied into a private namespace and
		// unbound in the node.
		for _, f := range []string{own, leaked} {
			node.Run(t, "unshare", "--net="+f, "true")
		}
		t.Cleanup(func() { _ = exec.Command("nsenter", "-t", strconv.Itoa(node.PID), "-m", "umount", own).Run() })
		laterMount(t, node, dir)
		h := node.StartHolder(t, "private", "true")
		node.Run(t, "umount", leaked)
		id := strconv.Itoa(copyID(t, h.PID, leaked))
		out, code := releaseIn(t, strconv.Itoa(node.PID), bin, "", "", "--apply", "--mntns", ns(h.MntNS), "--mount-id", id)
		if code != exitOK || !strings.Contains(out, "released: mount "+id+" at "+leaked) {
			t.Fatalf("--apply: exit %d, want the copy of %s released:\n%s", code, leaked, out)
		}
		if node.Run(t, "findmnt", "-n", "-o", "TARGET", own) == "" {
			t.Error("the node's own namespace file was touched")
		}
	})
	t.Run("a namespace no process runs in", func(t *testing.T) {
		dir := t.TempDir()
		dev := privtest.LoopDevice(t, 16)
		vol := privtest.Mkdir(t, filepath.Join(dir, "vol"))
		pins := privtest.Mkdir(t, filepath.Join(dir, "pins"))
		d := privtest.StartDaemon(t, nil, "--journald", "off", "--state-dir", "")
		node := privtest.StartNode(t)
		node.Run(t, "mount", dev, vol)
		node.Run(t, "mount", "--bind", pins, pins)
		node.Run(t, "mount", "--make-private", pins)
		file := filepath.Join(pins, "mnt")
		node.Run(t, "touch", file)
		node.KeepNamespace(t, file)
		node.Run(t, "umount", vol)
		mkfs := func() error { return mkfsIn(node, dev) }
		if mkfs() == nil {
			t.Fatal("mkfs.ext4 on a device a kept namespace has mounted succeeded")
		}
		line := findingLine(t, d, `"finding":"failure"`, dev)
		var f struct{ Detail struct{ Release string } }
		if err := json.Unmarshal([]byte(line), &f); err != nil || !strings.HasPrefix(f.Detail.Release, "mntleak release --mntns ") {
			t.Fatalf("the finding carries release %q (%v)", f.Detail.Release, err)
		}
		in := append([]string{"-t", strconv.Itoa(node.PID), "-m", "--", bin}, strings.Fields(f.Detail.Release)[1:]...)
		in = append(in, "--state-dir", "")
		out, code := runIn(t, "", in...)
		if code != exitOK || !strings.Contains(out, "dry run: nothing changed") || !strings.Contains(out, "entering through /proc/") || !strings.Contains(out, "keeps running: nothing") {
			t.Fatalf("dry run: exit %d:\n%s", code, out)
		}
		if mkfs() == nil {
			t.Fatal("the dry run released the device")
		}
		out, code = runIn(t, "", append(in, "--apply")...)
		if code != exitOK || !strings.Contains(out, "released: mount") {
			t.Fatalf("--apply: exit %d:\n%s", code, out)
		}
		if err := mkfs(); err != nil {
			t.Errorf("mkfs.ext4 after the release: %v", err)
		}
		// The namespace is still kept: only the copy went.
		node.Run(t, "nsenter", "--mount="+file, "true")
		d.Stop(t)
	})
	// No bind either: a process elsewhere holds the namespace's nsfs file
	// open (exec 7</proc/PID/ns/mnt, a runtime's pinned namespace). The
	// finding's release command enters it through that fd.
	t.Run("a namespace an open fd keeps", func(t *testing.T) {
		dir := t.TempDir()
		dev := privtest.LoopDevice(t, 16)
		vol := privtest.Mkdir(t, filepath.Join(dir, "vol"))
		d := privtest.StartDaemon(t, nil, "--journald", "off", "--state-dir", "")
		node := privtest.StartNode(t)
		node.Run(t, "mount", dev, vol)
		laterMount(t, node, dir)
		h := node.StartHolder(t, "private", "true")
		pinner := exec.Command("nsenter", "-t", strconv.Itoa(node.PID), "-m", "--", "sh", "-c",
			"exec 7</proc/"+strconv.Itoa(h.PID)+"/ns/mnt && echo ready && exec sleep 600")
		privtest.StartReady(t, pinner, 10*time.Second)
		_ = h.Cmd.Process.Kill()
		_ = h.Cmd.Wait()
		node.Run(t, "umount", vol)
		mkfs := func() error { return mkfsIn(node, dev) }
		if mkfs() == nil {
			t.Fatal("mkfs.ext4 on a device a namespace held open has mounted succeeded")
		}
		line := findingLine(t, d, `"finding":"failure"`, dev)
		var f struct{ Detail struct{ Release string } }
		if err := json.Unmarshal([]byte(line), &f); err != nil || !strings.HasPrefix(f.Detail.Release, "mntleak release --mntns "+strconv.FormatUint(uint64(h.MntNS), 10)+" ") {
			t.Fatalf("the finding carries release %q (%v), want one for mnt:[%d]:\n%s", f.Detail.Release, err, h.MntNS, line)
		}
		in := append([]string{"-t", strconv.Itoa(node.PID), "-m", "--", bin}, strings.Fields(f.Detail.Release)[1:]...)
		in = append(in, "--state-dir", "", "--apply")
		out, code := runIn(t, "", in...)
		if code != exitOK || !strings.Contains(out, "released: mount") || !strings.Contains(out, "/fd/7") {
			t.Fatalf("--apply: exit %d, want released through the pinner's fd 7:\n%s", code, out)
		}
		if err := mkfs(); err != nil {
			t.Errorf("mkfs.ext4 after the release: %v", err)
		}
		if syscall.Kill(pinner.Process.Pid, 0) != nil {
			t.Error("the process holding the namespace open did not keep running")
		}
		d.Stop(t)
	})
}

// findingLine is the daemon's first finding line with both strings.
func findingLine(t *testing.T, d *privtest.Daemon, what, about string) string {
	t.Helper()
	match := func(s string) bool { return strings.Contains(s, what) && strings.Contains(s, about) }
	// A leak settles in event time: the event AfterLeakSettle makes drives
	// it, where the machine may have none (a full run: the leak came only at
	// the daemon's stop, 30 s later).
	privtest.AfterLeakSettle(t)
	if !d.Logs.Within(30*time.Second, match) { // a leak is logged 2 s after its unmount; setting up takes 13 s under a loaded full run
		d.Stop(t)
		for _, l := range d.Logs.All() {
			t.Log(l)
		}
		t.Fatalf("no finding with %s about %s", what, about)
	}
	line, _ := d.Logs.Find(match)
	return line
}

// runIn runs nsenter with args and stdin; its output and exit code.
func runIn(t *testing.T, stdin string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command("nsenter", args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: exit %d\n%s", strings.Join(args[4:], " "), code, out.String())
	return out.String(), code
}

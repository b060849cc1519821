package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/e2e/testkit/privtest"
)

// TestTeardownThroughControlFiles: a block device torn down through a
// control file (zram's reset and hot_remove, as rbd unmap writes to
// /sys/bus/rbd) while a private namespace still has it mounted fails with
// EBUSY; the finding names the device, the operation in the user's words,
// the holder process and namespace, the leaking event and the fix.
func TestTeardownThroughControlFiles(t *testing.T) {
	privtest.Require(t)
	privtest.RequireCommands(t, "mount", "umount")
	dir := t.TempDir()
	id := privtest.ZramDevice(t, 32)
	dev := fmt.Sprintf("/dev/zram%d", id)
	vol := privtest.Mkdir(t, filepath.Join(dir, "vol"))
	d := privtest.StartDaemon(t, nil, "--journald", "off", "--state-dir", "")
	node := privtest.StartNode(t)
	node.Run(t, "mount", dev, vol)
	holder := node.StartHolder(t, "private", "cd /")
	node.Run(t, "umount", vol)

	for _, tt := range []struct {
		op, file, data string
	}{
		{"zram reset " + dev, fmt.Sprintf("/sys/block/zram%d/reset", id), "1"},
		{fmt.Sprintf("zram hot_remove %d", id), "/sys/class/zram-control/hot_remove", fmt.Sprintf("%d\n", id)},
	} {
		t.Run(strings.Fields(tt.op)[1], func(t *testing.T) {
			if err := os.WriteFile(tt.file, []byte(tt.data), 0); !errors.Is(err, unix.EBUSY) {
				t.Fatalf("%s: %v, want EBUSY (the holder's copy keeps %s busy)", tt.op, err, dev)
			}
			line := d.Logs.Wait(t, tt.op+" finding", func(s string) bool {
				return strings.Contains(s, `"finding":"failure"`) && strings.Contains(s, `"operation":"`+tt.op+`"`)
			})
			var f struct {
				Msg, Cause, Path, Dev string
				HolderPID             int    `json:"holder_pid"`
				HolderMntNS           uint32 `json:"holder_mntns"`
				HolderRole            string `json:"holder_role"`
				LeakEvent             string `json:"leak_event"`
				Detail                struct {
					Object struct{ Operation, Via string }
					Fix    string
				}
			}
			if err := json.Unmarshal([]byte(line), &f); err != nil {
				t.Fatal(err)
			}
			want := fmt.Sprintf("EBUSY write %s (%s) by %s[", dev, f.Dev, selfComm(t))
			switch {
			case f.Path != dev || f.Detail.Object.Via == "" || !strings.HasPrefix(f.Msg, want):
				t.Errorf("object %s via %q, line %q: want %s through %s", f.Path, f.Detail.Object.Via, f.Msg, dev, tt.file)
			case f.HolderPID != holder.PID || f.HolderMntNS != holder.MntNS || f.HolderRole != "member":
				t.Errorf("holder %d (%s) in mnt:[%d], want %d in mnt:[%d]", f.HolderPID, f.HolderRole, f.HolderMntNS, holder.PID, holder.MntNS)
			case f.Cause != "unshare" || !strings.Contains(f.LeakEvent, "unshare(CLONE_NEWNS)") || f.Detail.Fix == "":
				t.Errorf("cause %s, leaking event %q, fix %q: want unshare, the holder's unshare, a fix", f.Cause, f.LeakEvent, f.Detail.Fix)
			}
			t.Log(f.Msg)
		})
	}
	d.Stop(t)
}

// selfComm is this test binary's comm, as the kernel names the writer
// (mntleak.test under go test; whatever a binary built with -c is named).
func selfComm(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/comm")
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mntleak/mntleak/e2e/testkit/privtest"
	"github.com/mntleak/mntleak/event"
)

// TestMountNotesForEveryNamespace: a node with more namespaces than the
// daemon's share of fs.fanotify.max_user_groups (64 of the default 128)
// had the kernel's mount notes for 64 of them, one group each; the rest
// were re-read. With 16 namespaces a group, the daemon's recording says
// it watches each of 70 holders' namespaces, made before it started,
// after a few seconds of events (32 at the start and each second of event
// time).
func TestMountNotesForEveryNamespace(t *testing.T) {
	privtest.Require(t)
	privtest.RequireCommands(t, "unshare", "nsenter", "sh", "sleep")
	if _, err := os.Stat("/proc/sys/fs/fanotify/max_user_groups"); err != nil {
		t.Skip("no fanotify here")
	}
	node := privtest.StartNode(t)
	holders := map[uint32]bool{}
	for range 70 {
		holders[node.StartHolder(t, "private", "true").MntNS] = true
	}
	record := filepath.Join(t.TempDir(), "stream.jsonl")
	d := privtest.StartDaemon(t, nil, "--record", record, "--state-dir", "")
	// Events, so that the daemon syncs (a namespace made: that one; a
	// second of event time: 32 more), until its recording says every
	// holder is watched or a minute has passed (the node's other
	// namespaces count too).
	watched := map[uint32]bool{}
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline) && !allIn(holders, watched); {
		node.Run(t, "unshare", "-m", "true")
		time.Sleep(200 * time.Millisecond)
		watched = watchedIn(t, record)
	}
	d.Stop(t)
	for _, l := range d.Logs.All() {
		if strings.Contains(l, `"msg":"mount notes off`) {
			t.Skip("the kernel has no mount-namespace marks")
		}
	}
	watched = watchedIn(t, record)
	missing := 0
	for ns := range holders {
		if !watched[ns] {
			missing++
		}
	}
	if missing > 0 {
		t.Errorf("%d of the %d holders' namespaces never watched (%d namespaces watched in all)", missing, len(holders), len(watched))
	}
}

// watchedIn is the namespaces a daemon's recording says it began to watch.
func watchedIn(t *testing.T, record string) map[uint32]bool {
	t.Helper()
	watched := map[uint32]bool{}
	f, err := os.Open(record)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var line struct {
			Note *event.MountNote `json:"mount_note"`
		}
		if json.Unmarshal(sc.Bytes(), &line) == nil && line.Note != nil && line.Note.Watch == event.WatchOn {
			watched[line.Note.NS] = true
		}
	}
	return watched
}

// allIn reports whether every key of want is in got.
func allIn(want, got map[uint32]bool) bool {
	for k := range want {
		if !got[k] {
			return false
		}
	}
	return true
}

package daemon

import (
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moby/sys/mountinfo"
	"go.uber.org/zap"

	"github.com/mntleak/mntleak/correlate"
	"github.com/mntleak/mntleak/e2e/testkit/privtest"
	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/finding"
	"github.com/mntleak/mntleak/metrics"
	"github.com/mntleak/mntleak/procfs"
)

// TestMountWatchKeepsTheLedgerTrue: a holder's private copy of the node's
// tmpfs, the node unmounts it and removes the directory, which detaches
// the copy; no tracer event says so, and the correlator's table of the
// holder, fresh (nothing made it stale), still shows the copy: what a
// failure or `why` would read until the table happens to be read again.
// The watch has the detach in its first drain after the rmdir returned
// (the kernel queues it before), with the copy's mountinfo id and device;
// the note takes the copy out of the ledger's table at once. A mount made
// in the holder then comes as an attach described as /proc describes it
// (but for the source, which statmount gives only from 6.13 on).
// The oracle is the holder's /proc/PID/mountinfo.
func TestMountWatchKeepsTheLedgerTrue(t *testing.T) {
	privtest.Require(t)
	privtest.RequireCommands(t, "unshare", "nsenter", "sh", "sleep", "mount", "umount")
	node := privtest.NewDetachableCopy(t, "mwvol")
	vol, own, holder := node.Vol, node.Own, node.Holder
	pid := strconv.Itoa(holder)
	ino := privtest.MountNS(t, pid)
	copyOf := procMountAt(t, pid, vol)
	if copyOf == nil {
		t.Fatalf("the holder has no copy at %s", vol)
	}

	corr := startedCorrelator(t)
	mw := watchOnly(t, corr, ino)
	if len(mw.groups) != 1 {
		t.Fatalf("%d namespaces watched, want the holder's", len(mw.groups))
	}
	if on, err := mw.drain(time.Now); err != nil || len(on) != 1 || on[0].Watch != event.WatchOn || on[0].NS != ino {
		t.Fatalf("first drain: %s, %v; want the note that mnt:[%d] is watched", describe(on), err, ino)
	}

	node.Detach(t)
	at := time.Now()
	notes, err := mw.drain(func() time.Time { return at })
	took := time.Since(at)
	if err != nil {
		t.Fatal(err)
	}
	if procMountAt(t, pid, vol) != nil {
		t.Fatalf("the kernel did not detach the holder's copy at %s", vol)
	}
	if tb := corr.Ledger().Table(ino); tb == nil || tb.At(vol) == nil || !corr.Ledger().Fresh(ino) {
		t.Fatalf("before the note, the ledger's fresh table of the holder should still show the copy (the fallback's view)")
	}
	if len(notes) != 1 || !notes[0].Detach || notes[0].NS != ino || notes[0].Mount.ID != copyOf.ID ||
		notes[0].Mount.Mountpoint != vol || notes[0].Mount.Major != copyOf.Major || notes[0].Mount.Minor != copyOf.Minor {
		t.Fatalf("first drain after the rmdir: %s, want the detach of mount %d (%d:%d) at %s in mnt:[%d]",
			describe(notes), copyOf.ID, copyOf.Major, copyOf.Minor, vol, ino)
	}
	t.Logf("the detach, read %v after the rmdir returned", took)
	corr.Note(notes[0])
	if tb := corr.Ledger().Table(ino); tb.At(vol) != nil || !corr.Ledger().Fresh(ino) {
		t.Errorf("after the note the ledger's table still shows %s (or went stale)", vol)
	}

	if out, err := exec.Command("nsenter", "--mount=/proc/"+pid+"/ns/mnt", "mount", "-t", "tmpfs", "mwown", own).CombinedOutput(); err != nil {
		t.Fatalf("mount in the holder: %v: %s", err, out)
	}
	want := procMountAt(t, pid, own)
	if want == nil {
		t.Fatalf("no mount at %s in the holder", own)
	}
	if notes, err = mw.drain(time.Now); err != nil {
		t.Fatal(err)
	}
	if len(notes) != 1 || notes[0].Detach || notes[0].NS != ino {
		t.Fatalf("first drain after the mount in the holder: %s, want one attach", describe(notes))
	}
	got := notes[0].Mount
	if got.ID != want.ID || got.Parent != want.Parent || got.Major != want.Major || got.Minor != want.Minor ||
		got.Root != want.Root || got.Mountpoint != want.Mountpoint || got.FSType != want.FSType || got.Optional != want.Optional ||
		got.Options != want.Options || got.VFSOptions != want.VFSOptions {
		t.Errorf("attach %+v, want as /proc shows it: %+v", *got, *want)
	}
	corr.Note(notes[0])
	if m := corr.Ledger().Table(ino).At(own); m == nil || m.ID != want.ID {
		t.Errorf("after the note the ledger's table has no mount %d at %s", want.ID, own)
	}
}

// procMountAt is the mount at p in pid's /proc/PID/mountinfo, or nil.
func procMountAt(t *testing.T, pid, p string) *mountinfo.Info {
	t.Helper()
	var top *mountinfo.Info
	for _, m := range procMounts(t, pid) {
		if m.Mountpoint == p {
			top = m
		}
	}
	return top
}

// procMounts is pid's /proc/PID/mountinfo.
func procMounts(t *testing.T, pid string) []*mountinfo.Info {
	t.Helper()
	f, err := os.Open("/proc/" + pid + "/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ms, err := mountinfo.GetMountsFromReader(f, nil)
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

func describe(notes []event.MountNote) string {
	var out []string
	for _, n := range notes {
		if n.Mount == nil {
			out = append(out, "{watch "+n.Watch+" mnt:["+strconv.FormatUint(uint64(n.NS), 10)+"]}")
			continue
		}
		out = append(out, "{detach "+strconv.FormatBool(n.Detach)+" mnt:["+strconv.FormatUint(uint64(n.NS), 10)+"] "+
			strconv.Itoa(n.Mount.ID)+" "+n.Mount.Mountpoint+"}")
	}
	return "[" + strings.Join(out, " ") + "]"
}

// startedCorrelator is a correlator of the node's processes that took
// its startup snapshot; its findings go nowhere.
func startedCorrelator(t *testing.T) *correlate.Correlator {
	t.Helper()
	corr := correlate.New(procfs.Host{}, correlate.Options{}, func(*finding.Finding) {})
	if err := corr.Start(); err != nil {
		t.Fatal(err)
	}
	return corr
}

// watchOnly is a mount watch of namespaces inos alone, as the daemon
// makes one of the namespaces corr tracks; the test skips where the kernel has
// no mount-namespace marks, and the watch is closed at its end.
func watchOnly(t *testing.T, corr *correlate.Correlator, inos ...uint32) *mountWatch {
	t.Helper()
	mw, err := newMountWatch(corr.HostNS(), zap.NewNop())
	if err != nil {
		t.Skipf("no fanotify mount-namespace marks here: %v", err)
	}
	t.Cleanup(mw.close)
	syncOnly(mw, corr, inos...)
	return mw
}

// syncOnly syncs mw with corr's namespaces inos alone.
func syncOnly(mw *mountWatch, corr *correlate.Correlator, inos ...uint32) {
	mw.sync(onlyLive(corr, inos...), watchPerSync)
}

// onlyLive is corr's live namespaces among inos.
func onlyLive(corr *correlate.Correlator, inos ...uint32) []*correlate.Namespace {
	var only []*correlate.Namespace
	for _, n := range corr.Lineage().Live() {
		if slices.Contains(inos, n.Ino) {
			only = append(only, n)
		}
	}
	return only
}

// TestWatchedNamespacesGauge: mntleak_namespaces_watched says how many
// namespaces the kernel's notes keep (the others' tables are re-read), set
// with the other gauges.
func TestWatchedNamespacesGauge(t *testing.T) {
	privtest.Require(t)
	privtest.RequireCommands(t, "unshare", "sh", "sleep")
	a, b := privtest.StartHolder(t, "private", "true"), privtest.StartHolder(t, "private", "true")
	corr := startedCorrelator(t)
	mets := metrics.New(func() map[string]uint64 { return nil })
	p := &pipeline{corr: corr, mounts: watchOnly(t, corr, a.MntNS, b.MntNS), mets: mets}
	p.count(&event.Event{Kind: event.KindExit, Time: time.Now()})
	rec := httptest.NewRecorder()
	mets.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if want := "\nmntleak_namespaces_watched 2\n"; !strings.Contains(rec.Body.String(), want) {
		t.Fatalf("the scrape has no %q", strings.TrimSpace(want))
	}
}

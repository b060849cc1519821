package enrich

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mntleak/mntleak/attribution"
	"github.com/mntleak/mntleak/finding"
)

const (
	sidecarID  = "9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b"
	sidecarUID = "0c2f3a1e-7d4b-4c3e-9a1f-2b3c4d5e6f70"
)

// deletable knows the sidecar's container until its pod is deleted; it
// tells when it was asked.
type deletable struct {
	mu      sync.Mutex
	deleted bool
	asked   chan string
}

func (*deletable) Name() string { return "deletable" }

func (s *deletable) Container(_ context.Context, id string) (attribution.Container, error) {
	s.mu.Lock()
	gone := s.deleted
	s.mu.Unlock()
	defer func() { s.asked <- id }()
	if id != sidecarID || gone {
		return attribution.Container{}, attribution.ErrNotFound
	}
	return attribution.Container{ID: id, Runtime: "cri", Name: "mounter", Image: "busybox", Pod: "sidecar-7d9", Namespace: "team-a",
		PodUID: sidecarUID, PodContainer: "mounter"}, nil
}

func (s *deletable) Pod(context.Context, string) (attribution.Pod, error) {
	return attribution.Pod{}, attribution.ErrNotFound
}

func (s *deletable) delete() {
	s.mu.Lock()
	s.deleted = true
	s.mu.Unlock()
}

// goneMounterFinding is what the correlator says when the sidecar that
// made the propagated mount is gone: its pod by UID, from the cgroup its
// mount event carried.
func goneMounterFinding() *finding.Finding {
	return &finding.Finding{Kind: finding.KindFailure, Cause: finding.CauseSharedPropagation,
		Call:    finding.Call{PID: 800, Comm: "kubelet", Syscall: "rmdir", Errno: "EBUSY", MntNS: 1},
		Object:  finding.Object{Path: volPath + "/sub", FSType: "tmpfs"},
		Holders: []finding.Holder{{MntNS: 1, Self: true, Where: volPath + "/sub"}},
		Summary: "mounter[701] (pod " + sidecarUID + ") in mnt:[40] mounted /rootfs/data/sub; mnt:[40] is gone since",
		Fix:     "umount " + volPath + "/sub here: mnt:[40] (pod " + sidecarUID + "), which mounted it, is gone",
		Evidence: []finding.Evidence{{What: "mounted elsewhere", Event: &finding.EventRef{Kind: "mount", PID: 701, Comm: "mounter", MntNS: 40,
			Container: sidecarID, Pod: sidecarUID}}}}
}

// A pod answered when its process's event arrived and deleted since is
// still named in the finding: Warmer asked about the container at the
// mount, the runtime no longer knows it at the failure. The finding's
// answer is recorded and replays to the same finding; without the warm
// question the deleted pod stays a UID.
func TestDeletedPodNamedFromTheEvent(t *testing.T) {
	for _, warm := range []bool{true, false} {
		src := &deletable{asked: make(chan string, 4)}
		res := attribution.NewResolver(attribution.Options{Timeout: time.Second}, src)
		if warm {
			w := NewWarmer(res, time.Second, 4)
			w.Start()
			w.Warm(sidecarID, sidecarUID)
			w.Warm(sidecarID, sidecarUID) // asked once
			if got := <-src.asked; got != sidecarID {
				t.Fatalf("warmed %s, want %s", got, sidecarID)
			}
			w.Close()
		}
		src.delete() // the pod is deleted before the other pod's teardown fails
		var records []*attribution.Record
		rec := attribution.Recorder{Lookup: res, Write: func(r *attribution.Record) { records = append(records, r) }}
		f := goneMounterFinding()
		Fill(context.Background(), f, Config{Node: "node-1", Timeout: time.Second}, rec)
		ev := f.Evidence[0].Event
		if !warm {
			if ev.Workload != nil || !strings.Contains(f.Summary, "(pod "+sidecarUID+")") {
				t.Errorf("not warmed: workload %+v, summary %s", ev.Workload, f.Summary)
			}
			continue
		}
		if ev.Workload == nil || ev.Workload.Text() != "pod team-a/sidecar-7d9 (container mounter)" {
			t.Errorf("the mount's process: %+v, want pod team-a/sidecar-7d9 (container mounter)", ev.Workload)
		}
		for _, s := range []string{f.Summary, f.Fix} {
			if !strings.Contains(s, "(pod team-a/sidecar-7d9)") || strings.Contains(s, sidecarUID) {
				t.Errorf("the deleted pod not named: %s", s)
			}
		}
		if len(src.asked) != 0 {
			t.Errorf("the runtime was asked again at the finding (%d), want the cached answer", len(src.asked))
		}
		// The recorded answer replays to the same finding.
		answers := attribution.NewReplay()
		answers.Add(&attribution.Record{Op: attribution.OpSettings, Node: "node-1"})
		for _, r := range records {
			answers.Add(r)
		}
		rp, ok := NewReplayer(answers)
		if !ok {
			t.Fatal("no settings")
		}
		replayed := goneMounterFinding()
		rp.Apply(replayed)
		a, _ := json.Marshal(f)
		b, _ := json.Marshal(replayed)
		if string(a) != string(b) {
			t.Errorf("replay differs:\nlive   %s\nreplay %s", a, b)
		}
	}
}

// Warm never waits: a full queue drops the question (counted), asked
// again at the id's next event; Close before Start returns.
func TestWarmNeverWaits(t *testing.T) {
	w := NewWarmer(attribution.NewResolver(attribution.Options{}), time.Second, 1)
	w.Warm(sidecarID, "")
	w.Warm("", sidecarUID)
	w.Warm("", "")
	if got := w.Dropped(); got != 1 {
		t.Errorf("dropped %d, want 1", got)
	}
	w.Close()
	w.Close()
}

// failing answers every question with an error, and tells each one asked.
type failing struct{ asked chan string }

func (*failing) Name() string { return "failing" }

func (f *failing) Container(_ context.Context, id string) (attribution.Container, error) {
	defer func() { f.asked <- id }()
	return attribution.Container{}, errors.New("connection refused")
}

func (f *failing) Pod(_ context.Context, uid string) (attribution.Pod, error) {
	defer func() { f.asked <- uid }()
	return attribution.Pod{}, errors.New("connection refused")
}

// A question the runtime did not answer is asked again at the id's first
// event after the retry delay, not at every event before it: a node whose
// runtime socket is not there does not wake the warmer at each mount.
func TestWarmFailedAskedAgainAfterItsRetry(t *testing.T) {
	src := &failing{asked: make(chan string, 8)}
	w := NewWarmer(src, time.Second, 8)
	now := time.Date(2026, 11, 27, 3, 0, 0, 0, time.UTC)
	w.now = func() time.Time { return now }
	w.Start()
	defer w.Close()
	asked := func(when string, want int) {
		t.Helper()
		got := 0
		for done := false; !done; {
			select {
			case <-src.asked:
				got++
			case <-time.After(200 * time.Millisecond):
				done = true // long after the goroutine took what was queued
			}
		}
		if got != want {
			t.Errorf("%s: asked %d times, want %d", when, got, want)
		}
	}
	w.Warm(sidecarID, "")
	asked("the first event", 1)
	w.Warm(sidecarID, "")
	w.Warm(sidecarID, "")
	asked("two more events at once", 0)
	later := func(d time.Duration) {
		w.mu.Lock()
		now = now.Add(d)
		w.mu.Unlock()
	}
	later(warmRetry - time.Second)
	w.Warm(sidecarID, "")
	asked("an event before the retry delay", 0)
	later(time.Second)
	w.Warm(sidecarID, "")
	w.Warm(sidecarID, "")
	asked("events after it", 1)
}

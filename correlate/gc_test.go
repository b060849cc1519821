package correlate_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mntleak/mntleak/correlate"
	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/finding"
	"github.com/mntleak/mntleak/procfs"
)

// tmpfsTable is a namespace root plus n tmpfs mounts.
func tmpfsTable(first, n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d %d 254:0 / / rw master:1 - ext4 /dev/vda rw\n", first, first-1)
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "%d %d 0:%d / /run/m%d rw - tmpfs tmpfs rw\n", first+i, first, 100+i, i)
	}
	return b.String()
}

// churn creates, fills and ends count namespaces, one after another, as
// container churn does: unshare, a mount, the last process exits.
func churn(w *world, count, mounts int) {
	for i := range count {
		ns, pid := uint32(5000+i), 7000+i
		w.send(unshareEv(pid, "runc", hostNS, ns))
		w.proc.procs = append(w.proc.procs, proc(pid, "sh", ns, "/docker/x"))
		w.proc.tables[ns] = tmpfsTable(10000+i*1000, mounts)
		w.send(mountEv(pid, "sh", ns, "tmpfs", "/run/m1", "tmpfs", 0, 0))
		w.send(exitEv(pid, "sh", ns))
		w.proc.procs = w.proc.procs[:len(w.proc.procs)-1]
		delete(w.proc.tables, ns)
	}
}

func TestCollect(t *testing.T) {
	systemd := proc(1, "systemd", hostNS, "/init.scope")
	tests := []struct {
		name  string
		opts  correlate.Options
		run   func(w *world)
		check func(t *testing.T, w *world, s correlate.Size)
	}{
		{
			name: "namespaces whose processes exited are retired and capped",
			opts: correlate.Options{MaxDead: 20, GCInterval: 5 * time.Second},
			run:  func(w *world) { churn(w, 200, 30) },
			check: func(t *testing.T, w *world, s correlate.Size) {
				// Between two collections (5s = 8 churned namespaces of 0.6s
				// each) empty namespaces wait for /proc to confirm them dead.
				if s.Live > 1+9 || s.Dead > 20 {
					t.Errorf("after churn of 200: %d live, %d dead namespaces; want ≤10 live, ≤20 dead", s.Live, s.Dead)
				}
				if s.Mounts > 9*31+len(strings.Split(hostTable, "\n")) {
					t.Errorf("after churn: %d mounts in tables", s.Mounts)
				}
			},
		},
		{
			name: "dead namespaces expire after the retention",
			opts: correlate.Options{Retention: time.Minute, GCInterval: 5 * time.Second},
			run: func(w *world) {
				churn(w, 20, 5)
				w.now = w.now.Add(2 * time.Minute)
				w.send(exitEv(2, "true", hostNS))
				w.now = w.now.Add(10 * time.Second)
				w.send(exitEv(3, "true", hostNS))
			},
			check: func(t *testing.T, w *world, s correlate.Size) {
				if s.Dead != 0 {
					t.Errorf("%d dead namespaces kept past the retention", s.Dead)
				}
			},
		},
		{
			name: "the mount cap evicts tables, never an open leak's holder",
			opts: correlate.Options{MaxMounts: 500, GCInterval: 5 * time.Second},
			run: func(w *world) {
				privateTmpLeak(w)
				for i := range 20 { // 20 live namespaces of 100 mounts
					ns, pid := uint32(6000+i), 8000+i
					w.proc.procs = append(w.proc.procs, proc(pid, "sleep", ns, ""))
					w.proc.tables[ns] = tmpfsTable(20000+i*1000, 100)
					w.send(unshareEv(pid, "unshare", hostNS, ns))
					w.send(mountEv(pid, "mount", ns, "tmpfs", "/run/m1", "tmpfs", 0, 0))
				}
				w.now = w.now.Add(10 * time.Second)
				w.send(exitEv(2, "true", hostNS))
			},
			check: func(t *testing.T, w *world, s correlate.Size) {
				if s.Mounts > 500 || s.Evicted == 0 {
					t.Errorf("%d mounts in tables, %d evicted; want ≤ 500 and some evicted", s.Mounts, s.Evicted)
				}
				if w.c.Ledger().Table(20) == nil {
					t.Error("the table of ntpd's namespace, holding an open leak, was evicted")
				}
				// An evicted table is re-read on demand: a failure on the
				// leaked device is still explained.
				w.send(failEv(900, "mkfs.ext4", hostNS, 257, "/dev/loop0", 16))
				if len(w.findings) != 2 || w.findings[1].Cause != finding.CausePrivateTmp {
					for _, f := range w.findings {
						t.Log(f.Line())
					}
					t.Fatalf("%d findings; want the leak and the mkfs failure", len(w.findings))
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorldOpts(t, tt.opts, []procfs.Process{systemd}, map[uint32]string{hostNS: hostTable})
			tt.run(w)
			tt.check(t, w, w.c.Size())
		})
	}
}

// privateTmpLeak: ntpd's PrivateTmp namespace (20) keeps /srv/vol after
// kubelet unmounts it on the host.
func privateTmpLeak(w *world) {
	w.send(unshareEv(300, "(ntpd)", hostNS, 20))
	w.proc.procs = append(w.proc.procs, proc(300, "ntpd", 20, "/system.slice/ntpd.service"))
	w.proc.tables[20] = "70 69 254:0 / / rw master:1 - ext4 /dev/vda rw\n" +
		"71 70 254:0 /tmp/systemd-private-0123456789abcdef0123456789abcdef-ntpd.service-AbCdEf/tmp /tmp rw - ext4 /dev/vda rw\n" +
		"72 70 7:0 / /srv/vol rw - ext4 /dev/loop0 rw\n"
	w.send(exitEv(301, "true", 20))
	w.proc.tables[hostNS] = hostWithoutVol
	w.send(umountEv(400, "kubelet", hostNS, "/srv/vol", 0))
}

// TestGarbageCollectionForgetsFailuresPastTheRetryWindow: a collection runs once
// GCInterval of event time has passed since the last (exactly then too),
// and forgets the failures last seen longer than RetryWindow before it,
// not one seen exactly RetryWindow before nor a recent one: a retry of
// that one within the window after the collection is still folded into
// its incident.
func TestGarbageCollectionForgetsFailuresPastTheRetryWindow(t *testing.T) {
	w := newWorldOpts(t, correlate.Options{GCInterval: 10 * time.Second, RetryWindow: 5 * time.Second},
		[]procfs.Process{proc(1, "systemd", hostNS, "")}, map[uint32]string{hostNS: hostTable})
	busy := func(path string) *event.Event { return failEv(900, "mkfs.ext4", hostNS, 257, path, 16) }
	w.sendEvery(0, busy("/dev/loop1"))             // the first event: the first interval starts
	w.sendEvery(5*time.Second, busy("/dev/loop2")) // exactly RetryWindow before the collection
	w.sendEvery(5*time.Second, busy("/dev/loop0")) // exactly GCInterval after the first event
	if got, want := w.c.Size().Incidents, 2; got != want {
		t.Errorf("after the collection: %d incidents, want %d (loop2's and loop0's)", got, want)
	}
	// Nothing holds loop1 nor loop2 (no finding); loop0 is mounted at /srv/vol.
	if len(w.findings) != 1 {
		t.Fatalf("%d findings before the retry, want 1 (loop0's)", len(w.findings))
	}
	w.sendEvery(2*time.Second, busy("/dev/loop0"))
	if len(w.findings) != 1 {
		t.Errorf("a retry 2s after the failure, across a collection, was reported again: %s", w.findings[len(w.findings)-1].Line())
	}
}

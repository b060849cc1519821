package tracer_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"
	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/e2e/testkit/privtest"
	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/tracer"
)

// walkConfigs are the two path walks: the one New picks here (bpf_loop),
// and the bounded one of kernels without bpf_loop, forced, with either
// buffer (5.8 to 5.16 have a ring buffer, older kernels only perf).
var walkConfigs = []struct {
	name string
	walk tracer.PathWalk
	cfg  tracer.Config
}{
	{"bpf_loop", tracer.WalkLoop, tracer.Config{}},
	{"bounded/ringbuf", tracer.WalkBounded, tracer.WithBoundedWalk(tracer.Config{Buffer: tracer.BufferRingbuf})},
	{"bounded/perf", tracer.WalkBounded, tracer.WithBoundedWalk(tracer.Config{Buffer: tracer.BufferPerf})},
}

// startWalkTracer starts a tracer with the path walk asked for.
func startWalkTracer(t *testing.T, walk tracer.PathWalk, cfg tracer.Config) *collector {
	t.Helper()
	c := startTracerWith(t, cfg, zaptest.NewLogger(t))
	if got := c.tr.PathWalk(); got != walk {
		t.Fatalf("path walk %s, want %s", got, walk)
	}
	return c
}

// inDir runs f on a thread of its own whose working directory (and only
// its: unshare(CLONE_FS)) is dir. The thread ends with f, so no other
// goroutine ever runs with that directory. It returns a match for the
// events of f: its thread id, after it started (the runtime may have run
// the test's own calls on that thread before).
func inDir(t *testing.T, dir string, f func() error) func(*event.Event) bool {
	t.Helper()
	type result struct {
		tid   int
		start uint64
		err   error
	}
	done := make(chan result)
	go func() {
		runtimeLockForever()
		r := result{tid: unix.Gettid()}
		var ts unix.Timespec
		if r.err = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); r.err != nil {
			done <- r
			return
		}
		r.start = uint64(ts.Nano())
		if r.err = unix.Unshare(unix.CLONE_FS); r.err == nil {
			if r.err = unix.Chdir(dir); r.err == nil {
				r.err = f()
			}
		}
		done <- r
	}()
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	return func(e *event.Event) bool { return e.TID == uint32(r.tid) && e.MonoNS > r.start }
}

// waitNth returns the nth (from 0) event that satisfies match, failing
// after 10s.
func waitNth(t *testing.T, c *collector, what string, n int, match func(*event.Event) bool) event.Event {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		if evs := c.matching(match); len(evs) > n {
			return evs[n]
		}
		select {
		case <-c.added:
		case <-deadline:
			t.Fatalf("no %s event within 10s", what)
		}
	}
}

// wantErr turns an expected errno into nil and anything else into an error.
func wantErr(err, want error) error {
	if err == want {
		return nil
	}
	return &os.SyscallError{Syscall: "want " + want.Error() + ", got", Err: err}
}

// TestPathWalksAgree runs the same calls under both path walks: paths
// relative to the cwd (mount, umount2, rmdir), to a dirfd (unlinkat,
// open_tree, move_mount, mount_setattr), an fd itself (move_mount's empty
// path: resolved at exit, so it names where the tree was just moved) and a
// /proc/self/fd/N mount target. Every path the kernel side makes absolute
// is the real one, untruncated, with either walk.
func TestPathWalksAgree(t *testing.T) {
	for _, wc := range walkConfigs {
		t.Run(wc.name, func(t *testing.T) {
			c := startWalkTracer(t, wc.walk, wc.cfg)
			base := t.TempDir()
			for _, d := range []string{"a", "b", "busy", "clone", "procfd"} {
				privtest.Mkdir(t, filepath.Join(base, d))
			}
			privtest.Mount(t, "mntleak-busy", filepath.Join(base, "busy"), "tmpfs", 0, "")
			dirfd, err := unix.Open(base, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer unix.Close(dirfd)
			procfd, err := unix.Open(filepath.Join(base, "procfd"), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer unix.Close(procfd)
			t.Cleanup(func() {
				for _, d := range []string{"b", "clone", "procfd"} {
					_ = unix.Unmount(filepath.Join(base, d), unix.MNT_DETACH)
				}
			})

			fromF := inDir(t, base, func() error {
				if err := unix.Mount("a", "b", "", unix.MS_BIND, ""); err != nil {
					return err
				}
				if err := unix.Unmount("b", 0); err != nil {
					return err
				}
				if err := wantErr(rmdir("busy"), unix.EBUSY); err != nil {
					return err
				}
				if err := wantErr(unix.Unlinkat(dirfd, "busy", unix.AT_REMOVEDIR), unix.EBUSY); err != nil {
					return err
				}
				tree, err := unix.OpenTree(dirfd, "a", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
				if err != nil {
					return err
				}
				defer unix.Close(tree)
				if err := unix.MoveMount(tree, "", dirfd, "clone", unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
					return err
				}
				attr := unix.MountAttr{Propagation: unix.MS_PRIVATE}
				if err := unix.MountSetattr(dirfd, "clone", 0, &attr); err != nil {
					return err
				}
				return unix.Mount("mntleak-procfd", "/proc/self/fd/"+strconv.Itoa(procfd), "tmpfs", 0, "")
			})

			ours := func(kind event.Kind) func(*event.Event) bool {
				return func(e *event.Event) bool { return e.Kind == kind && fromF(e) }
			}
			abs := func(name string) string { return filepath.Join(base, name) }
			tests := []struct {
				what string
				kind event.Kind
				n    int // which event of that kind
				got  func(*event.Event) []string
				want []string
			}{
				{"mount a b", event.KindMount, 0, func(e *event.Event) []string { return []string{e.Source, e.Target} }, []string{abs("a"), abs("b")}},
				{"umount2 b", event.KindUmount, 0, func(e *event.Event) []string { return []string{e.Target} }, []string{abs("b")}},
				{"rmdir busy", event.KindFailure, 0, func(e *event.Event) []string { return []string{e.Syscall, e.Path} }, []string{"rmdir", abs("busy")}},
				{"unlinkat dirfd busy", event.KindFailure, 1, func(e *event.Event) []string { return []string{e.Syscall, e.Path} }, []string{"unlinkat", abs("busy")}},
				{"open_tree dirfd a", event.KindOpenTree, 0, func(e *event.Event) []string { return []string{e.Path} }, []string{abs("a")}},
				{"move_mount fd to dirfd clone", event.KindMoveMount, 0, func(e *event.Event) []string { return []string{e.FromPath, e.ToPath} }, []string{abs("clone"), abs("clone")}},
				{"mount_setattr dirfd clone", event.KindMountSetattr, 0, func(e *event.Event) []string { return []string{e.Path} }, []string{abs("clone")}},
				{"mount onto /proc/self/fd/N", event.KindMount, 1, func(e *event.Event) []string { return []string{e.Target} }, []string{abs("procfd")}},
			}
			for _, tt := range tests {
				ev := waitNth(t, c, tt.what, tt.n, ours(tt.kind))
				if got := tt.got(&ev); strings.Join(got, " ") != strings.Join(tt.want, " ") {
					t.Errorf("%s: got %q, want %q", tt.what, got, tt.want)
				}
				if len(ev.Truncated) != 0 {
					t.Errorf("%s: truncated %v", tt.what, ev.Truncated)
				}
			}
		})
	}
}

// TestPathWalkTruncates: a directory more than tracer.MaxWalk components
// deep. Relative to the cwd, rmdir of a mountpoint there (EBUSY) and the
// umount2 of it give paths marked truncated under both walks: what they
// hold is the deepest part of the real path, never another path.
func TestPathWalkTruncates(t *testing.T) {
	for _, wc := range walkConfigs {
		t.Run(wc.name, func(t *testing.T) {
			c := startWalkTracer(t, wc.walk, wc.cfg)
			deep := filepath.Join(t.TempDir(), strings.Repeat("d/", tracer.MaxWalk+4))
			busy := privtest.Mkdir(t, filepath.Join(deep, "busy"))
			if err := unix.Mount("mntleak-deep", busy, "tmpfs", 0, ""); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = unix.Unmount(busy, unix.MNT_DETACH) })
			fromF := inDir(t, deep, func() error {
				if err := wantErr(rmdir("busy"), unix.EBUSY); err != nil {
					return err
				}
				return unix.Unmount("busy", 0)
			})
			for _, tt := range []struct {
				kind  event.Kind
				field string
				path  func(*event.Event) string
			}{
				{event.KindFailure, "path", func(e *event.Event) string { return e.Path }},
				{event.KindUmount, "target", func(e *event.Event) string { return e.Target }},
			} {
				ev := c.waitFor(t, tt.kind.String(), func(e *event.Event) bool { return e.Kind == tt.kind && fromF(e) })
				got := tt.path(&ev)
				if strings.Join(ev.Truncated, ",") != tt.field {
					t.Errorf("%s %q: truncated %v, want [%s]", tt.kind, got, ev.Truncated, tt.field)
				}
				if !strings.HasSuffix(busy, got) || len(got) >= len(busy) || !strings.HasSuffix(got, "/d/busy") {
					t.Errorf("%s %q: want a proper suffix of %q", tt.kind, got, busy)
				}
			}
		})
	}
}

// Package privtest gates the tests that need root and BPF, and holds the
// small helpers they share to build real mounts, namespaces and loop
// devices, and to run the real daemon. Every helper registers its own
// cleanup.
//
// A privileged test calls Require first. Without root or BPF it skips —
// unless MNTLEAK_REQUIRE_BPF=1 (set by .ci/run), where it fails, so CI can
// never pass by skipping.
//
// The daemon in tests: Binary builds bin/mntleak once per test process
// (with -race when the tests run under it), StartDaemon runs `mntleak
// trace` and collects its log (Lines), Stop and Signal end it and fail the
// test on a race report; Poll and WaitFor are the one way to wait.
//
// Files: privtest.go (Require, mounts, namespace holders, loop devices),
// keep.go (KeepNamespace: a namespace no process runs in, kept by a bind
// of its nsfs file, made on each CPU in turn), thread.go (JoinAndHold: a
// thread of the test's that joins a namespace and holds a file there),
// cgroup.go (Cgroup, MoveToCgroup: a cgroup of the test's own, and
// moving a process into it), detach.go
// (DetachableCopy: a holder's copy that the node's rmdir detaches), daemon.go (Binary, Main, Daemon, Lines, Poll, WaitFor, ExitLimit),
// leftovers.go (what a run may leave behind), rerun.go (Rerun: a scenario
// run again only on lost events, recorded for make test's "reruns:"
// line), recorder.go (Recorder: a testing.TB that records a check's
// failures, to prove a check can fail), marker.go (Marker: wait until a
// tracer's consumer has caught up with a call made now), owned.go (Own: a
// process killed by its pidfd, never another that took its pid),
// statelog.go (WaitLogged: until the daemon's state log holds the events a test
// needs), syncbuffer.go, race_on.go and
// race_off.go (whether the race detector is on).
package privtest

// Package privtest gates the tests that need root and BPF, and holds the
// small helpers they share to build real mounts, namespaces and loop
// devices. Every helper registers its own cleanup.
//
// A privileged test calls Require first. Without root or BPF it skips —
// unless MNTLEAK_REQUIRE_BPF=1 (set by .ci/run), where it fails, so CI can
// never pass by skipping.
package privtest

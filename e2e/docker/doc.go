// Package docker reproduces the five incidents mntleak was designed from
// (../shared/seeds, written up in docs/incidents.md) with a real Docker
// Engine, and checks what the real mntleak daemon logs about each. It holds
// tests only: the scripts in scripts/ make each incident happen.
//
// Files: harness_test.go (TestMain; run: the daemon around one script,
// its findings and the script's expectations; the release point),
// incidents_privileged_test.go (TestIncidents, TestControlChurn, and
// TestIncidentDocs: docs/incidents.md shows every script as it runs),
// release_test.go (what mntleak release must do at each incident's release
// point), rootfs_held_privileged_test.go (TestRootfsHeldByAnAgent, issue
// 28 item 5: containerd's shim cannot unmount a rootfs an agent holds);
// scripts/lib.sh (a Docker Engine of the incident's own, on
// e2e/scenarios/common.sh, the helpers every seed script shares) and one
// script per incident, control-churn.sh the control: each incident's
// script tells its seed's story (e2e/scenarios/seeds/<seed>.sh, shared
// with the recorded scenarios and the QEMU guest) with Docker's own
// steps (containers, dockerd's restart, ip netns); scripts/issue28/ the
// situations of issue 28 (rootfs-held.sh: the rootfs an agent holds, with
// its control).
package docker

// Command mntleak traces mount-namespace lineage and explains mount leaks.
//
//	mntleak trace [flags]    run the daemon until SIGINT/SIGTERM
//	mntleak replay FILE      explain a recorded stream
//	mntleak why TARGET       what holds a path or device now
//	mntleak why pod NS/NAME  what holds a pod's mounts now
//	mntleak audit            leaked mounts and risky settings now
//	mntleak release TARGET   detach a leaked copy (a plan; --apply acts)
//	mntleak version          version and kernel features
//
// This package holds only flags, their checks, signal handling and exit
// codes; the daemon's pipeline is package daemon, the explanations are
// package correlate, audit's checks package audit, and a finding's
// types and wording package finding.
//
// Files: main.go (commands, exit codes, the one-shot commands' collector), trace.go, replay.go, why.go,
// audit.go, version.go, release.go (each command's flags and wiring),
// whypod.go (why pod: the pod's UID, its objects from package podmounts,
// each asked of one snapshot, named in pod terms), k8sevents.go (whether
// Events are on when --k8s-events is not given),
// release_target.go (what release acts on: a finding by id or as logged;
// a copy by namespace and mount id is release.CopyTarget), release_check.go
// (release's checker: the daemon's ledger, a finding checked against the
// one the daemon kept and the boot, each step proven and printed with its
// evidence), release_log.go (where each release
// action is recorded: stderr, the journal, the state dir), flags.go (list
// flags), sight.go (what why and audit can see of the node: processes,
// counted from the process list their snapshot read, and the view their
// paths are looked up in, said on one line).
package main

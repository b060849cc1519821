package main

import (
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"
)

// Exit codes.
const (
	exitOK    = 0
	exitError = 1 // the command ran and failed
	exitUsage = 2 // bad input: flags, arguments
	// exitBlind: why or audit found nothing, but could not see the node
	// (missing capabilities, no hostPID): not an all-clear.
	exitBlind = 3
)

const usage = `usage: mntleak <command> [flags]

Commands:
  trace    stream mount-lineage events (mount, umount2, unshare, setns,
           new-namespace forks, pivot_root, the new mount API, EBUSY failures)
           until SIGINT or SIGTERM, and explain failures and leaks (findings
           go to the log)
  replay   run the correlator over a stream recorded with trace --record
           (FILE, or - for standard input)
  why      say what holds a path, a device or major:minor now (exit 1 if held,
           3 if nothing was found but the node could not be seen); why pod
           NAMESPACE/NAME (or --pod-uid UID): what holds a pod's mounts
  release  detach a leaked copy inside the namespace that holds it, so the
           stuck teardown goes through (a plan by default; --apply acts)
  audit    scan every mount namespace for leaked mounts and risky settings (exit 1
           on a leak, 3 if none was found but the node could not be seen)
  version  print the version, the commit and the kernel features detected

Run 'mntleak <command> -h' for the flags of a command.
`

func main() {
	if len(os.Args) > 1 && isOneShot(os.Args[1]) {
		collectOnlyNearLimit()
	}
	os.Exit(runWith(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// isOneShot tells the commands that read the node once and exit: why and
// audit (a snapshot of every process and namespace, about 40 ms on a node
// of 2,000 processes and 300 namespaces).
func isOneShot(command string) bool { return command == "why" || command == "audit" }

// oneShotMemoryLimit is the heap a one-shot command may reach before the
// collector runs. Such a run allocates a few MB for each thousand
// processes (the snapshot's tables and lists: its peak RSS was 19 MB
// collected, 22 MB not, on the node above); the limit only guards a node
// far larger than that.
const oneShotMemoryLimit = 512 << 20

// collectOnlyNearLimit turns the collector off but near oneShotMemoryLimit:
// a one-shot command's heap is all garbage at its exit, and collecting it
// on the way cost 3–7 ms of CPU and 2–4 ms of the wall (perf stat -r 10,
// audit and why on the node above). Set in main only, not in runWith,
// which the tests call in their own process.
func collectOnlyNearLimit() {
	debug.SetMemoryLimit(oneShotMemoryLimit)
	debug.SetGCPercent(-1)
}

// run is runWith with nothing on standard input.
func run(args []string, stdout, stderr io.Writer) int {
	return runWith(args, strings.NewReader(""), stdout, stderr)
}

func runWith(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	switch args[0] {
	case "trace":
		return runTrace(args[1:], stdout, stderr)
	case "replay":
		return runReplay(args[1:], stdin, stdout, stderr)
	case "why":
		return runWhy(args[1:], stdout, stderr)
	case "audit":
		return runAudit(args[1:], stdout, stderr)
	case "release":
		return runRelease(args[1:], stdout, stderr)
	case "version":
		return runVersion(args[1:], stdout, stderr)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return exitOK
	}
	fmt.Fprintf(stderr, "mntleak: unknown command %q (see 'mntleak help')\n", args[0])
	return exitUsage
}

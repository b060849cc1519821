package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/correlate"
	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/finding"
	"github.com/mntleak/mntleak/nodeview"
	"github.com/mntleak/mntleak/procfs"
	"github.com/mntleak/mntleak/state"
)

var majMin = regexp.MustCompile(`^[0-9]+:[0-9]+$`)

// parseTarget turns the argument of `mntleak why` into a target: a path
// (mountpoint, directory, file), a block device, or major:minor; paths are
// looked up in the view (the node's files, from a pod).
func parseTarget(arg string, view nodeview.View) (correlate.Target, error) {
	if majMin.MatchString(arg) {
		dev, err := event.ParseDev(arg)
		return correlate.Target{Dev: dev}, err
	}
	if arg == "" {
		return correlate.Target{}, errors.New("empty target")
	}
	abs, err := filepath.Abs(arg)
	if err != nil {
		return correlate.Target{}, err
	}
	st, err := view.Stat(abs)
	if err != nil {
		return correlate.Target{}, fmt.Errorf("%s: %w", arg, err)
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFBLK:
		return correlate.Target{Path: abs, Dev: event.MakeDev(unix.Major(st.Rdev), unix.Minor(st.Rdev))}, nil
	case unix.S_IFCHR:
		return correlate.Target{}, fmt.Errorf("%s is a character device: give a path, a block device or major:minor", arg)
	}
	return correlate.Target{Path: abs}, nil
}

func runWhy(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "pod" {
		return runWhyPod(args[1:], stdout, stderr)
	}
	fs := flag.NewFlagSet("mntleak why", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print the finding as JSON")
	stateDir := fs.String("state-dir", "/var/lib/mntleak", "persistent lineage of a daemon, if any: cite recorded events instead of inferring")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: mntleak why [flags] PATH|DEVICE|MAJOR:MINOR\n       mntleak why pod [flags] NAMESPACE/NAME (see mntleak why pod -h)\n\nSays what holds a mount, a device or a directory now: every namespace that has it\nmounted, the processes that pin it, and the most likely cause. Exit 0 when\nnothing holds it, 1 when something does, 2 on bad input, 3 when nothing was\nfound but the node could not be seen (missing capabilities, no hostPID). Needs root.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if code, done := parseCommand(fs, args, "why", stderr); done {
		return code
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(stderr, "mntleak why: want exactly one PATH, DEVICE or MAJOR:MINOR")
		return exitUsage
	}
	access, view, err := sight(procfs.Host{})
	if err != nil {
		fmt.Fprintf(stderr, "mntleak why: %v\n", err)
		return exitError
	}
	target, err := parseTarget(fs.Arg(0), view)
	if err != nil {
		fmt.Fprintf(stderr, "mntleak why: %v\n", err)
		return exitUsage
	}
	target.Asker = os.Getpid()
	// The path is seen from the view's namespace: mntleak's own on the
	// node (a copy there is the asker's own, whatever the host's is), the
	// node's from a container with hostPID.
	target.MntNS = view.MntNS
	f, vis, err := why(target, access, *stateDir)
	if err != nil {
		fmt.Fprintf(stderr, "mntleak why: %v\n", err)
		return exitError
	}
	fmt.Fprintf(stderr, "mntleak why: %s\n", sightLine(vis, view))
	if f == nil {
		if *asJSON {
			b, _ := json.Marshal(struct {
				Held       bool          `json:"held"`
				Complete   bool          `json:"complete"`
				Incomplete string        `json:"incomplete,omitempty"`
				View       nodeview.Kind `json:"view"`
			}{false, vis.Complete(), vis.Text(), view.Kind})
			fmt.Fprintln(stdout, string(b))
		} else if vis.Blind() {
			fmt.Fprintf(stdout, "nothing found holding %s among what could be read\n", finding.Escape(fs.Arg(0)))
		} else {
			fmt.Fprintf(stdout, "nothing holds %s\n", finding.Escape(fs.Arg(0)))
		}
		if vis.Blind() {
			return exitBlind
		}
		return exitOK
	}
	if err := f.Check(); err != nil {
		// A finding without a cause or a fix is a bug, never a verdict.
		fmt.Fprintf(stderr, "mntleak why: refusing an unfit finding (a bug in mntleak): %v\n", err)
		return exitError
	}
	if *asJSON {
		b, _ := json.Marshal(f)
		fmt.Fprintln(stdout, string(b))
	} else {
		fmt.Fprint(stdout, f.Report())
	}
	return exitError // 1: something holds it
}

// why takes one snapshot of /proc (one mountinfo per namespace), applies the
// persistent lineage when there is one, and explains the target; with
// access, it says what the snapshot could not see.
func why(t correlate.Target, access procfs.Visibility, stateDir string) (*finding.Finding, procfs.Visibility, error) {
	corr, list, err := snapshot(stateDir)
	if err != nil {
		return nil, access, err
	}
	f := corr.Why(t, time.Now())
	return f, list.visibility(access, corr), nil
}

// snapshot is a correlator that has read /proc once, after the persistent
// lineage in stateDir ("" for none) when there is one, and the /proc it
// read, which kept its process list. The list reads no process's cgroup:
// Correlator.Why reads those of the processes its finding names.
func snapshot(stateDir string) (*correlate.Correlator, *listKept, error) {
	list := &listKept{Host: procfs.Host{ListWithoutCgroups: true}}
	corr := correlate.New(list, correlate.Options{}, func(*finding.Finding) {})
	if stateDir != "" {
		if boot, err := state.BootID(); err == nil {
			events, _, err := state.Load(stateDir, boot)
			if err == nil {
				for _, ev := range events {
					corr.Remember(ev)
				}
			}
		}
	}
	if err := corr.Start(); err != nil {
		return nil, nil, fmt.Errorf("snapshot of /proc: %w", err)
	}
	return corr, list, nil
}

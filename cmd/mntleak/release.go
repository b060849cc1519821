package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/mntleak/mntleak/correlate"
	"github.com/mntleak/mntleak/finding"
	"github.com/mntleak/mntleak/nodeview"
	"github.com/mntleak/mntleak/procfs"
	"github.com/mntleak/mntleak/release"
	"github.com/mntleak/mntleak/sink/journald"
)

// actionRecord is what release logs of each copy, as one JSON line on
// stderr: the plan, the checks and the result.
type actionRecord struct {
	Action string           `json:"action"` // always "release"
	Result string           `json:"result"` // planned, released, refused, failed
	Step   *release.Step    `json:"step,omitempty"`
	Refuse *release.Refusal `json:"refused,omitempty"`
	Error  string           `json:"error,omitempty"`
}

func runRelease(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mntleak release", flag.ContinueOnError)
	fs.SetOutput(stderr)
	apply := fs.Bool("apply", false, "act: detach the planned copies (without it, only print the plan)")
	force := fs.Bool("force", false, "detach copies that processes work in (they keep what they have open and lose the path)")
	mntns := fs.Uint("mntns", 0, "with --mount-id: the namespace of the copy (its inode, as mnt:[INODE] shows)")
	mountID := fs.Int("mount-id", 0, "with --mntns: the copy's mount id in that namespace")
	mntnsID := fs.Uint64("mntns-id", 0, "with --mntns: the namespace's birth id a plan showed (born id); refused when the live namespace was born with another (its inode was reused)")
	uniqueID := fs.Uint64("unique-id", 0, "with --mount-id: the mount's unique id a plan showed; refused when the mount id names another mount now")
	stateDir := fs.String("state-dir", "/var/lib/mntleak", "persistent lineage of a daemon, if any")
	journalSocket := fs.String("journald-socket", journald.SocketPath, "the journal's native socket, where every action is logged (MNTLEAK_ACTION=release); \"\" for none")
	fromFinding := fs.String("finding", "", "release what a finding names: its id (finding_id, MNTLEAK_FINDING_ID; looked up in --state-dir), or a file (- for stdin) holding one finding as the daemon logs it (JSON log line, journalctl -o json entry, or why --json)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: mntleak release [flags] PATH|DEVICE|MAJOR:MINOR\n       mntleak release [flags] --mntns INODE --mount-id ID\n       mntleak release [flags] --finding FILE|-\n\n"+
			"Plans, and with --apply carries out, the detach of a leaked copy inside the namespace that\n"+
			"holds it (umount2 MNT_DETACH from a thread that enters it), after checking that the mount is\n"+
			"still the planned one. Refuses copies that are not leaks, namespace roots, copies processes\n"+
			"work in (unless --force), and the host's or its own namespace. Exit 0 when the plan can be\n"+
			"(or was) carried out, 1 when it was refused, failed or there is nothing to do, 2 on bad input.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if code, done := parseCommand(fs, args, "release", stderr); done {
		return code
	}
	actions := newActionLog(*stateDir, *journalSocket, stderr)
	logAction := actions.log
	checker, err := newChecker(*stateDir)
	if err != nil {
		fmt.Fprintf(stderr, "mntleak release: %v\n", err)
		return exitError
	}
	explicit := *mntns != 0 || *mountID != 0
	var given *finding.Finding
	if *fromFinding != "" {
		if explicit || fs.NArg() != 0 {
			fmt.Fprintln(stderr, "mntleak release: --finding goes alone, without a target or --mntns/--mount-id")
			return exitUsage
		}
		f, err := openFinding(*fromFinding, *stateDir)
		if err != nil {
			fmt.Fprintf(stderr, "mntleak release: --finding %s: %v\n", *fromFinding, err)
			return exitUsage
		}
		given = f
		if err := checkFinding(f, *stateDir, &checker); err != nil {
			r := release.Refusal{Reason: err.Error(), Hint: "run mntleak why on the object for a finding about the machine as it is now"}
			fmt.Fprintf(stdout, "refused: %s; %s\n", finding.Escape(r.Reason), r.Hint)
			logAction(actionRecord{Result: "refused", Refuse: &r})
			return exitError
		}
		if err := sameHolders(f); err != nil {
			r := release.Refusal{Reason: err.Error(), Hint: "run mntleak why on the object for a finding about the machine as it is now"}
			fmt.Fprintf(stdout, "refused: %s; %s\n", finding.Escape(r.Reason), r.Hint)
			logAction(actionRecord{Result: "refused", Refuse: &r})
			return exitError
		}
		if r, refused := refuseFinding(f); refused {
			fmt.Fprintf(stdout, "refused: %s; %s\n", r.Reason, finding.Escape(r.Hint))
			logAction(actionRecord{Result: "refused", Refuse: &r})
			return exitError
		}
		if ns, id := releaseCopy(f); id != 0 {
			*mntns, *mountID, explicit = uint(ns), id, true
			if *mntnsID == 0 {
				*mntnsID = holderBorn(f, ns) // the plan's, checked again when it acts
			}
		}
	}
	switch {
	case given != nil:
	case explicit && (*mntns == 0 || *mountID == 0 || fs.NArg() != 0):
		fmt.Fprintln(stderr, "mntleak release: --mntns and --mount-id go together, without a target")
		return exitUsage
	case !explicit && (*mntnsID != 0 || *uniqueID != 0):
		fmt.Fprintln(stderr, "mntleak release: --mntns-id and --unique-id go with the copy they name: --mntns and --mount-id, or a finding's")
		return exitUsage
	case !explicit && fs.NArg() != 1:
		fmt.Fprintln(stderr, "mntleak release: want exactly one PATH, DEVICE or MAJOR:MINOR, or --mntns and --mount-id")
		return exitUsage
	}
	var target correlate.Target
	if explicit {
		var ok bool
		if target, ok = copyTarget(stdout, logAction, given, checker, uint32(*mntns), *mountID, *mntnsID); !ok {
			return exitError
		}
	} else if given != nil {
		target = correlate.Target{Path: given.Object.Path, Dev: given.Object.Dev}
	} else if target, err = parseTarget(fs.Arg(0), nodeview.AsGiven()); err != nil {
		fmt.Fprintf(stderr, "mntleak release: %v\n", err)
		return exitUsage
	}
	target.Asker = os.Getpid()
	self, err := selfNS()
	if err != nil {
		fmt.Fprintf(stderr, "mntleak release: %v\n", err)
		return exitError
	}
	target.MntNS = self
	f, _, err := why(target, procfs.Visibility{}, *stateDir)
	if err != nil {
		fmt.Fprintf(stderr, "mntleak release: %v\n", err)
		return exitError
	}
	if f == nil {
		// By a copy: who released it, if one did. By a device: nothing
		// holds it, and the last release of a copy of that device number
		// (an anonymous one, tmpfs's, is reused: its time tells).
		if !explicit || !saidReleased(stdout, logAction, uint32(*mntns), *mountID) {
			fmt.Fprintln(stdout, "nothing holds it: nothing to release")
		}
		if took := release.ReleasedDevice(release.LockDir, target.Dev); !explicit && target.Dev != 0 && len(took) > 0 {
			fmt.Fprintf(stdout, "last released: %s\n", finding.Escape(took[len(took)-1].String()))
		}
		return exitError
	}
	host, err := procfs.Host{}.HostNS()
	if err != nil {
		fmt.Fprintf(stderr, "mntleak release: %v\n", err)
		return exitError
	}
	if err := keptBusyCopy(f, *stateDir, &checker); err != nil {
		fmt.Fprintf(stderr, "mntleak release: %v\n", err)
		return exitError
	}
	if f.Cause.IsLeak() && !f.Inferred {
		checker.Verdict = "the verdict now: " + f.Cause.String() + ": " + f.Summary
	}
	plan := release.Make(f, host, self, *force)
	if explicit {
		plan = plan.Only(uint32(*mntns), *mountID)
		for i := range plan.Steps {
			plan.Steps[i].NSID, plan.Steps[i].Unique = *mntnsID, *uniqueID // the plan's, checked by identify
		}
	}
	code := exitOK
	plan, failed := identify(checker, plan)
	if failed {
		code = exitError
	}
	if len(plan.Steps) == 0 && explicit && copyGone(uint32(*mntns), *mountID) && saidReleased(stdout, logAction, uint32(*mntns), *mountID) {
		// The copy named went while this release looked: another release
		// took it. What the live state shows now (a program that opened the
		// freed device, say) is not about this copy.
		return exitError
	}
	for i := range plan.Refused {
		r := plan.Refused[i]
		if r.MntNS == 0 {
			fmt.Fprintf(stdout, "refused: %s; %s\n", r.Reason, finding.Escape(r.Hint))
		} else {
			fmt.Fprintf(stdout, "refused: mnt:[%d] at %s: %s; %s\n", r.MntNS, finding.Escape(r.Where), finding.Escape(r.Reason), finding.Escape(r.Hint))
		}
		logAction(actionRecord{Result: "refused", Refuse: &r})
	}
	if len(plan.Steps) == 0 {
		fmt.Fprintln(stdout, "nothing to release")
		return exitError
	}
	if carryOut(stdout, logAction, checker, plan.Steps, *apply) {
		code = exitError
	}
	return code
}

// copyGone reports whether mount id is no longer in namespace ns.
func copyGone(ns uint32, id int) bool {
	_, _, err := release.CopyTarget(ns, id)
	return err != nil
}

// copyTarget is the object of the copy --mntns/--mount-id (or a finding's
// release command) names, checked against the finding given and the birth
// id given (0: none); false when refused, having said why.
func copyTarget(stdout io.Writer, logAction func(actionRecord), given *finding.Finding, checker release.Checker, ns uint32, id int, nsid uint64) (correlate.Target, bool) {
	if given != nil {
		if err := sameGeneration(given, checker, ns); err != nil {
			fmt.Fprintf(stdout, "refused: %v\n", err)
			return correlate.Target{}, false
		}
	}
	if err := sameBirth(ns, nsid); err != nil {
		fmt.Fprintf(stdout, "refused: %v\n", err)
		return correlate.Target{}, false
	}
	target, at, err := release.CopyTarget(ns, id)
	if err != nil {
		// Gone or changed since it was planned: nothing is done.
		if !saidReleased(stdout, logAction, ns, id) {
			fmt.Fprintf(stdout, "refused: %v\n", err)
		}
		return correlate.Target{}, false
	}
	if given != nil && target.Dev != given.Object.Dev {
		fmt.Fprintf(stdout, "refused: the finding differs from the live state: its object is %s, mount %d in mnt:[%d] is %s now\n", given.Object.Dev, id, ns, target.Dev)
		return correlate.Target{}, false
	}
	if where := holderAt(given, ns, id); where != "" && where != at {
		// The mount id went to a new mount elsewhere, on a device number
		// handed out again too (an anonymous one, tmpfs's).
		fmt.Fprintf(stdout, "refused: the finding differs from the live state: its copy was at %s, mount %d in mnt:[%d] is at %s now\n",
			finding.Escape(where), id, ns, finding.Escape(at))
		return correlate.Target{}, false
	}
	return target, true
}

// carryOut prints each step and, with apply, acts on it; it reports
// whether one was refused or failed at the moment of acting. A dry run
// ends with the command that acts on exactly the copies it planned.
func carryOut(stdout io.Writer, logAction func(actionRecord), checker release.Checker, steps []release.Step, apply bool) bool {
	failed := false
	for i := range steps {
		s := steps[i]
		printStep(stdout, s)
		if !apply {
			logAction(actionRecord{Result: "planned", Step: &s})
			continue
		}
		if err := checker.Apply(s, release.LockDir); err != nil {
			result := "failed"
			if release.IsNotLeak(err) {
				result = "refused" // proven otherwise at the moment of acting
			}
			fmt.Fprintf(stdout, "%s: mnt:[%d] at %s: %s\n", result, s.MntNS, finding.Escape(s.Where), finding.Escape(err.Error()))
			logAction(actionRecord{Result: result, Step: &s, Error: err.Error()})
			failed = true
			continue
		}
		fmt.Fprintf(stdout, "released: mount %d at %s is gone from mnt:[%d]\n", s.MountID, finding.Escape(s.Where), s.MntNS)
		logAction(actionRecord{Result: "released", Step: &s})
	}
	if !apply {
		for _, s := range steps {
			fmt.Fprintf(stdout, "to act on exactly this copy: mntleak release --mntns %d --mount-id %d --mntns-id %d --unique-id %d --apply\n", s.MntNS, s.MountID, s.NSID, s.Unique)
		}
		fmt.Fprintln(stdout, "dry run: nothing changed (--apply to act)")
	}
	return failed
}

func names(ps []finding.ProcRef) string {
	if len(ps) == 0 {
		return "nothing"
	}
	out := ""
	for i, p := range ps {
		if i == 3 {
			out += ", +" + strconv.Itoa(len(ps)-3) + " more"
			break
		}
		if i > 0 {
			out += ", "
		}
		out += finding.Escape(p.Comm) + "[" + strconv.Itoa(p.PID) + "]"
	}
	return out
}

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

// releaseFlags are the flags of mntleak release, and the arguments after
// them.
type releaseFlags struct {
	apply         bool   // --apply
	force         bool   // --force
	mntns         uint   // --mntns
	mountID       int    // --mount-id
	mntnsID       uint64 // --mntns-id
	uniqueID      uint64 // --unique-id
	stateDir      string // --state-dir
	journalSocket string // --journald-socket
	fromFinding   string // --finding
	args          []string
}

// releaseRun is one run of mntleak release: its flags, where it writes,
// the log of its actions, its checker, and the copy and finding it acts on.
type releaseRun struct {
	releaseFlags
	stdout, stderr io.Writer
	logAction      func(actionRecord)
	checker        release.Checker
	explicit       bool             // a copy is named: by --mntns/--mount-id, or by the finding's release command
	given          *finding.Finding // the finding --finding names; nil without it
}

// runRelease is mntleak release: it parses the flags, resolves the target,
// asks why of it, plans, and with --apply carries out.
func runRelease(args []string, stdout, stderr io.Writer) int {
	fl, code, done := parseReleaseFlags(args, stderr)
	if done {
		return code
	}
	actions := newActionLog(fl.stateDir, fl.journalSocket, stderr)
	logAction := actions.log
	checker, err := newChecker(fl.stateDir)
	if err != nil {
		fmt.Fprintf(stderr, "mntleak release: %v\n", err)
		return exitError
	}
	r := &releaseRun{
		releaseFlags: fl,
		stdout:       stdout,
		stderr:       stderr,
		logAction:    logAction,
		checker:      checker,
		explicit:     fl.mntns != 0 || fl.mountID != 0,
	}
	if r.fromFinding != "" {
		if code, done = r.takeFinding(); done {
			return code
		}
	}
	target, code, done := r.resolveTarget()
	if done {
		return code
	}
	f, code, done := r.askWhy(target)
	if done {
		return code
	}
	return r.planAndCarryOut(f, target.MntNS)
}

// parseReleaseFlags parses the flags of mntleak release; done is true when
// the command ends there (-h, or bad flags), with exit code code.
func parseReleaseFlags(args []string, stderr io.Writer) (fl releaseFlags, code int, done bool) {
	fs := flag.NewFlagSet("mntleak release", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.BoolVar(&fl.apply, "apply", false, "act: detach the planned copies (without it, only print the plan)")
	fs.BoolVar(&fl.force, "force", false, "detach copies that processes work in (they keep what they have open and lose the path)")
	fs.UintVar(&fl.mntns, "mntns", 0, "with --mount-id: the namespace of the copy (its inode, as mnt:[INODE] shows)")
	fs.IntVar(&fl.mountID, "mount-id", 0, "with --mntns: the copy's mount id in that namespace")
	fs.Uint64Var(&fl.mntnsID, "mntns-id", 0, "with --mntns: the namespace's birth id a plan showed (born id); refused when the live namespace was born with another (its inode was reused)")
	fs.Uint64Var(&fl.uniqueID, "unique-id", 0, "with --mount-id: the mount's unique id a plan showed; refused when the mount id names another mount now")
	fs.StringVar(&fl.stateDir, "state-dir", "/var/lib/mntleak", "persistent lineage of a daemon, if any")
	fs.StringVar(&fl.journalSocket, "journald-socket", journald.SocketPath, "the journal's native socket, where every action is logged (MNTLEAK_ACTION=release); \"\" for none")
	fs.StringVar(&fl.fromFinding, "finding", "", "release what a finding names: its id (finding_id, MNTLEAK_FINDING_ID; looked up in --state-dir), or a file (- for stdin) holding one finding as the daemon logs it (JSON log line, journalctl -o json entry, or why --json)")
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
		return fl, code, true
	}
	fl.args = fs.Args()
	return fl, exitOK, false
}

// takeFinding reads the finding --finding names, refuses it when the
// daemon's ledger or the live state says otherwise, and takes the copy its
// release command names (and that namespace's birth id) as the target;
// done is true when the command ends there, with exit code code.
func (r *releaseRun) takeFinding() (code int, done bool) {
	if r.explicit || len(r.args) != 0 {
		fmt.Fprintln(r.stderr, "mntleak release: --finding goes alone, without a target or --mntns/--mount-id")
		return exitUsage, true
	}
	f, err := openFinding(r.fromFinding, r.stateDir)
	if err != nil {
		fmt.Fprintf(r.stderr, "mntleak release: --finding %s: %v\n", r.fromFinding, err)
		return exitUsage, true
	}
	r.given = f
	if err := checkFinding(f, r.stateDir, &r.checker); err != nil {
		refusal := release.Refusal{Reason: err.Error(), Hint: "run mntleak why on the object for a finding about the machine as it is now"}
		fmt.Fprintf(r.stdout, "refused: %s; %s\n", finding.Escape(refusal.Reason), refusal.Hint)
		r.logAction(actionRecord{Result: "refused", Refuse: &refusal})
		return exitError, true
	}
	if err := sameHolders(f); err != nil {
		refusal := release.Refusal{Reason: err.Error(), Hint: "run mntleak why on the object for a finding about the machine as it is now"}
		fmt.Fprintf(r.stdout, "refused: %s; %s\n", finding.Escape(refusal.Reason), refusal.Hint)
		r.logAction(actionRecord{Result: "refused", Refuse: &refusal})
		return exitError, true
	}
	if refusal, refused := refuseFinding(f); refused {
		fmt.Fprintf(r.stdout, "refused: %s; %s\n", refusal.Reason, finding.Escape(refusal.Hint))
		r.logAction(actionRecord{Result: "refused", Refuse: &refusal})
		return exitError, true
	}
	if ns, id := releaseCopy(f); id != 0 {
		r.mntns, r.mountID, r.explicit = uint(ns), id, true
		if r.mntnsID == 0 {
			r.mntnsID = holderBorn(f, ns) // the plan's, checked again when it acts
		}
	}
	return exitOK, false
}

// resolveTarget checks that the target is named one way only and turns it
// into the object to ask why of, seen from mntleak's own namespace: the
// copy named, the finding's object, or the PATH, DEVICE or MAJOR:MINOR
// argument. done is true when the command ends there, with exit code code.
func (r *releaseRun) resolveTarget() (target correlate.Target, code int, done bool) {
	switch {
	case r.given != nil:
	case r.explicit && (r.mntns == 0 || r.mountID == 0 || len(r.args) != 0):
		fmt.Fprintln(r.stderr, "mntleak release: --mntns and --mount-id go together, without a target")
		return target, exitUsage, true
	case !r.explicit && (r.mntnsID != 0 || r.uniqueID != 0):
		fmt.Fprintln(r.stderr, "mntleak release: --mntns-id and --unique-id go with the copy they name: --mntns and --mount-id, or a finding's")
		return target, exitUsage, true
	case !r.explicit && len(r.args) != 1:
		fmt.Fprintln(r.stderr, "mntleak release: want exactly one PATH, DEVICE or MAJOR:MINOR, or --mntns and --mount-id")
		return target, exitUsage, true
	}
	if r.explicit {
		var ok bool
		if target, ok = copyTarget(r.stdout, r.logAction, r.given, r.checker, uint32(r.mntns), r.mountID, r.mntnsID); !ok {
			return target, exitError, true
		}
	} else if r.given != nil {
		target = correlate.Target{Path: r.given.Object.Path, Dev: r.given.Object.Dev}
	} else {
		var err error
		if target, err = parseTarget(r.args[0], nodeview.AsGiven()); err != nil {
			fmt.Fprintf(r.stderr, "mntleak release: %v\n", err)
			return target, exitUsage, true
		}
	}
	target.Asker = os.Getpid()
	self, err := selfNS()
	if err != nil {
		fmt.Fprintf(r.stderr, "mntleak release: %v\n", err)
		return target, exitError, true
	}
	target.MntNS = self
	return target, exitOK, false
}

// askWhy asks why of target: f is the finding of what holds it now. When
// nothing holds it, askWhy says so (or which release took the copy), and
// done is true with exit code code, as it is on an error.
func (r *releaseRun) askWhy(target correlate.Target) (f *finding.Finding, code int, done bool) {
	f, _, err := why(target, procfs.Visibility{}, r.stateDir)
	if err != nil {
		fmt.Fprintf(r.stderr, "mntleak release: %v\n", err)
		return nil, exitError, true
	}
	if f == nil {
		// By a copy: who released it, if one did. By a device: nothing
		// holds it, and the last release of a copy of that device number
		// (an anonymous one, tmpfs's, is reused: its time tells).
		if !r.explicit || !saidReleased(r.stdout, r.logAction, uint32(r.mntns), r.mountID) {
			fmt.Fprintln(r.stdout, "nothing holds it: nothing to release")
		}
		if took := release.ReleasedDevice(release.LockDir, target.Dev); !r.explicit && target.Dev != 0 && len(took) > 0 {
			fmt.Fprintf(r.stdout, "last released: %s\n", finding.Escape(took[len(took)-1].String()))
		}
		return nil, exitError, true
	}
	return f, exitOK, false
}

// planAndCarryOut makes the plan for finding f, seen from namespace self
// (only the copy named, when one is), identifies each step, prints the
// refusals and carries out the rest: the exit code.
func (r *releaseRun) planAndCarryOut(f *finding.Finding, self uint32) int {
	host, err := procfs.Host{}.HostNS()
	if err != nil {
		fmt.Fprintf(r.stderr, "mntleak release: %v\n", err)
		return exitError
	}
	if err := keptBusyCopy(f, r.stateDir, &r.checker); err != nil {
		fmt.Fprintf(r.stderr, "mntleak release: %v\n", err)
		return exitError
	}
	if f.Cause.IsLeak() && !f.Inferred {
		r.checker.Verdict = "the verdict now: " + f.Cause.String() + ": " + f.Summary
	}
	plan := release.Make(f, host, self, r.force)
	if r.explicit {
		plan = plan.Only(uint32(r.mntns), r.mountID)
		for i := range plan.Steps {
			plan.Steps[i].NSID, plan.Steps[i].Unique = r.mntnsID, r.uniqueID // the plan's, checked by identify
		}
	}
	code := exitOK
	plan, failed := identify(r.checker, plan)
	if failed {
		code = exitError
	}
	if len(plan.Steps) == 0 && r.explicit && copyGone(uint32(r.mntns), r.mountID) && saidReleased(r.stdout, r.logAction, uint32(r.mntns), r.mountID) {
		// The copy named went while this release looked: another release
		// took it. What the live state shows now (a program that opened the
		// freed device, say) is not about this copy.
		return exitError
	}
	for i := range plan.Refused {
		refusal := plan.Refused[i]
		if refusal.MntNS == 0 {
			fmt.Fprintf(r.stdout, "refused: %s; %s\n", refusal.Reason, finding.Escape(refusal.Hint))
		} else {
			fmt.Fprintf(r.stdout, "refused: mnt:[%d] at %s: %s; %s\n", refusal.MntNS, finding.Escape(refusal.Where), finding.Escape(refusal.Reason), finding.Escape(refusal.Hint))
		}
		r.logAction(actionRecord{Result: "refused", Refuse: &refusal})
	}
	if len(plan.Steps) == 0 {
		fmt.Fprintln(r.stdout, "nothing to release")
		return exitError
	}
	if carryOut(r.stdout, r.logAction, r.checker, plan.Steps, r.apply) {
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

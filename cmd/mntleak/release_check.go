package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/mntleak/mntleak/release"
	"github.com/mntleak/mntleak/state"

	"github.com/mntleak/mntleak/finding"
)

// newChecker is the leak prover release uses: live tables, and the
// daemon's ledger of this boot when stateDir holds one.
func newChecker(stateDir string) (release.Checker, error) {
	var c release.Checker
	if stateDir == "" {
		return c, nil
	}
	boot, err := state.BootID()
	if err != nil {
		return c, fmt.Errorf("boot id: %w", err)
	}
	events, _, err := state.Load(stateDir, boot) // damage only loses evidence: the proof then refuses
	if err != nil {
		return c, fmt.Errorf("state dir %s: %w", stateDir, err)
	}
	if len(events) > 0 {
		c.Ledger = &release.Ledger{Events: events}
	}
	return c, nil
}

// checkFinding refuses a finding from another boot, or one that differs
// from the one the daemon kept under its id; a busy-copy finding the
// daemon kept gives the checker its failed unmount as evidence.
func checkFinding(f *finding.Finding, stateDir string, c *release.Checker) error {
	booted, err := release.BootTime()
	if err != nil {
		return err
	}
	var kept *finding.Finding
	if stateDir != "" {
		b, err := state.LookupFinding(stateDir, f.ID())
		switch {
		case err == nil:
			if kept, err = readFinding(bytes.NewReader(b)); err != nil {
				return fmt.Errorf("the finding kept in %s under id %s: %w", stateDir, f.ID(), err)
			}
		case !errors.Is(err, state.ErrNoFinding):
			return fmt.Errorf("look up finding %s in %s: %w", f.ID(), stateDir, err)
		}
	}
	if err := release.CheckFinding(f, kept, booted); err != nil {
		return err
	}
	if kept != nil && kept.Cause == finding.CauseBusyCopy && kept.Call.Errno != "" {
		c.FailedUnmount = failedUnmount(kept, f.ID())
	}
	return nil
}

// failedUnmount is the evidence a busy-copy finding the daemon kept under
// id gives: the unmount that failed because of the copy.
func failedUnmount(kept *finding.Finding, id string) string {
	return fmt.Sprintf("%s by %s[%d] at %s: %s, kept by the daemon as finding %s", kept.Call.Syscall, kept.Call.Comm, kept.Call.PID,
		kept.Call.Time.UTC().Format(time.RFC3339Nano), kept.Call.Errno, id)
}

// keptBusyCopy gives the checker, for a copy the live finding f calls
// busy, the failed unmount of the newest busy-copy finding the daemon kept
// in stateDir this boot about the same object and the same copy (its
// namespace, of the birth id the ledger recorded then, and its mount id
// and mount point), however the target was named. The proof still checks
// that the copy receives propagation from the origin's mount there.
func keptBusyCopy(f *finding.Finding, stateDir string, c *release.Checker) error {
	if f.Cause != finding.CauseBusyCopy || c.FailedUnmount != "" || stateDir == "" {
		return nil
	}
	booted, err := release.BootTime()
	if err != nil {
		return err
	}
	return state.FindingsWith(stateDir, `"cause":"busy-copy"`, func(id string, b []byte) {
		kept, err := readFinding(bytes.NewReader(b))
		if err != nil || kept.Cause != finding.CauseBusyCopy || kept.Call.Errno == "" || kept.Object.Dev != f.Object.Dev || kept.Time.Before(booted) {
			return
		}
		for _, h := range f.Holders {
			if keptHolder(kept, h) && sameGeneration(kept, *c, h.MntNS) == nil {
				c.FailedUnmount = failedUnmount(kept, id)
				return
			}
		}
	})
}

// keptHolder reports whether finding kept names copy h: its namespace
// (and its birth id, when both name one), mount id and mount point.
func keptHolder(kept *finding.Finding, h finding.Holder) bool {
	for _, k := range kept.Holders {
		if k.MntNS == h.MntNS && k.MountID == h.MountID && k.Where == h.Where && h.MountID != 0 && (k.MntNSID == 0 || h.MntNSID == 0 || k.MntNSID == h.MntNSID) {
			return true
		}
	}
	return false
}

// identify binds every step to the kernel's identities and proves its copy
// a leak; a copy not proven is refused (never forced), one that could not
// be read fails the release.
func identify(c release.Checker, p release.Plan) (release.Plan, bool) {
	var out release.Plan
	out.Refused = p.Refused
	failed := false
	for _, s := range p.Steps {
		err := c.Identify(&s)
		switch {
		case err == nil:
			out.Steps = append(out.Steps, s)
		case release.IsNotLeak(err):
			out.Refused = append(out.Refused, release.Refusal{MntNS: s.MntNS, Where: s.Where, Reason: err.Error(),
				Hint: "mntleak release acts only on a copy it proves leaked; --force does not change that"})
		default:
			failed = true
			out.Refused = append(out.Refused, release.Refusal{MntNS: s.MntNS, Where: s.Where, Reason: "cannot read the live state: " + err.Error(),
				Hint: "run it as root on a kernel with statmount (6.8+)"})
		}
	}
	return out, failed
}

// printStep prints a step's plan: what is detached, bound to which
// identities, the proof, and what happens to the processes.
func printStep(w io.Writer, s release.Step) {
	fmt.Fprintf(w, "plan: detach mount %d (unique %d) at %s in mnt:[%d] (born id %d; entering through %s); keeps running: %s\n",
		s.MountID, s.Unique, finding.Escape(s.Where), s.MntNS, s.NSID, s.Enter, names(s.Stays))
	fmt.Fprintf(w, "  leak: %s\n", finding.Escape(s.Proof))
	if len(s.Below) > 0 {
		fmt.Fprintf(w, "  detached with it: %s\n", finding.Escape(strings.Join(s.Below, ", ")))
	}
	for _, p := range s.Pins {
		fmt.Fprintf(w, "  loses its %s into the detached tree (keeps running): %s[%s] %s\n", p.Pin, finding.Escape(p.Comm), strconv.Itoa(p.PID), finding.Escape(p.Path))
	}
}

// sameHolders refuses a finding one of whose holders names the birth id of
// its namespace when the live namespace with that inode was born with
// another: the inode was reused since the finding was made. The daemon's
// ledger is not needed for that. A holder's namespace that is gone is not
// refused here: nothing runs under its inode to act on, and what names it
// later (a release command) finds no namespace.
func sameHolders(f *finding.Finding) error {
	for _, h := range f.Holders {
		if h.MntNSID == 0 {
			continue
		}
		born, file, err := release.BirthID(h.MntNS)
		if err != nil {
			continue
		}
		if err := release.HolderBorn(h, born, file); err != nil {
			return err
		}
	}
	return nil
}

// holderBorn is the birth id finding f names for its holder in namespace
// inode ns (0: none).
func holderBorn(f *finding.Finding, ns uint32) uint64 {
	for _, h := range f.Holders {
		if h.MntNS == ns && h.MntNSID != 0 {
			return h.MntNSID
		}
	}
	return 0
}

// holderAt is the mount point finding f names for mount id in namespace
// inode ns ("": none; f may be nil).
func holderAt(f *finding.Finding, ns uint32, id int) string {
	if f == nil {
		return ""
	}
	for _, h := range f.Holders {
		if h.MntNS == ns && h.MountID == id {
			return h.Where
		}
	}
	return ""
}

// sameGeneration refuses a finding whose namespace's inode was taken by a
// namespace born since: the daemon's ledger (when there is one) recorded
// the birth id of the finding's namespace.
func sameGeneration(f *finding.Finding, c release.Checker, ns uint32) error {
	if c.Ledger == nil {
		return nil
	}
	born, _, err := release.BirthID(ns)
	if err != nil {
		return err
	}
	return c.Ledger.Generation(ns, f.Time, born)
}

// saidReleased says, when a look found the copy named by --mntns/--mount-id
// gone (mount id in the namespace with inode ns, by its birth id now),
// that a release took it, from the records releases keep under
// release.LockDir. It reports whether it found one.
func saidReleased(stdout io.Writer, logAction func(actionRecord), ns uint32, id int) bool {
	born, _, err := release.BirthID(ns)
	if err != nil {
		return false // the namespace is gone too: what CopyTarget says
	}
	took, ok := release.ReleasedMount(release.LockDir, born, id, "")
	if !ok {
		return false
	}
	refusal := release.Refusal{MntNS: took.MntNS, Where: took.Where, Reason: took.String(), Hint: "nothing left to release"}
	fmt.Fprintf(stdout, "refused: %s\n", finding.Escape(refusal.Reason))
	logAction(actionRecord{Result: "refused", Refuse: &refusal})
	return true
}

// sameBirth refuses namespace inode ns when the target names its birth id
// (want, a plan's; 0: none) and the live namespace with that inode was
// born with another: the daemon's ledger is not needed for that.
func sameBirth(ns uint32, want uint64) error {
	if want == 0 {
		return nil
	}
	born, file, err := release.BirthID(ns)
	if err != nil {
		return err
	}
	if born != want {
		return &release.NotLeak{Reason: release.ReusedInode(ns, born, file, want)}
	}
	return nil
}

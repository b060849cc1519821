package release

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/mntleak/mntleak/finding"
)

// CheckFinding refuses a finding given to release --finding that cannot
// be about the machine as it is: one from before this boot, or one that
// differs from the finding the daemon kept under its id (kept: nil when
// the state dir has none). It never makes a finding trusted: the copy it
// names is proven a leak from live state all the same.
func CheckFinding(f, kept *finding.Finding, booted time.Time) error {
	if !f.Time.IsZero() && f.Time.Before(booted) {
		return &NotLeak{fmt.Sprintf("the finding is from a previous boot: it was made at %s, the machine booted at %s; its namespaces and mount ids name other things now",
			f.Time.UTC().Format(time.RFC3339), booted.UTC().Format(time.RFC3339))}
	}
	if kept == nil {
		return nil
	}
	if diff := findingDiff(f, kept); diff != "" {
		return &NotLeak{"the finding differs from the one the daemon kept under id " + f.ID() + ": " + diff}
	}
	return nil
}

// findingDiff names the first of what a verdict rests on that differs
// between a given finding and the kept one, or "".
func findingDiff(f, kept *finding.Finding) string {
	switch {
	case f.Cause != kept.Cause:
		return "cause " + f.Cause.String() + ", kept " + kept.Cause.String()
	case f.Object != kept.Object:
		return fmt.Sprintf("object %s %s, kept %s %s", f.Object.Path, f.Object.Dev, kept.Object.Path, kept.Object.Dev)
	case !f.Time.Equal(kept.Time):
		return "time " + f.Time.String() + ", kept " + kept.Time.String()
	case len(f.Holders) != len(kept.Holders):
		return strconv.Itoa(len(f.Holders)) + " holders, kept " + strconv.Itoa(len(kept.Holders))
	}
	for i, h := range f.Holders {
		k := kept.Holders[i]
		if h.MntNS != k.MntNS || h.MountID != k.MountID || h.Where != k.Where || !h.Created.Equal(k.Created) {
			return fmt.Sprintf("holder mnt:[%d] mount %d at %s, kept mnt:[%d] mount %d at %s", h.MntNS, h.MountID, h.Where, k.MntNS, k.MountID, k.Where)
		}
	}
	if f.Release != kept.Release {
		return "release command " + f.Release + ", kept " + kept.Release
	}
	return ""
}

// BootTime is when the machine booted (btime of /proc/stat).
func BootTime() (time.Time, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return time.Time{}, fmt.Errorf("read /proc/stat: %w", err)
	}
	return bootTimeIn(b)
}

// bootTimeIn is the btime line of /proc/stat's text b.
func bootTimeIn(b []byte) (time.Time, error) {
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "btime "); ok {
			s, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return time.Time{}, fmt.Errorf("/proc/stat: btime %q: %w", v, err)
			}
			return time.Unix(s, 0), nil
		}
	}
	return time.Time{}, fmt.Errorf("/proc/stat: no btime")
}

// HolderBorn refuses a finding's holder h when it names the birth id of
// its namespace and the live namespace with that inode, born with id live
// (read through file), is another: the kernel gave the inode to a new
// namespace since the finding was made. A holder that names none (its
// namespace predates tracing) is not refused here.
func HolderBorn(h finding.Holder, live uint64, file string) error {
	if h.MntNSID == 0 || h.MntNSID == live {
		return nil
	}
	return &NotLeak{Reason: fmt.Sprintf("mnt:[%d] was born with id %d now (read through %s), the finding's holder was born with id %d: the inode was reused",
		h.MntNS, live, file, h.MntNSID)}
}

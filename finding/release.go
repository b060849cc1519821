package finding

import (
	"slices"
	"strconv"
	"strings"
)

// ReleaseRefusal is why `mntleak release` leaves holder h's copy of the
// object alone, whoever runs it and with or without --force ("" when its
// plan takes the copy; the proof that it is a leak is read live when it
// runs): the one check behind release's plan (release.Make) and the
// release command a finding offers (ReleaseCommand).
func (f *Finding) ReleaseRefusal(h *Holder) (reason, hint string) {
	switch {
	case !f.Cause.Releasable():
		return "not a leak (" + f.Cause.String() + ")", f.Fix
	case h.Self:
		return "the caller's own namespace", "unmount it here yourself, if it is not in use"
	case h.Where == "" || h.MountID == 0:
		return "no mount to detach (a detached copy kept busy)", "stop the processes that keep it busy"
	case h.Where == "/":
		return "the namespace's root", "stop the processes of the namespace"
	case h.KeptBy != "" && h.Enter == "":
		return "no process runs in the namespace and its bind cannot be reached", "umount the bind that keeps it: " + h.KeptBy
	case h.KeptBy == "" && len(h.Processes) == 0:
		return "no process of the namespace is known", "mntleak why " + f.Object.Path + " to look again"
	case h.Enter == "" && !h.Exited.IsZero():
		return "the namespace's processes have left", "mntleak why " + f.Object.Path + " to look again"
	}
	if s := f.selfMount(); s != nil && !f.busySlave(h, s) {
		return "not a leak: it is still mounted in the caller's own namespace at " + s.Where,
			"unmount it there first (" + f.Fix + ")"
	}
	return "", ""
}

// ReleaseCommand is the release command the finding offers, for its
// primary holder: "" when release's plan would not take that copy
// (ReleaseRefusal).
func (f *Finding) ReleaseCommand() string {
	if len(f.Holders) == 0 {
		return ""
	}
	h := &f.Holders[0]
	if reason, _ := f.ReleaseRefusal(h); reason != "" {
		return ""
	}
	return "mntleak release --mntns " + strconv.FormatUint(uint64(h.MntNS), 10) + " --mount-id " + strconv.Itoa(h.MountID)
}

// selfMount is the holder that has the object mounted in the caller's own
// namespace, or nil.
func (f *Finding) selfMount() *Holder {
	for i := range f.Holders {
		if h := &f.Holders[i]; h.Self && h.Where != "" {
			return h
		}
	}
	return nil
}

// busySlave reports whether h's copy is what a failed unmount in the
// caller's namespace could not take away: a slave of the caller's mount
// (master:N where it is shared:N) at the same mount point, for a failed
// unmount or a busy-copy finding (one, or why and release asking about a
// copy the daemon saw an unmount fail on). Release takes that copy though
// the caller still has the object (the failed unmount proves it): the
// only one it takes then.
func (f *Finding) busySlave(h, self *Holder) bool {
	unmount := f.Kind == KindFailure && (f.Call.Syscall == "umount2" || f.Call.Syscall == "umount")
	if !unmount && f.Cause != CauseBusyCopy || h.Where != self.Where {
		return false
	}
	tags := strings.Fields(h.Propagation)
	for _, tag := range strings.Fields(self.Propagation) {
		if g, ok := strings.CutPrefix(tag, "shared:"); ok && slices.Contains(tags, "master:"+g) {
			return true
		}
	}
	return false
}

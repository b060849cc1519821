package release

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	"github.com/mntleak/mntleak/event"

	"github.com/mntleak/mntleak/finding"
)

// Step is one copy to detach.
type Step struct {
	MntNS   uint32    `json:"mntns"`
	MountID int       `json:"mount_id"`
	Where   string    `json:"where"`
	Dev     event.Dev `json:"dev,omitempty"` // the object's device, checked before acting
	// Enter is the namespace file the acting thread opens: a member's
	// /proc/PID/ns/mnt, or the nsfs bind that keeps a namespace no process
	// runs in.
	Enter string `json:"enter"`
	// NSID and Unique are the namespace's birth id and the mount's unique
	// id (Checker.Identify): Apply acts on exactly these, never on
	// whatever has the inode and mount id later.
	NSID   uint64 `json:"mntns_id,omitempty"`
	Unique uint64 `json:"unique_id,omitempty"`
	// Proof is why the copy is a leak, and Below the mounts under it that
	// go with it.
	Proof string   `json:"proof,omitempty"`
	Below []string `json:"below,omitempty"`
	// Pins are the processes working in the copy (only with --force).
	Pins []finding.PinRef `json:"pins,omitempty"`
	// Stays is what keeps running: the namespace's processes.
	Stays []finding.ProcRef `json:"stays,omitempty"`
}

// Refusal is a copy left alone, why, and what the user could do.
type Refusal struct {
	MntNS  uint32 `json:"mntns"`
	Where  string `json:"where,omitempty"`
	Reason string `json:"reason"`
	Hint   string `json:"hint"`
}

// Plan is what release would do for a finding.
type Plan struct {
	Steps   []Step    `json:"steps,omitempty"`
	Refused []Refusal `json:"refused,omitempty"`
}

// Make plans the release of a finding's holders. host is the host's mount
// namespace and self the caller's: neither is ever acted in.
func Make(f *finding.Finding, host, self uint32, force bool) Plan {
	var p Plan
	if !f.Cause.Releasable() {
		p.Refused = append(p.Refused, Refusal{Reason: "not a leak (" + f.Cause.String() + ")", Hint: f.Fix})
		return p
	}
	for _, h := range f.Holders {
		refuse := func(reason, hint string) {
			p.Refused = append(p.Refused, Refusal{MntNS: h.MntNS, Where: h.Where, Reason: reason, Hint: hint})
		}
		switch {
		case h.Self || h.MntNS == self:
			refuse("the caller's own namespace", "unmount it here yourself, if it is not in use")
			continue
		case h.MntNS == host:
			refuse("the host's namespace", "mntleak never acts in the host's namespace")
			continue
		}
		if reason, hint := f.ReleaseRefusal(&h); reason != "" {
			refuse(reason, hint)
			continue
		}
		// A process holding the namespace's nsfs file open keeps the
		// namespace, not the copy: it keeps running, untouched.
		inCopy, stays := []finding.PinRef(nil), h.Processes
		for _, pin := range h.Pins {
			if pin.Pin == finding.PinNSFD {
				stays = append(slices.Clone(stays), pin.ProcRef)
			} else {
				inCopy = append(inCopy, pin)
			}
		}
		if len(inCopy) > 0 && !force {
			var who []string
			for _, pin := range inCopy {
				who = append(who, pin.Comm+"["+strconv.Itoa(pin.PID)+"] ("+pin.Pin+" "+pin.Path+")")
			}
			refuse("processes work in the copy: "+strings.Join(who, ", "),
				"stop them or move them off "+h.Where+"; --force detaches it under them (they keep what they have open, and lose the path)")
			continue
		}
		enter := h.Enter
		if enter == "" {
			// A process named for one thread of its own keeps the
			// namespace by that thread: /proc/PID/ns/mnt is its main
			// thread's, another namespace.
			m := h.Processes[0]
			enter = "/proc/" + strconv.Itoa(cmp.Or(m.TID, m.PID)) + "/ns/mnt"
		}
		p.Steps = append(p.Steps, Step{MntNS: h.MntNS, MountID: h.MountID, Where: h.Where, Dev: f.Object.Dev,
			Enter: enter, Pins: inCopy, Stays: stays})
	}
	return p
}

// Only keeps the step (and the refusals) about one copy.
func (p Plan) Only(ns uint32, id int) Plan {
	var out Plan
	for _, s := range p.Steps {
		if s.MntNS == ns && s.MountID == id {
			out.Steps = append(out.Steps, s)
		}
	}
	for _, r := range p.Refused {
		if r.MntNS == ns || r.MntNS == 0 {
			out.Refused = append(out.Refused, r)
		}
	}
	return out
}

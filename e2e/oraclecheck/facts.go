package oraclecheck

import (
	"github.com/mntleak/mntleak/e2e/oracle"
	"github.com/mntleak/mntleak/e2e/testkit/findinglog"
	"github.com/mntleak/mntleak/finding"
)

// Facts is what finding f claims, in the oracle's terms; ok is false for
// a finding about no device (nothing the oracle can look up).
func Facts(f *finding.Finding) (oracle.FindingFacts, bool) {
	if f.Object.Dev == 0 {
		return oracle.FindingFacts{}, false
	}
	ff := oracle.FindingFacts{
		Line:     f.Line(),
		At:       f.Call.Time,
		Kind:     string(f.Kind),
		Target:   oracle.Target{Major: f.Object.Dev.Major(), Minor: f.Object.Dev.Minor()},
		CallerNS: uint64(f.Call.MntNS),
	}
	// An nsfs object is one namespace's file; a stale bind is the bind of
	// one deleted file: both are the mounts of that root, not the device.
	if f.Object.FSType == "nsfs" || f.Cause == finding.CauseStaleBind {
		ff.Target.Root = f.Object.Root
	}
	if f.Object.Path != "" {
		ff.Paths = append(ff.Paths, f.Object.Path)
	}
	for _, h := range f.Holders {
		if h.Where != "" {
			ff.Paths = append(ff.Paths, h.Where)
		}
		ff.Paths = append(ff.Paths, h.Also...)
		hf := oracle.HolderFacts{NS: uint64(h.MntNS), Self: h.Self, Exited: !h.Exited.IsZero(), Detached: h.Detached}
		for _, p := range h.Processes {
			hf.Members = append(hf.Members, p.PID)
			if p.TID != 0 {
				if hf.Threads == nil {
					hf.Threads = map[int]int{}
				}
				hf.Threads[p.PID] = p.TID
			}
		}
		for _, p := range h.Pins {
			hf.Pins = append(hf.Pins, oracle.PinFacts{PID: p.PID, TID: p.TID, Pin: p.Pin})
		}
		if a := h.Actor; a != nil {
			hf.Actor = &oracle.ActorFacts{PID: a.PID, Role: a.Role, Pin: a.Pin, TID: a.TID}
		}
		ff.Holders = append(ff.Holders, hf)
	}
	return ff, true
}

// LineFacts is Facts of a finding read back from the daemon's log.
func LineFacts(l findinglog.Line) (oracle.FindingFacts, bool) {
	if l.Detail == nil {
		return oracle.FindingFacts{}, false
	}
	ff, ok := Facts(l.Detail)
	ff.Line = l.Msg
	return ff, ok
}

package event

// Filter selects events by process and namespace; an empty list matches
// everything. Lists are ORed within a field and ANDed across fields.
type Filter struct {
	PIDs  []uint32 // thread-group ids; a new-namespace fork also matches its child
	Comms []string // exact comm (15 bytes, as the kernel truncates it)
	MntNS []uint32 // matches the caller's namespace and any namespace the event names
}

// Empty reports whether the filter matches everything.
func (f *Filter) Empty() bool {
	return len(f.PIDs) == 0 && len(f.Comms) == 0 && len(f.MntNS) == 0
}

// Match reports whether e passes the filter. A lost event always does: the
// lost events may be any process's, so a filtered view is incomplete too.
func (f *Filter) Match(e *Event) bool {
	if e.Kind == KindLost {
		return true
	}
	if len(f.PIDs) > 0 && !containsAny(f.PIDs, e.PID, e.ChildPID) {
		return false
	}
	if len(f.Comms) > 0 {
		found := false
		for _, c := range f.Comms {
			if truncComm(c) == e.Comm {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	if len(f.MntNS) > 0 && !containsAny(f.MntNS, e.MntNS, e.MntNSBefore, e.MntNSAfter, e.ParentMntNS, e.ChildMntNS) {
		return false
	}
	return true
}

func containsAny(set []uint32, vals ...uint32) bool {
	for _, v := range vals {
		if v == 0 {
			continue
		}
		for _, s := range set {
			if s == v {
				return true
			}
		}
	}
	return false
}

// truncComm cuts a name to what the kernel keeps in task->comm.
func truncComm(s string) string {
	if len(s) > commLen-1 {
		return s[:commLen-1]
	}
	return s
}

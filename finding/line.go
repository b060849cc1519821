package finding

import (
	"strconv"
	"strings"
	"time"
)

// Line renders the finding as the one human line an on-call engineer reads:
//
//	EBUSY openat /dev/loop3 by mkfs.ext4[4121]: still mounted in
//	mnt:[4026532290] at /host/srv/vol, held by sleep[3990] (container
//	5f2c…); leaked by ... Fix: ...
//
// Line is the finding as one human-readable line (the log message, the
// journal's MESSAGE, replay's text): untrusted strings in it are escaped
// (Escape), so it is always exactly one line.
func (f *Finding) Line() string {
	var b strings.Builder
	if p := f.podPrefix(); p != "" {
		b.WriteString(p + ": ") // pod terms first (workload.go)
	}
	if f.Kind == KindHeld {
		b.WriteString("HELD ")
		b.WriteString(f.Object.describe())
	} else if f.Kind == KindLeak {
		b.WriteString("LEAK ")
		b.WriteString(f.Object.describe())
		if len(f.Others) > 0 {
			others := make([]string, 0, len(f.Others))
			for i := range f.Others {
				if i == 3 {
					others = append(others, "+"+strconv.Itoa(len(f.Others)-3)+" more")
					break
				}
				others = append(others, f.Others[i].describe())
			}
			b.WriteString(" and " + strconv.Itoa(len(f.Others)) + " more of the same teardown (" + strings.Join(others, ", ") + ")")
		}
		b.WriteString(" unmounted by ")
		b.WriteString(ProcName(f.Call.Comm, int(f.Call.PID)))
		b.WriteString(" in ")
		b.WriteString(NSName(f.Call.MntNS))
	} else {
		b.WriteString(f.Call.Errno)
		b.WriteByte(' ')
		b.WriteString(f.Call.Syscall)
		b.WriteByte(' ')
		b.WriteString(f.Object.describe())
		b.WriteString(" by ")
		b.WriteString(ProcName(f.Call.Comm, int(f.Call.PID)))
		if t := f.Call.Workload.Text(); t != "" {
			b.WriteString(" (" + t + ")")
		}
		if f.Object.Operation != "" {
			b.WriteString(" (" + f.Object.Operation + " through " + f.Object.Via + ")")
		}
	}
	b.WriteString(": ")
	b.WriteString(f.holderText())
	if f.Summary != "" {
		b.WriteString("; ")
		b.WriteString(f.Summary)
	}
	if f.Leak != nil {
		b.WriteString("; leak seen at ")
		b.WriteString(Clock(f.Leak.Time))
	}
	if f.Inferred {
		// From /proc alone: no event was seen happen. For why, that is
		// simply no recorded history, not proof the namespace is older.
		if f.Kind == KindHeld {
			b.WriteString(" (inferred: no recorded history)")
		} else {
			b.WriteString(" (inferred: predates tracing)")
		}
	}
	if len(f.Missing) > 0 {
		b.WriteString(" (missing: ")
		b.WriteString(strings.Join(f.Missing, "; "))
		b.WriteByte(')')
	}
	if f.Incomplete != nil {
		b.WriteString(" (" + f.Incomplete.Text() + ")")
	}
	// The cause's slug on every line, so a line can be grepped or
	// matched to the docs without the JSON.
	b.WriteString(" [cause: " + f.Cause.String() + "]")
	b.WriteString(". Fix: ")
	b.WriteString(f.Fix)
	return Escape(b.String())
}

func (o *Object) describe() string {
	switch {
	case o.Path != "" && o.FSType == "nsfs" && o.Root != "":
		return o.Path + " (" + o.Root + ")" // a namespace file: net:[4026532290]
	case o.Path != "" && o.Dev != 0:
		return o.Path + " (" + o.Dev.String() + ")"
	case o.Path != "":
		return o.Path
	case o.Dev != 0:
		return "device " + o.Dev.String()
	}
	return "(unknown object)"
}

func (f *Finding) holderText() string {
	if len(f.Holders) == 0 {
		return "no holder found"
	}
	parts := make([]string, 0, len(f.Holders))
	for i := range f.Holders {
		parts = append(parts, f.Holders[i].text())
	}
	return strings.Join(parts, "; ")
}

// place says how a holder has the object: "kept busy in mnt:[N]" (pins
// only), "mounted in the caller's own namespace mnt:[N]", or, elsewhere,
// mounted (after "still " in a finding line).
func (h *Holder) place(elsewhere string) string {
	switch {
	case h.Where == "" && len(h.Pins) > 0 && h.Detached:
		return "kept busy in " + NSName(h.MntNS) + ", whose copy the kernel detached"
	case h.Where == "" && len(h.Pins) > 0:
		return "kept busy in " + NSName(h.MntNS)
	case h.Self:
		return "mounted in the caller's own namespace " + NSName(h.MntNS)
	}
	return elsewhere + NSName(h.MntNS)
}

func (h *Holder) text() string {
	var b strings.Builder
	b.WriteString(h.place("still mounted in "))
	if h.Where != "" {
		b.WriteString(" at " + h.Where)
		for _, w := range h.Also {
			b.WriteString(" and " + w)
		}
	}
	if h.Propagation != "" {
		b.WriteString(" (" + h.Propagation + ")")
	}
	if h.Detached && h.Where != "" {
		b.WriteString(", detached by the kernel since")
	}
	if h.KeptBy != "" {
		b.WriteString(", kept by " + h.KeptBy)
	}
	switch {
	case !h.Exited.IsZero():
		// Gone: its pids may be other programs' now, never an actor.
		b.WriteString(", whose last process left at " + Clock(h.Exited))
		if len(h.Processes) > 0 {
			b.WriteString(" (it ran " + ProcList(h.Processes, 3) + ")")
		}
	case len(h.Pins) > 0:
		// The pinner first: the process that keeps the copy busy.
		pins := make([]string, 0, len(h.Pins))
		for i, p := range h.Pins {
			if i == 3 {
				pins = append(pins, "+"+strconv.Itoa(len(h.Pins)-3)+" more")
				break
			}
			pins = append(pins, ProcName(p.Comm, p.PID)+threadTag(p.ProcRef)+workloadTag(p.ProcRef)+" "+p.How())
		}
		b.WriteString(", held by " + strings.Join(pins, ", "))
		if len(h.Processes) > 0 {
			b.WriteString(" in a namespace kept by " + ProcList(h.Processes, 3))
		}
	case len(h.Processes) > 0:
		b.WriteString(", held by ")
		b.WriteString(ProcList(h.Processes, 3))
		if h.Mounter != 0 && h.Processes[0].PID == h.Mounter {
			b.WriteString(" (namespace members, the first made the mount; nothing pins the copy)")
		} else {
			b.WriteString(" (namespace members; nothing pins the copy)")
		}
	}
	return b.String()
}

// ProcList names up to max processes, with their container or unit
// ("sleep[3990] (container 5f2c…), +2 more").
func ProcList(procs []ProcRef, max int) string {
	parts := make([]string, 0, len(procs))
	for i, p := range procs {
		if i == max {
			parts = append(parts, "+"+strconv.Itoa(len(procs)-max)+" more")
			break
		}
		parts = append(parts, ProcName(p.Comm, p.PID)+threadTag(p)+procTag(p))
	}
	return strings.Join(parts, ", ")
}

// threadTag names the thread a process is named for (" thread 125": a
// thread of its own in another namespace than its process), "" for the
// process itself.
func threadTag(p ProcRef) string {
	if p.TID == 0 || p.TID == p.PID {
		return ""
	}
	return " thread " + strconv.Itoa(p.TID)
}

// Name is the process as a finding names it: comm[pid], and the thread
// it is named for ("comm[pid] thread tid").
func (p ProcRef) Name() string { return ProcName(p.Comm, p.PID) + threadTag(p) }

// ProcName is a process as a finding names it: comm[pid].
func ProcName(comm string, pid int) string {
	return comm + "[" + strconv.Itoa(pid) + "]"
}

// NSName is a mount namespace as a finding names it: mnt:[ino].
func NSName(ino uint32) string {
	return "mnt:[" + strconv.FormatUint(uint64(ino), 10) + "]"
}

// Clock is a time as a finding prints it (UTC, to the millisecond; "?"
// when unknown).
func Clock(t time.Time) string {
	if t.IsZero() {
		return "?"
	}
	return t.UTC().Format("15:04:05.000")
}

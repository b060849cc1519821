package finding

import (
	"strconv"
	"strings"
)

// Report renders a finding for `mntleak why` on a terminal: a headline
// with counts, then one line per holding namespace and one per process
// that holds or pins the object there (its pins by kind: cwd, root, fds,
// maps), then the cause and the fix. Line is the one-line
// form the log and the journal carry; Report lists everything Line
// abbreviates ("+155 more").
func (f *Finding) Report() string {
	var b reportBuilder
	procs := 0
	for i := range f.Holders {
		procs += len(f.Holders[i].Processes) + len(pinners(f.Holders[i].Pins))
	}
	b.WriteString("HELD " + f.Object.describe() + ": ")
	b.WriteString(plural(len(f.Holders), "namespace") + ", " + plural(procs, "process"))
	if f.Inferred {
		b.WriteString(" (inferred: no recorded history)")
	}
	b.endLine()
	for i := range f.Holders {
		h := &f.Holders[i]
		b.WriteString("  " + h.place("mounted in "))
		if h.Where != "" {
			b.WriteString(" at " + h.Where)
		}
		if h.Propagation != "" {
			b.WriteString(" (" + h.Propagation + ")")
		}
		if h.Detached && h.Where != "" {
			b.WriteString(", detached by the kernel")
		}
		b.endLine()
		// The pinners first (the actor leads), then the namespace's members.
		for _, pp := range pinners(h.Pins) {
			b.WriteString("    " + pp[0].Name() + ": " + pinSummary(pp))
			b.endLine()
		}
		for _, p := range h.Processes {
			if len(h.Pins) > 0 {
				b.WriteString("    in the namespace: " + ProcList([]ProcRef{p}, 1))
			} else {
				b.WriteString("    held by " + ProcList([]ProcRef{p}, 1) + " (namespace member)")
			}
			b.endLine()
		}
	}
	b.WriteString("cause: " + f.Cause.String())
	b.endLine()
	if f.Leak != nil {
		b.WriteString("leak seen at " + Clock(f.Leak.Time))
		b.endLine()
	}
	b.WriteString("fix: " + f.Fix)
	b.endLine()
	if f.Release != "" {
		b.WriteString("release now: " + f.Release + " (a plan; add --apply to act)")
		b.endLine()
	}
	return b.String()
}

// pinners groups pins by process (and thread: a thread in a namespace of
// its own has its own cwd and root), in the order they come.
func pinners(pins []PinRef) [][]PinRef {
	var out [][]PinRef
	at := map[[2]int]int{}
	for _, p := range pins {
		i, ok := at[[2]int{p.PID, p.TID}]
		if !ok {
			i = len(out)
			at[[2]int{p.PID, p.TID}] = i
			out = append(out, nil)
		}
		out[i] = append(out[i], p)
	}
	return out
}

// pinSummary says how one process pins the object: each kind once, with
// its first path and how many more of that kind ("cwd /srv, 3 fds
// /srv/a.log ...").
func pinSummary(pins []PinRef) string {
	var kinds []string
	byKind := map[string][]PinRef{}
	for _, p := range pins {
		if _, ok := byKind[p.Pin]; !ok {
			kinds = append(kinds, p.Pin)
		}
		byKind[p.Pin] = append(byKind[p.Pin], p)
	}
	parts := make([]string, 0, len(kinds))
	for _, k := range kinds {
		ps := byKind[k]
		s := k
		if len(ps) > 1 {
			s = strconv.Itoa(len(ps)) + " " + k + "s"
		} else if ps[0].FD != nil {
			s += " " + strconv.Itoa(*ps[0].FD)
		}
		if ps[0].Path != "" {
			s += " " + ps[0].Path
			if len(ps) > 1 {
				s += " …"
			}
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

// reportBuilder collects a report's lines: endLine ends one, and the line
// is escaped (Escape) then, so an untrusted newline inside a path can
// never end a line.
type reportBuilder struct {
	out, cur strings.Builder
}

func (r *reportBuilder) WriteString(s string) { r.cur.WriteString(s) }

func (r *reportBuilder) endLine() {
	r.out.WriteString(Escape(r.cur.String()))
	r.out.WriteByte('\n')
	r.cur.Reset()
}

func (r *reportBuilder) String() string { return r.out.String() + Escape(r.cur.String()) }

// plural is "1 pin", "3 pins".
func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	if strings.HasSuffix(what, "process") {
		return strconv.Itoa(n) + " " + what + "es"
	}
	return strconv.Itoa(n) + " " + what + "s"
}

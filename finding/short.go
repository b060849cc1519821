package finding

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// HeadlineLimit is the most characters (runes) a headline has: one line of
// a terminal, a journal listing or `kubectl get events` that a person reads
// whole.
const HeadlineLimit = 160

// The shares of a headline: the stuck pod gets at most podShare
// characters, the object at least objectShare, the holder what they
// leave, and the object then what the holder leaves.
const (
	podShare    = 44 // "pod uid " and a UID
	objectShare = 20
)

// Headline is the finding in at most HeadlineLimit characters, in the
// order a person asks: what is stuck, who holds it, the cause.
//
//	pod default/web stuck: EBUSY umount2 volume cache (emptyDir): held by sleep[3990] (pod monitoring/x (container y)) in mnt:[4026532290] [cause: busy-copy]
//	LEAK …/rbd/mounts/k8s-image-pvc-c838258f (253:1): held by sleep[15992] (container 6ce70c1f4d8d) in mnt:[4026532187] [cause: rprivate-bind]
//
// Long names are shortened (a path keeps its last components, "…/"
// before them); Block's detail lines say everything. It is the journal's
// MESSAGE, the lead of a Kubernetes Event's note and the first line a
// terminal shows; Line stays the one long line of the log. Untrusted
// strings are escaped (Escape) before they are measured.
func (f *Finding) Headline() string {
	cause := " [cause: " + f.Cause.String() + "]"
	lead := f.leadShort()
	obj := Escape(f.objectShort())
	fixed := runes(cause) + runes(lead) + len(": ")
	who := f.holderShort(HeadlineLimit - fixed - min(runes(obj), objectShare))
	return lead + fitPath(obj, HeadlineLimit-fixed-runes(who)) + ": " + who + cause
}

// leadShort is what the headline says before the object, escaped: the
// stuck pod (at most podShare characters) and, for a failure, the errno
// and call ("pod default/web stuck: EBUSY umount2 ", "LEAK ").
func (f *Finding) leadShort() string {
	var b strings.Builder
	if s := f.Stuck; s != nil {
		b.WriteString(fit(Escape(s.PodText()), podShare))
		if f.Kind == KindLeak {
			b.WriteString(": ")
		} else {
			b.WriteString(" stuck: ")
		}
	}
	switch f.Kind {
	case KindLeak:
		b.WriteString("LEAK ")
	case KindHeld:
		b.WriteString("HELD ")
	default:
		b.WriteString(Escape(f.Call.Errno) + " ")
		if f.Object.Operation == "" {
			b.WriteString(Escape(f.Call.Syscall) + " ")
		}
	}
	return b.String()
}

// objectShort is the object as the headline names it: the pod's volume
// when known, the teardown operation, else the path (and device).
func (f *Finding) objectShort() string {
	var s string
	switch {
	case f.Stuck != nil && f.Stuck.VolumeText != "":
		s = f.Stuck.VolumeText
	case f.Object.Operation != "":
		s = f.Object.Operation
	default:
		s = f.Object.describe()
	}
	if len(f.Others) > 0 {
		s += " +" + strconv.Itoa(len(f.Others)) + " more"
	}
	return s
}

// holderShort is who holds the object, in the headline's words and at
// most n characters, escaped: the process the finding names to act on
// (Actor) and its namespace, what keeps a namespace no process runs in, or
// that its processes have left. The namespace is always said whole.
func (f *Finding) holderShort(n int) string {
	h, a := f.Actor()
	switch {
	case h == nil:
		return "no holder found"
	case a != nil:
		head, tail := "held by ", " in "+NSName(h.MntNS)
		// A comm has at most 15 bytes; escaped, at most 60: cut at 20.
		name := fit(Escape(a.Comm), 20) + "[" + strconv.Itoa(a.PID) + "]" + threadTag(a.ProcRef)
		room := n - runes(head) - runes(name) - runes(tail)
		return head + name + fit(Escape(procTag(a.ProcRef)), room) + tail
	case h.KeptBy != "":
		head := "kept in " + NSName(h.MntNS) + " by "
		return head + fit(shortenPaths(Escape(h.KeptBy), 32), n-runes(head))
	case !h.Exited.IsZero():
		return "held in " + NSName(h.MntNS) + ", whose processes have left"
	}
	return "held in " + NSName(h.MntNS)
}

// Details are the lines under a headline, each "label: text": the call,
// each holder (where, by whom), the cause with the event that leaked the
// mount, the notes on the evidence, the fix and the release command.
// Each is escaped; none is shortened.
func (f *Finding) Details() []string {
	var out []string
	add := func(label, text string) { out = append(out, Escape(label+": "+text)) }
	call := f.Call.Errno + " " + f.Call.Syscall
	if f.Kind == KindLeak {
		call = "unmounted"
	}
	if f.Kind != KindHeld {
		c := call + " " + f.Object.describe() + " by " + ProcName(f.Call.Comm, int(f.Call.PID))
		if t := f.Call.Workload.Text(); t != "" {
			c += " (" + t + ")"
		}
		if f.Object.Operation != "" {
			c += " (" + f.Object.Operation + " through " + f.Object.Via + ")"
		}
		add("call", c+" in "+NSName(f.Call.MntNS)+" at "+Clock(f.Call.Time))
	}
	for i := range f.Others {
		add("also", f.Others[i].describe())
	}
	for i := range f.Holders {
		add("holder", f.Holders[i].text())
	}
	if len(f.Holders) == 0 {
		add("holder", "no holder found")
	}
	add("cause", f.Cause.String()+": "+f.Summary)
	if f.Leak != nil {
		add("leak", "seen at "+Clock(f.Leak.Time))
	}
	for _, n := range f.notes() {
		add("note", n)
	}
	add("fix", f.Fix)
	if f.Release != "" {
		add("release", f.Release+" (a plan; add --apply to act)")
	}
	return out
}

// notes are what the evidence lacks: inferred, missing, events lost.
func (f *Finding) notes() []string {
	var out []string
	if f.Inferred && f.Kind == KindHeld {
		out = append(out, "inferred: no recorded history")
	} else if f.Inferred {
		out = append(out, "inferred: predates tracing")
	}
	if len(f.Missing) > 0 {
		out = append(out, "missing: "+strings.Join(f.Missing, "; "))
	}
	if f.Incomplete != nil {
		out = append(out, f.Incomplete.Text())
	}
	return out
}

// Block is the finding as a terminal shows it: its headline, then its
// details indented, each on a line of its own.
func (f *Finding) Block() string {
	var b strings.Builder
	b.WriteString(f.Headline())
	b.WriteByte('\n')
	for _, d := range f.Details() {
		b.WriteString("    " + d + "\n")
	}
	return b.String()
}

// shortenPaths shortens each path in s longer than n runes (fitPath).
func shortenPaths(s string, n int) string {
	words := strings.Split(s, " ")
	for i, w := range words {
		if strings.HasPrefix(w, "/") && runes(w) > n {
			words[i] = fitPath(w, n)
		}
	}
	return strings.Join(words, " ")
}

func runes(s string) int { return utf8.RuneCountInString(s) }

// fit cuts s to at most n runes, at a word boundary, ending it with "…"
// when cut: what is kept ends with a space or a slash ("(pod
// storage/csi-node …", "pod default/…"), never in a word or a rune; with
// no boundary before the limit, only "…" is left.
func fit(s string, n int) string {
	if runes(s) <= n {
		return s
	}
	if n < 1 {
		return ""
	}
	r := []rune(s)[:n-1]
	i := len(r)
	for i > 0 && r[i-1] != ' ' && r[i-1] != '/' {
		i--
	}
	return string(r[:i]) + "…"
}

// fitPath shortens a path to at most n runes, keeping its end: "…/" and
// as many of its last components as fit. When not even the last one fits,
// or s is no path, it is cut as fit cuts.
func fitPath(s string, n int) string {
	if runes(s) <= n {
		return s
	}
	if n < 2 || !strings.HasPrefix(s, "/") {
		return fit(s, n)
	}
	r := []rune(s)
	tail := string(r[len(r)-(n-1):])
	i := strings.IndexByte(tail, '/')
	if i < 0 {
		return fit(s, n)
	}
	return "…" + tail[i:]
}

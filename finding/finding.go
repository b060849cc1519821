package finding

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mntleak/mntleak/event"
)

// FindingKind says whether a finding explains a failure, reports a leak
// as it forms, or answers `mntleak why`.
type FindingKind string

// Finding kinds.
const (
	KindFailure FindingKind = "failure" // a syscall failed because of a holder
	KindLeak    FindingKind = "leak"    // an unmount left a copy behind elsewhere
	// KindHeld is a finding made on demand (`mntleak why`): what holds an
	// object now, on a node where nothing failed in front of mntleak.
	KindHeld FindingKind = "held"
)

// Finding is one verdict: the call, who holds its object, why, and the fix.
type Finding struct {
	Kind FindingKind `json:"finding"`
	Time time.Time   `json:"time"`
	// Call is the failing call, or for a leak the unmount that left the copy.
	Call    Call     `json:"call"`
	Object  Object   `json:"object"`
	Holders []Holder `json:"holders,omitempty"`
	Cause   Cause    `json:"cause"`
	// Summary is the cause in one sentence, naming the leaking event.
	Summary  string     `json:"summary"`
	Evidence []Evidence `json:"evidence,omitempty"`
	Fix      string     `json:"fix"`
	// Inferred is set when the verdict leans on a namespace or mount that
	// predates tracing: reconstructed from /proc, not seen happen.
	Inferred bool `json:"inferred,omitempty"`
	// Missing says what the classifier lacked (cause unknown, or partial).
	Missing []string `json:"missing,omitempty"`
	// Leak is the earlier leak finding on the same object, if any.
	Leak *LeakRef `json:"leak,omitempty"`
	// Retries counts the same failure repeated within the retry window
	// before this finding was emitted (always 0 for the first).
	Retries int `json:"retries,omitempty"`
	// Incomplete is set when events were lost while the evidence formed.
	Incomplete *Incomplete `json:"incomplete,omitempty"`
	// Release is the command that detaches the leaked copy now
	// (mntleak release), when there is one to detach.
	Release string `json:"release,omitempty"`
	// Others are the other objects one teardown left in the same holder
	// namespaces (a leak): one finding per holder and teardown.
	Others []Object `json:"others,omitempty"`
	// Stuck is the pod whose directory the object (or its leaked copy)
	// lies in, Node the node's name, and Enrichment, when not empty, why
	// the workloads (Workload) are not all named: set off the event path
	// by package enrich (workload.go).
	Stuck      *StuckPod `json:"stuck,omitempty"`
	Node       string    `json:"node,omitempty"`
	Enrichment string    `json:"enrichment,omitempty"`
}

// ID names the finding in logs, the journal (MNTLEAK_FINDING_ID) and
// mntleak release --finding ID: 12 hex digits from what makes it this
// finding (its kind, the call and its object), the same in every replay.
func (f *Finding) ID() string {
	h := sha256.New()
	for _, s := range []string{string(f.Kind), strconv.FormatInt(f.Call.Time.UnixNano(), 10), strconv.FormatUint(uint64(f.Call.PID), 10),
		strconv.FormatUint(uint64(f.Call.TID), 10), f.Call.Syscall, f.Object.Path, f.Object.Dev.String()} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:12]
}

// Call is the syscall a finding is about.
type Call struct {
	Time      time.Time `json:"time"`
	PID       uint32    `json:"pid"`
	TID       uint32    `json:"tid"`
	Comm      string    `json:"comm"`
	Syscall   string    `json:"syscall"`
	Errno     string    `json:"errno,omitempty"`
	MntNS     uint32    `json:"mntns"`
	Container string    `json:"container,omitempty"`
	Unit      string    `json:"unit,omitempty"`
	Pod       string    `json:"pod,omitempty"`
	Exe       string    `json:"exe,omitempty"`
	Cmdline   string    `json:"cmdline,omitempty"`
	Workload  *Workload `json:"workload,omitempty"`
}

// Object is what the call was about.
type Object struct {
	Path   string    `json:"path,omitempty"`
	Dev    event.Dev `json:"dev,omitempty"`    // block device or filesystem device
	FSType string    `json:"fstype,omitempty"` // as the ledger knew it
	Root   string    `json:"root,omitempty"`   // mount root: a bind's source, nsfs's "net:[N]"
	Source string    `json:"source,omitempty"` // the missing bind source (stale-bind)
	// Operation is a teardown call in the user's words ("rbd unmap
	// /dev/rbd3"), Via the control file it went through.
	Operation string `json:"operation,omitempty"`
	Via       string `json:"via,omitempty"`
}

// Holder is one namespace that still has the object mounted (or, with
// Pins only, keeps it busy without any mountinfo entry).
type Holder struct {
	MntNS uint32 `json:"mntns"`
	// MntNSID is the id the kernel gave the namespace at birth
	// (NS_GET_MNTNS_ID; 0: unknown, e.g. one that predates tracing): the
	// inode is reused, the id never is, so release can tell the namespace
	// under the inode now is still this one.
	MntNSID     uint64    `json:"mntns_id,omitempty"`
	Self        bool      `json:"self,omitempty"` // the caller's own namespace
	Where       string    `json:"where,omitempty"`
	Also        []string  `json:"also,omitempty"` // other places the object shows there
	MountID     int       `json:"mount_id,omitempty"`
	Propagation string    `json:"propagation,omitempty"`
	Processes   []ProcRef `json:"processes,omitempty"`
	Pins        []PinRef  `json:"pins,omitempty"`
	// Exited is when the namespace's last member left, for a holder that
	// was gone a moment before the failure.
	Exited time.Time `json:"exited,omitzero"`
	// Detached is set when the copy was there before the unmount and the
	// kernel has detached it since (unlink or rmdir of the mountpoint).
	Detached bool `json:"detached,omitempty"`
	// Created is when the namespace was created (zero: predates tracing).
	Created time.Time `json:"created,omitzero"`
	// KeptBy is what keeps a namespace no process runs in: "the bind of
	// its nsfs file at /run/mntns/x in the host".
	KeptBy string `json:"kept_by,omitempty"`
	// Enter is a file that enters the namespace when no process runs in
	// it: the nsfs bind that keeps it, as mntleak reaches it.
	Enter string `json:"enter,omitempty"`
	// Actor is the one process the verdict names for this holder (the
	// holder_pid of the log fields, the first process after "held by" in
	// the line): nil when no live process holds it.
	Actor *Actor `json:"actor,omitempty"`
	// Mounter is the pid among Processes that made the mount (0: none):
	// it words the holder's line, and is not a field of the record.
	Mounter int `json:"-"`
}

// Actor roles: how the named process holds the copy.
const (
	// RolePinner: its cwd, root, an open file or a mapping lies in the copy.
	RolePinner = "pinner"
	// RoleMember: nothing pins the copy; the process keeps its namespace,
	// and with it the copy, alive.
	RoleMember = "member"
	// RoleMounter: it made the mount in its namespace, from where it
	// propagated to the caller's (shared-propagation): it is the one to
	// unmount it.
	RoleMounter = "mounter"
)

// Actor is the process a holder is named by, and how it holds.
type Actor struct {
	ProcRef
	Role string `json:"role"`
	Pin  string `json:"pin,omitempty"`  // for a pinner: cwd, root, fd, map, ...
	Path string `json:"path,omitempty"` // for a pinner: where
}

// Actor is the process the finding names to act on, and its holder: the
// first holder (the primary one leads) with a live actor, passing over a
// holder whose copy only receives the primary holder's mount (a slave of
// its peer group that nothing pins: mntleak's own HostToContainer copy of
// the kubelet's directory, for one). With none, the primary holder and a
// nil actor.
func (f *Finding) Actor() (*Holder, *Actor) {
	for i := range f.Holders {
		if a := f.Holders[i].Actor; a != nil && (i == 0 || !f.Holders[i].receives(&f.Holders[0])) {
			return &f.Holders[i], a
		}
	}
	if len(f.Holders) > 0 {
		return &f.Holders[0], nil
	}
	return nil, nil
}

// receives reports whether h's copy only receives what happens to
// primary's mount: it is a slave of primary's peer group (master:N where
// primary is shared:N) and no peer of it, and nothing pins it. The
// primary's unmount takes it away; nothing mounted there reaches the
// primary, so its processes neither made nor keep the object.
func (h *Holder) receives(primary *Holder) bool {
	if len(h.Pins) > 0 {
		return false
	}
	tags := strings.Fields(h.Propagation)
	for _, tag := range strings.Fields(primary.Propagation) {
		if g, ok := strings.CutPrefix(tag, "shared:"); ok && slices.Contains(tags, "master:"+g) && !slices.Contains(tags, tag) {
			return true
		}
	}
	return false
}

// ChooseActor picks the process a holder is named by: the first process pinning
// the copy; when nothing pins it, the oldest live member of the namespace;
// none for a namespace whose processes have all left.
func (h *Holder) ChooseActor() *Actor {
	switch {
	case len(h.Pins) > 0:
		p := h.Pins[0]
		return &Actor{ProcRef: p.ProcRef, Role: RolePinner, Pin: p.Pin, Path: p.Path}
	case len(h.Processes) > 0 && h.Exited.IsZero() && h.Processes[0].PID == h.Mounter:
		return &Actor{ProcRef: h.Processes[0], Role: RoleMounter}
	case len(h.Processes) > 0 && h.Exited.IsZero():
		return &Actor{ProcRef: h.Processes[0], Role: RoleMember}
	}
	return nil
}

// ProcRef names a process.
type ProcRef struct {
	PID int `json:"pid"`
	// TID is the thread, when the process is named for one thread of its
	// own (not its main one) that is in another mount namespace than the
	// process (/proc/PID/task/TID/ns/mnt): it alone keeps that namespace,
	// and only it enters it (nsenter -t TID -m).
	TID       int    `json:"tid,omitempty"`
	StartTime uint64 `json:"-"` // clock ticks after boot, when known: tells a reused pid apart
	Comm      string `json:"comm"`
	Container string `json:"container,omitempty"`
	Unit      string `json:"unit,omitempty"`
	Pod       string `json:"pod,omitempty"`
	Exe       string `json:"exe,omitempty"`
	Cmdline   string `json:"cmdline,omitempty"`
	// Workload names the container (and pod) in the runtime's terms.
	Workload *Workload `json:"workload,omitempty"`
}

// PinNSFD is the pin of a process that holds open the nsfs file of a
// namespace no process runs in: it keeps the namespace, and its copy.
const PinNSFD = "nsfd"

// PinRef is a process keeping the object busy through a cwd, root, fd or
// mapping (or, with PinNSFD, a namespace alive).
type PinRef struct {
	ProcRef
	MntNS uint32 `json:"mntns"`
	Pin   string `json:"pin"`
	Path  string `json:"path,omitempty"`
	// FD is the descriptor's number, for an open file (fd, blockdev-fd).
	FD *int `json:"fd,omitempty"`
}

// How says how the process pins the object: its kind, the descriptor's
// number for an open file, and the path ("cwd /srv", "fd 7 net:[4026532290]").
func (p PinRef) How() string {
	s := p.Pin
	if p.FD != nil {
		s += " " + strconv.Itoa(*p.FD)
	}
	return s + " " + p.Path
}

// Evidence is one fact the verdict used: an event, or a mountinfo fact.
type Evidence struct {
	Time time.Time `json:"time,omitzero"`
	What string    `json:"what"`
	// Event is the recorded event, when the evidence is one.
	Event *EventRef `json:"event,omitempty"`
}

// EventRef identifies an event in the stream.
type EventRef struct {
	Kind    string `json:"kind"`
	MonoNS  uint64 `json:"mono_ns"`
	PID     uint32 `json:"pid"`
	Comm    string `json:"comm"`
	MntNS   uint32 `json:"mntns"`
	Summary string `json:"summary"`
	// CommAtEvent is the comm the event carried when it differs from the
	// name the process is known by (it exec'd after the event).
	CommAtEvent string `json:"comm_at_event,omitempty"`
	// Container, Unit and Pod (UID) are where the process ran when the
	// event happened, from the cgroup path the event carried (empty for a
	// recording made before events carried one); Workload names them in
	// the runtime's and Kubernetes' terms (set by package enrich).
	Container string    `json:"container,omitempty"`
	Unit      string    `json:"unit,omitempty"`
	Pod       string    `json:"pod,omitempty"`
	Workload  *Workload `json:"workload,omitempty"`
}

// LeakRef points from a failure back to the leak finding on its object.
type LeakRef struct {
	Time    time.Time `json:"time"`
	Summary string    `json:"summary"`
}

// Check says what makes a finding unfit to be shown (nil when it is fit):
// every finding printed or logged names a cause and a fix (a finding
// with neither, "cause: invalid" and an empty "fix:", once came out of
// `mntleak why` for a free device). `mntleak why` refuses to print one
// that fails; the tests over every golden (TestEveryGoldenFindingIsFit)
// and over the daemon's findings in cmd/mntleak's verdict tests fail on
// one.
func (f *Finding) Check() error {
	var wrong []string
	if _, err := f.Cause.MarshalText(); err != nil {
		wrong = append(wrong, "no cause")
	}
	if strings.TrimSpace(f.Fix) == "" {
		wrong = append(wrong, "no fix")
	}
	if len(wrong) == 0 {
		return nil
	}
	return fmt.Errorf("%s finding on %s: %s", f.Kind, f.Object.describe(), strings.Join(wrong, ", "))
}

// Incomplete says that events were lost while a finding's evidence formed:
// the leaking event, or a later one that would change the verdict, may be
// among them.
type Incomplete struct {
	Lost uint64    `json:"lost"`
	From time.Time `json:"from,omitzero"` // zero: since tracing started
	To   time.Time `json:"to"`
}

// Text is the note a finding's line carries for lost events.
func (in *Incomplete) Text() string {
	s := "evidence may be incomplete: " + strconv.FormatUint(in.Lost, 10) + " events lost"
	if !in.From.IsZero() && !in.From.Equal(in.To) {
		s += " between " + Clock(in.From) + " and " + Clock(in.To)
	} else {
		s += " by " + Clock(in.To)
	}
	return s
}
